//! [`PgTx`]: billing-core's [`Tx`] on one PostgreSQL connection inside an open transaction.

use crate::error::{is_retryable, is_statement_level, store_error};
use crate::lists;
use crate::rows::*;
use crate::schema::*;
use billing_core::auth::ApiKey;
use billing_core::branch::Branch;
use billing_core::consumer::{Consumer, ConsumerFilter, ConsumerSort};
use billing_core::coupon::{Coupon, CouponFilter, CouponSort};
use billing_core::error::StoreError;
use billing_core::event::Event;
use billing_core::ids::{BranchId, ConsumerId, CouponId, EventId, OrgId, ProductId, UserId};
use billing_core::list::{ListQuery, Page};
use billing_core::money::Currency;
use billing_core::notification::Notification;
use billing_core::org::{Invitation, Organization, Role, User};
use billing_core::product::{Product, ProductFilter, ProductPrice, ProductSort};
use billing_core::store::StoreResult;
use diesel::dsl::not;
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::upsert::excluded;
use std::collections::HashMap;
use uuid::Uuid;

/// What the statements of one transaction attempt ran into, read by the store after the
/// closure returns.
#[derive(Debug, Default)]
pub(crate) struct TxState {
    /// A statement hit a serialization failure or deadlock: the attempt must be retried,
    /// whatever the closure made of the error.
    pub conflict: bool,
    /// A statement failed outside a savepoint, so PostgreSQL has aborted the transaction:
    /// committing it would silently roll back, so the store reports this instead.
    pub aborted: Option<String>,
}

pub struct PgTx<'c> {
    pub(crate) conn: &'c mut PgConnection,
    /// The collation case-insensitive search folds case with.
    search_collation: &'static str,
    pub(crate) state: TxState,
}

impl<'c> PgTx<'c> {
    pub(crate) fn new(conn: &'c mut PgConnection, search_collation: &'static str) -> Self {
        PgTx {
            conn,
            search_collation,
            state: TxState::default(),
        }
    }

    /// Runs reading statements. A failure aborts the transaction (see [`TxState::aborted`]).
    pub(crate) fn read<T>(&mut self, f: impl FnOnce(&mut PgConnection) -> QueryResult<T>) -> StoreResult<T> {
        f(self.conn).map_err(|e| self.failed(e, false))
    }

    /// Runs the statements of one write in a savepoint, so that a constraint violation undoes
    /// the whole write and leaves the transaction usable (as a failed statement does in SQLite):
    /// the caller gets `UniqueViolation` and may carry on.
    pub(crate) fn write<T>(&mut self, f: impl FnOnce(&mut PgConnection) -> QueryResult<T>) -> StoreResult<T> {
        self.conn.transaction(f).map_err(|e| {
            let recovered = is_statement_level(&e);
            self.failed(e, recovered)
        })
    }

    /// Runs a write that cannot fail on a constraint (the due-work queue's claims, lease checks
    /// and updates of rows by id with no unique column changed): no savepoint, so two round
    /// trips fewer than [`Self::write`]; a failure aborts the transaction, like a read's.
    pub(crate) fn change<T>(&mut self, f: impl FnOnce(&mut PgConnection) -> QueryResult<T>) -> StoreResult<T> {
        f(self.conn).map_err(|e| self.failed(e, false))
    }

    fn failed(&mut self, e: DieselError, recovered: bool) -> StoreError {
        if is_retryable(&e) {
            self.state.conflict = true;
        }
        if !recovered && self.state.aborted.is_none() {
            self.state.aborted = Some(e.to_string());
        }
        store_error(e)
    }

    fn product_prices(&mut self, ids: &[Uuid]) -> StoreResult<HashMap<Uuid, Vec<ProductPrice>>> {
        let rows = self.read(|c| lists::prices_of(c, ids))?;
        let mut by_product: HashMap<Uuid, Vec<ProductPrice>> = HashMap::new();
        for r in rows {
            by_product.entry(r.product_id).or_default().push(r.into_domain()?);
        }
        Ok(by_product)
    }

