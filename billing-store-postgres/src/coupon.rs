//! Coupons: `billing_model::coupon::CouponTx`.

use crate::support::*;
use billing_model::coupon::{Coupon, CouponFilter, CouponSort, Discount};
use billing_model::ids::{BranchId, CouponId};
use billing_model::list::{Direction, ListQuery, Page};
use billing_model::money::{self, Currency};
use billing_model::store::StoreResult;
use diesel::pg::Pg;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    coupons (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        name -> Text,
        is_percentage -> Bool,
        discount_value -> Int8,
        currency -> Nullable<Text>,
        is_active -> Bool,
        used_in_finalized_invoice -> Bool,
        redemptions -> Int8,
        is_deleted -> Bool,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

// --- coupons ---------------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = coupons, check_for_backend(diesel::pg::Pg))]
pub struct CouponRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: String,
    pub is_percentage: bool,
    pub discount_value: i64,
    pub currency: Option<String>,
    pub is_active: bool,
    pub used_in_finalized_invoice: bool,
    pub redemptions: i64,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

#[derive(Insertable)]
#[diesel(table_name = coupons, treat_none_as_default_value = false)]
pub struct NewCouponRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: &'a str,
    pub is_percentage: bool,
    pub discount_value: i64,
    pub currency: Option<&'static str>,
    pub is_active: bool,
    pub used_in_finalized_invoice: bool,
    pub redemptions: i64,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

/// Every stored column of a coupon but the id and the derived `redemptions`.
#[derive(AsChangeset)]
#[diesel(table_name = coupons, treat_none_as_null = true)]
pub struct CouponChangeset<'a> {
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: &'a str,
    pub is_percentage: bool,
    pub discount_value: i64,
    pub currency: Option<&'static str>,
    pub is_active: bool,
    pub used_in_finalized_invoice: bool,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl<'a> NewCouponRow<'a> {
    pub fn new(c: &'a Coupon) -> StoreResult<Self> {
        Ok(NewCouponRow {
            id: c.id.0,
            org_id: c.org_id.0,
            branch_id: c.branch_id.0,
            name: &c.name,
            is_percentage: c.discount.is_percentage(),
            discount_value: money::stored(c.discount.value())?,
            currency: c.discount.currency().map(Currency::code),
            is_active: c.is_active,
            used_in_finalized_invoice: c.used_in_finalized_invoice,
            redemptions: i64_of(c.redemptions),
            is_deleted: c.is_deleted,
            created_at: c.created_at,
            updated_at: c.updated_at,
        })
    }

    pub fn changeset(&self) -> CouponChangeset<'a> {
        CouponChangeset {
            org_id: self.org_id,
            branch_id: self.branch_id,
            name: self.name,
            is_percentage: self.is_percentage,
            discount_value: self.discount_value,
            currency: self.currency,
            is_active: self.is_active,
            used_in_finalized_invoice: self.used_in_finalized_invoice,
            is_deleted: self.is_deleted,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

impl CouponRow {
    pub fn into_domain(self) -> StoreResult<Coupon> {
        let currency = self.currency.as_deref().map(currency).transpose()?;
        let discount =
            Discount::from_stored(self.is_percentage, self.discount_value, currency).ok_or_else(|| unreadable("coupon currency", "NULL for a fixed amount"))?;
        Ok(Coupon {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            name: self.name,
            discount,
            is_active: self.is_active,
            used_in_finalized_invoice: self.used_in_finalized_invoice,
            redemptions: u64_of("coupon redemptions", self.redemptions)?,
            is_deleted: self.is_deleted,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

// --- coupons ---------------------------------------------------------------------------------

pub(crate) fn coupons_matching<'a>(branch: Uuid, q: &'a ListQuery<CouponSort>, f: &'a CouponFilter, coll: &'static str) -> coupons::BoxedQuery<'a, Pg> {
    use coupons::dsl as c;
    let mut query = c::coupons.filter(c::branch_id.eq(branch)).filter(not(c::is_deleted)).into_boxed();
    if let Some(term) = &q.search {
        query = query.filter(folded_like(c::name, contains_pattern(term), coll));
    }
    if let Some(active) = f.active {
        query = query.filter(c::is_active.eq(active));
    }
    if let Some(pct) = f.is_percentage {
        query = query.filter(c::is_percentage.eq(pct));
    }
    query
}

pub fn coupons_page(
    conn: &mut PgConnection,
    branch: Uuid,
    q: &ListQuery<CouponSort>,
    f: &CouponFilter,
    coll: &'static str,
) -> QueryResult<(Vec<CouponRow>, i64)> {
    use coupons::dsl as c;
    let total = coupons_matching(branch, q, f, coll).count().get_result::<i64>(conn)?;
    let query = coupons_matching(branch, q, f, coll).select(CouponRow::as_select());
    let query = match q.sort {
        CouponSort::CreatedAt => order!(query, q.direction, c::created_at, c::id),
        CouponSort::UpdatedAt => order!(query, q.direction, nulls c::updated_at, c::id),
        CouponSort::Name => order!(query, q.direction, c::name, c::id),
        CouponSort::DiscountValue => order!(query, q.direction, c::discount_value, c::id),
    };
    let (limit, offset) = page_bounds(q);
    let rows = query.limit(limit).offset(offset).load(conn)?;
    Ok((rows, total))
}

impl billing_model::coupon::CouponTx for PgTx<'_> {
    // --- coupons -----------------------------------------------------------------------------

    fn insert_coupon(&mut self, cp: &Coupon) -> StoreResult<()> {
        let row = NewCouponRow::new(cp)?;
        self.write(|c| diesel::insert_into(coupons::table).values(&row).execute(c)).map(drop)
    }

    fn coupon(&mut self, branch: BranchId, id: CouponId) -> StoreResult<Option<Coupon>> {
        use coupons::dsl as k;
        self.read(|c| {
            k::coupons
                .filter(k::id.eq(id.0))
                .filter(k::branch_id.eq(branch.0))
                .filter(not(k::is_deleted))
                .select(CouponRow::as_select())
                .first(c)
                .optional()
        })?
        .map(CouponRow::into_domain)
        .transpose()
    }

    fn update_coupon(&mut self, cp: &Coupon) -> StoreResult<()> {
        let row = NewCouponRow::new(cp)?;
        let changes = row.changeset();
        self.write(|c| diesel::update(coupons::table.find(cp.id.0)).set(&changes).execute(c)).map(drop)
    }

    fn list_coupons(&mut self, branch: BranchId, q: &ListQuery<CouponSort>, f: &CouponFilter) -> StoreResult<Page<Coupon>> {
        let coll = self.search_collation;
        let (rows, total) = self.read(|c| coupons_page(c, branch.0, q, f, coll))?;
        page(q.page, q.limit, rows, total, CouponRow::into_domain)
    }

    fn redeem_coupon(&mut self, coupon: CouponId) -> StoreResult<()> {
        use coupons::dsl as k;
        self.write(|c| {
            diesel::update(k::coupons.filter(k::id.eq(coupon.0)))
                .set(k::redemptions.eq(k::redemptions + 1))
                .execute(c)
        })
        .map(drop)
    }
}