    fn products_with_prices(&mut self, rows: Vec<ProductRow>) -> StoreResult<Vec<Product>> {
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let mut prices = if ids.is_empty() { HashMap::new() } else { self.product_prices(&ids)? };
        rows.into_iter()
            .map(|r| {
                let ps = prices.remove(&r.id).unwrap_or_default();
                r.into_domain(ps)
            })
            .collect()
    }

    /// The product's price rows, deactivated ones first: the partial unique index on active
    /// (product, currency) is checked row by row, and a currency's new active price may replace
    /// an old one in the same write.
    fn price_rows(p: &Product) -> StoreResult<Vec<NewPriceRow>> {
        let mut rows = p.prices.iter().map(NewPriceRow::new).collect::<StoreResult<Vec<_>>>()?;
        rows.sort_by_key(|r| r.is_active);
        Ok(rows)
    }

    /// Upserts price rows by id.
    fn save_prices(conn: &mut PgConnection, rows: &[NewPriceRow]) -> QueryResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        use product_prices::dsl as pp;
        diesel::insert_into(pp::product_prices)
            .values(rows)
            .on_conflict(pp::id)
            .do_update()
            .set((
                pp::product_id.eq(excluded(pp::product_id)),
                pp::currency.eq(excluded(pp::currency)),
                pp::amount.eq(excluded(pp::amount)),
                pp::vat_mode.eq(excluded(pp::vat_mode)),
                pp::is_active.eq(excluded(pp::is_active)),
                pp::created_at.eq(excluded(pp::created_at)),
                pp::updated_at.eq(excluded(pp::updated_at)),
            ))
            .execute(conn)?;
        Ok(())
    }
}

/// The number of users assigned to the branch of the outer query's row.
type UserCount = diesel::dsl::SingleValue<
    diesel::dsl::Select<diesel::dsl::Filter<user_branches::table, diesel::dsl::Eq<user_branches::branch_id, branches::id>>, diesel::dsl::CountStar>,
>;

/// `(row, user_count)` of a branch, in one query.
fn branch_select() -> (diesel::dsl::AsSelect<BranchRow, diesel::pg::Pg>, UserCount) {
    (
        BranchRow::as_select(),
        user_branches::table.filter(user_branches::branch_id.eq(branches::id)).count().single_value(),
    )
}

fn branch_of((row, count): (BranchRow, Option<i64>)) -> Branch {
    row.into_domain(count.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
}

fn page<R, T>(q_page: u32, limit: u32, rows: Vec<R>, total: i64, f: impl FnMut(R) -> StoreResult<T>) -> StoreResult<Page<T>> {
    let items = rows.into_iter().map(f).collect::<StoreResult<Vec<T>>>()?;
    Ok(Page {
        items,
        total: u64::try_from(total).unwrap_or(0),
        page: q_page,
        limit,
    })
}

impl billing_core::org::OrgTx for PgTx<'_> {
    // --- organizations, users, keys ----------------------------------------------------------

    fn insert_org(&mut self, org: &Organization) -> StoreResult<()> {
        let row = NewOrgRow::new(org);
        self.write(|c| diesel::insert_into(organizations::table).values(&row).execute(c)).map(drop)
    }

    fn org(&mut self, id: OrgId) -> StoreResult<Option<Organization>> {
        self.read(|c| organizations::table.find(id.0).select(OrgRow::as_select()).first(c).optional())?
            .map(OrgRow::into_domain)
            .transpose()
    }

    fn update_org(&mut self, org: &Organization) -> StoreResult<()> {
        let row = NewOrgRow::new(org);
        self.change(|c| diesel::update(organizations::table.find(org.id.0)).set(&row).execute(c))
            .map(drop)
    }

    fn list_orgs(&mut self) -> StoreResult<Vec<Organization>> {
        use organizations::dsl as o;
        let rows = self.read(|c| o::organizations.order_by((o::created_at, o::id)).select(OrgRow::as_select()).load(c))?;
        rows.into_iter().map(OrgRow::into_domain).collect()
    }

    fn insert_user(&mut self, user: &User) -> StoreResult<()> {
        let row = NewUserRow::new(user);
        let assignments: Vec<NewUserBranchRow> = user
            .branch_ids
            .iter()
            .enumerate()
            .map(|(i, b)| NewUserBranchRow {
                user_id: user.id.0,
                branch_id: b.0,
                position: i32::try_from(i).unwrap_or(i32::MAX),
            })
            .collect();
        self.write(|c| {
            diesel::insert_into(users::table).values(&row).execute(c)?;
            if !assignments.is_empty() {
                diesel::insert_into(user_branches::table).values(&assignments).execute(c)?;
            }
            Ok(())
        })
    }

    fn user(&mut self, org: OrgId, id: UserId) -> StoreResult<Option<User>> {
        use users::dsl as u;
        let Some(row) = self.read(|c| {
            u::users
                .filter(u::id.eq(id.0))
                .filter(u::org_id.eq(org.0))
                .select(UserRow::as_select())
                .first(c)
                .optional()
        })?
        else {
            return Ok(None);
        };
        let branch_ids = self.read(|c| {
            user_branches::table
                .filter(user_branches::user_id.eq(id.0))
                .order_by(user_branches::position)
                .select(user_branches::branch_id)
                .load::<Uuid>(c)
        })?;
        row.into_domain(branch_ids).map(Some)
    }

    fn first_org_admin(&mut self, org: OrgId) -> StoreResult<Option<User>> {
        use users::dsl as u;
        let id = self.read(|c| {
            u::users
                .filter(u::org_id.eq(org.0))
                .filter(u::role.eq(Role::OrganizationAdmin.as_str()))
                .order_by((u::created_at, u::id))
                .select(u::id)
                .first::<Uuid>(c)
                .optional()
        })?;
        match id {
            Some(id) => self.user(org, id.into()),
            None => Ok(None),
        }
    }

    // --- invitations and notifications -------------------------------------------------------

    fn insert_invitation(&mut self, i: &Invitation) -> StoreResult<()> {
        let row = NewInvitationRow::new(i);
        self.write(|c| diesel::insert_into(invitations::table).values(&row).execute(c)).map(drop)
    }
}

impl billing_core::auth::ApiKeyTx for PgTx<'_> {
    fn insert_api_key(&mut self, key: &ApiKey) -> StoreResult<()> {
        let row = NewApiKeyRow::new(key);
        self.write(|c| diesel::insert_into(api_keys::table).values(&row).execute(c)).map(drop)
    }

    fn api_key_by_key(&mut self, key: &str) -> StoreResult<Option<ApiKey>> {
        Ok(self
            .read(|c| api_keys::table.filter(api_keys::key.eq(key)).select(ApiKeyRow::as_select()).first(c).optional())?
            .map(ApiKeyRow::into_domain))
    }

    fn count_api_keys_defaulting_to(&mut self, branch: BranchId) -> StoreResult<u64> {
        use api_keys::dsl as k;
        let n = self.read(|c| {
            k::api_keys
                .filter(k::default_branch_id.eq(branch.0))
                .filter(k::revoked_at.is_null())
                .count()
                .get_result::<i64>(c)
        })?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

impl billing_core::branch::BranchTx for PgTx<'_> {
    // --- branches ----------------------------------------------------------------------------

    fn insert_branch(&mut self, b: &Branch) -> StoreResult<()> {
        let row = NewBranchRow::new(b);
        self.write(|c| diesel::insert_into(branches::table).values(&row).execute(c)).map(drop)
    }

    fn branch(&mut self, org: OrgId, id: BranchId) -> StoreResult<Option<Branch>> {
        use branches::dsl as b;
        let row = self.read(|c| {
            b::branches
                .filter(b::id.eq(id.0))
                .filter(b::org_id.eq(org.0))
                .filter(b::deleted_at.is_null())
                .select(branch_select())
                .first(c)
                .optional()
        })?;
        Ok(row.map(branch_of))
    }

    fn branch_by_name(&mut self, org: OrgId, key: &str) -> StoreResult<Option<Branch>> {
        use branches::dsl as b;
        let row = self.read(|c| {
            b::branches
                .filter(b::org_id.eq(org.0))
                .filter(b::name_key.eq(key))
                .filter(b::deleted_at.is_null())
                .select(branch_select())
                .first(c)
                .optional()
        })?;
        Ok(row.map(branch_of))
    }

    fn list_branches(&mut self, org: OrgId) -> StoreResult<Vec<Branch>> {
        use branches::dsl as b;
        let rows = self.read(|c| {
            b::branches
                .filter(b::org_id.eq(org.0))
                .filter(b::deleted_at.is_null())
                .order_by((b::created_at, b::id))
                .select(branch_select())
                .load(c)
        })?;
        Ok(rows.into_iter().map(branch_of).collect())
    }

    fn update_branch(&mut self, b: &Branch) -> StoreResult<()> {
        let row = NewBranchRow::new(b);
        self.write(|c| diesel::update(branches::table.find(b.id.0)).set(&row).execute(c)).map(drop)
    }
}

impl billing_core::notification::NotificationTx for PgTx<'_> {
    fn insert_notification(&mut self, n: &Notification) -> StoreResult<()> {
        let row = NewNotificationRow::new(n);
        self.write(|c| diesel::insert_into(notifications::table).values(&row).execute(c)).map(drop)
    }

    fn list_notifications(&mut self, org: OrgId) -> StoreResult<Vec<Notification>> {
        use notifications::dsl as n;
        let rows = self.read(|c| {
            n::notifications
                .filter(n::org_id.eq(org.0))
                .order_by((n::created_at, n::id))
                .select(NotificationRow::as_select())
                .load(c)
        })?;
        rows.into_iter().map(NotificationRow::into_domain).collect()
    }
}

impl billing_core::consumer::ConsumerTx for PgTx<'_> {
    // --- consumers ---------------------------------------------------------------------------

    fn insert_consumer(&mut self, cons: &Consumer) -> StoreResult<()> {
        let row = NewConsumerRow::new(cons);
        self.write(|c| diesel::insert_into(consumers::table).values(&row).execute(c)).map(drop)
    }

    fn consumer(&mut self, branch: BranchId, id: ConsumerId) -> StoreResult<Option<Consumer>> {
        use consumers::dsl as k;
        self.read(|c| {
            k::consumers
                .filter(k::id.eq(id.0))
                .filter(k::branch_id.eq(branch.0))
                .select(ConsumerRow::as_select())
                .first(c)
                .optional()
        })?
        .map(ConsumerRow::into_domain)
        .transpose()
    }

    fn update_consumer(&mut self, cons: &Consumer) -> StoreResult<()> {
        let row = NewConsumerRow::new(cons);
        self.write(|c| diesel::update(consumers::table.find(cons.id.0)).set(&row).execute(c)).map(drop)
    }

    fn consumer_conflict(&mut self, branch: BranchId, phone: Option<&str>, email_lower: Option<&str>, except: ConsumerId) -> StoreResult<Option<Consumer>> {
        use consumers::dsl as k;
        // One lookup per partial unique index (consumers_branch_phone_key, _email_key), never
        // `phone = … OR email = …`: an OR walks the branch's rows and, under SERIALIZABLE, takes
        // predicate locks on all of them, so every concurrent insert in the branch would
        // conflict with this check.
        if let Some(p) = phone {
            let row = self.read(|c| {
                k::consumers
                    .filter(k::branch_id.eq(branch.0))
                    .filter(k::phone_number.eq(p))
                    .filter(not(k::is_deleted))
                    .filter(k::id.ne(except.0))
                    .select(ConsumerRow::as_select())
                    .first(c)
                    .optional()
            })?;
            if let Some(r) = row {
                return r.into_domain().map(Some);
            }
        }
        if let Some(e) = email_lower {
            let row = self.read(|c| {
                k::consumers
                    .filter(k::branch_id.eq(branch.0))
                    .filter(k::email_lower.eq(e))
                    .filter(not(k::is_deleted))
                    .filter(k::id.ne(except.0))
                    .select(ConsumerRow::as_select())
                    .first(c)
                    .optional()
            })?;
            return row.map(ConsumerRow::into_domain).transpose();
        }
        Ok(None)
    }

    fn list_consumers(&mut self, branch: BranchId, q: &ListQuery<ConsumerSort>, f: &ConsumerFilter) -> StoreResult<Page<Consumer>> {
        let coll = self.search_collation;
        let (rows, total) = self.read(|c| lists::consumers_page(c, branch.0, q, f, coll))?;
        page(q.page, q.limit, rows, total, ConsumerRow::into_domain)
    }
}

impl billing_core::product::ProductTx for PgTx<'_> {
    // --- products ----------------------------------------------------------------------------

    fn insert_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()> {
        let row = NewProductRow::new(p, default_currency)?;
        let prices = Self::price_rows(p)?;
        self.write(|c| {
            diesel::insert_into(products::table).values(&row).execute(c)?;
            Self::save_prices(c, &prices)
        })
    }

    fn product(&mut self, branch: BranchId, id: ProductId) -> StoreResult<Option<Product>> {
        use products::dsl as pr;
        let Some(row) = self.read(|c| {
            pr::products
                .filter(pr::id.eq(id.0))
                .filter(pr::branch_id.eq(branch.0))
                .filter(not(pr::is_deleted))
                .select(ProductRow::as_select())
                .first(c)
                .optional()
        })?
        else {
            return Ok(None);
        };
        Ok(self.products_with_prices(vec![row])?.pop())
    }

    fn update_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()> {
        let row = NewProductRow::new(p, default_currency)?;
        let prices = Self::price_rows(p)?;
        self.write(|c| {
            diesel::update(products::table.find(p.id.0)).set(&row).execute(c)?;
            Self::save_prices(c, &prices)
        })
    }

    fn list_products(&mut self, branch: BranchId, q: &ListQuery<ProductSort>, f: &ProductFilter) -> StoreResult<Page<Product>> {
        let coll = self.search_collation;
        let (rows, total) = self.read(|c| lists::products_page(c, branch.0, q, f, coll))?;
        let items = self.products_with_prices(rows)?;
        page(q.page, q.limit, items, total, Ok)
    }
}

impl billing_core::coupon::CouponTx for PgTx<'_> {
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
        let (rows, total) = self.read(|c| lists::coupons_page(c, branch.0, q, f, coll))?;
        page(q.page, q.limit, rows, total, CouponRow::into_domain)
    }

    fn redeem_coupon(&mut self, coupon: CouponId) -> StoreResult<()> {
        use crate::schema::coupons::dsl as k;
        self.write(|c| {
            diesel::update(k::coupons.filter(k::id.eq(coupon.0)))
                .set(k::redemptions.eq(k::redemptions + 1))
                .execute(c)
        })
        .map(drop)
    }
}

impl billing_core::event::EventTx for PgTx<'_> {
    // --- events ------------------------------------------------------------------------------

    fn insert_event(&mut self, e: &Event) -> StoreResult<()> {
        let row = NewEventRow::new(e);
        self.write(|c| diesel::insert_into(events::table).values(&row).execute(c)).map(drop)
    }

    fn list_events(&mut self, org: OrgId) -> StoreResult<Vec<Event>> {
        use events::dsl as ev;
        let rows = self.read(|c| ev::events.filter(ev::org_id.eq(org.0)).order_by(ev::seq).select(EventRow::as_select()).load(c))?;
        rows.into_iter().map(EventRow::into_domain).collect()
    }

    fn event_by_id(&mut self, id: EventId) -> StoreResult<Option<Event>> {
        use events::dsl as ev;
        let row = self.read(|c| ev::events.filter(ev::id.eq(id.0)).select(EventRow::as_select()).first(c).optional())?;
        row.map(EventRow::into_domain).transpose()
    }
}
