//! Payment links with their items: `billing_model::payment_link::PaymentLinkTx`.

use crate::priced_line::line_table;
use crate::support::*;
use billing_model::ids::*;
use billing_model::list::{Direction, ListQuery, Page};
use billing_model::money::Money;
use billing_model::payment_link::*;
use billing_model::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_model::product::RecurringInterval;
use diesel::pg::Pg;
use diesel::prelude::*;
use serde_json::Map;

diesel::table! {
    payment_links (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        user_id -> Uuid,
        short_id -> Text,
        name -> Text,
        description -> Nullable<Text>,
        currency -> Text,
        status -> Text,
        deactivate_message -> Nullable<Text>,
        consumer_id -> Nullable<Uuid>,
        contact_information_type -> Text,
        max_number_of_payments -> Nullable<Int8>,
        payments_count -> Int8,
        amount_collected -> Int8,
        valid_until -> Nullable<Timestamptz>,
        checkout -> Jsonb,
        custom_metadata -> Jsonb,
        payment_methods -> Jsonb,
        recurring_interval -> Nullable<Text>,
        recurring_interval_count -> Nullable<Int8>,
        coupon_ids -> Jsonb,
        coupons -> Jsonb,
        original_amount -> Int8,
        item_level_discounted_amount -> Int8,
        total_vat_amount -> Int8,
        total_price_excluding_vat -> Int8,
        amount -> Int8,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

line_table! {
    /// A link's items (see `crate::priced_line`), with the quantities a payer may choose and when
    /// each was last changed.
    payment_link_items (link_id) as LinkItems, rows LinkItemRow, own LinkItemOwn {
        allow_custom_quantity -> Bool: bool,
        min_quantity -> Nullable<Int8>: Option<i64>,
        max_quantity -> Nullable<Int8>: Option<i64>,
        updated_at -> Nullable<Timestamptz>: Option<Ts>,
    }
}

diesel::table! {
    payment_link_attempts (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        link_id -> Uuid,
        session_key -> Text,
        amount -> Int8,
        currency -> Text,
        created_at -> Timestamptz,
    }
}

diesel::allow_tables_to_appear_in_same_query!(payment_links, payment_link_items, payment_link_attempts);

#[derive(Queryable, Selectable, Insertable, Debug)]
#[diesel(table_name = payment_link_attempts)]
pub struct AttemptRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub link_id: Uuid,
    pub session_key: String,
    pub amount: i64,
    pub currency: String,
    pub created_at: Ts,
}

impl AttemptRow {
    fn new(a: &LinkAttempt) -> StoreResult<Self> {
        Ok(AttemptRow {
            id: a.id,
            org_id: a.org_id.0,
            branch_id: a.branch_id.0,
            link_id: a.link_id.0,
            session_key: a.session_key.clone(),
            amount: m(a.amount)?,
            currency: a.amount.currency().code().into(),
            created_at: a.created_at,
        })
    }

    fn into_domain(self) -> StoreResult<LinkAttempt> {
        let c = currency(&self.currency)?;
        Ok(LinkAttempt {
            id: self.id,
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            link_id: self.link_id.into(),
            session_key: self.session_key,
            amount: Money::from_stored(self.amount, c),
            created_at: self.created_at,
        })
    }
}

fn count_opt(what: &str, v: Option<i64>) -> StoreResult<Option<u32>> {
    v.map(|n| count_of(what, n)).transpose()
}

#[derive(Queryable, Selectable, Insertable, AsChangeset, Debug)]
#[diesel(table_name = payment_links, treat_none_as_null = true, treat_none_as_default_value = false)]
pub struct LinkRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub user_id: Uuid,
    pub short_id: String,
    pub name: String,
    pub description: Option<String>,
    pub currency: String,
    pub status: String,
    pub deactivate_message: Option<String>,
    pub consumer_id: Option<Uuid>,
    pub contact_information_type: String,
    pub max_number_of_payments: Option<i64>,
    pub payments_count: i64,
    pub amount_collected: i64,
    pub valid_until: Option<Ts>,
    pub checkout: Value,
    pub custom_metadata: Value,
    pub payment_methods: Value,
    pub recurring_interval: Option<String>,
    pub recurring_interval_count: Option<i64>,
    pub coupon_ids: Value,
    pub coupons: Value,
    pub original_amount: i64,
    pub item_level_discounted_amount: i64,
    pub total_vat_amount: i64,
    pub total_price_excluding_vat: i64,
    pub amount: i64,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl LinkRow {
    pub fn new(l: &PaymentLink) -> StoreResult<Self> {
        Ok(LinkRow {
            id: l.id.0,
            org_id: l.org_id.0,
            branch_id: l.branch_id.0,
            user_id: l.user_id.0,
            short_id: l.short_id.clone(),
            name: l.name.clone(),
            description: l.description.clone(),
            currency: l.currency.code().into(),
            status: l.status.as_str().into(),
            deactivate_message: l.deactivate_message.clone(),
            consumer_id: l.consumer_id.map(|c| c.0),
            contact_information_type: l.contact_information_type.as_str().into(),
            max_number_of_payments: l.max_number_of_payments.map(i64::from),
            payments_count: i64::from(l.payments_count),
            amount_collected: m(l.amount_collected)?,
            valid_until: l.valid_until,
            checkout: to_json("checkout", &l.checkout),
            custom_metadata: Value::Object(l.custom_metadata.clone()),
            payment_methods: to_json("payment_methods", &l.payment_methods),
            recurring_interval: l.recurring_interval.map(|x| x.as_str().into()),
            recurring_interval_count: l.recurring_interval_count.map(i64::from),
            coupon_ids: to_json("coupon_ids", &l.coupon_ids),
            coupons: lines_to_stored(&l.coupons)?,
            original_amount: m(l.original_amount)?,
            item_level_discounted_amount: m(l.item_level_discounted_amount)?,
            total_vat_amount: m(l.total_vat_amount)?,
            total_price_excluding_vat: m(l.total_price_excluding_vat)?,
            amount: m(l.amount)?,
            created_at: l.created_at,
            updated_at: l.updated_at,
        })
    }

    pub fn into_domain(self, items: Vec<PaymentLinkItem>) -> StoreResult<PaymentLink> {
        let c = currency(&self.currency)?;
        let mo = |x: i64| Money::from_stored(x, c);
        Ok(PaymentLink {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            user_id: self.user_id.into(),
            short_id: self.short_id,
            name: self.name,
            description: self.description,
            currency: c,
            status: parsed("payment link status", &self.status, PaymentLinkStatus::parse)?,
            deactivate_message: self.deactivate_message,
            consumer_id: self.consumer_id.map(Into::into),
            contact_information_type: parsed("contact information type", &self.contact_information_type, ContactInformationType::parse)?,
            max_number_of_payments: count_opt("max_number_of_payments", self.max_number_of_payments)?,
            payments_count: count_of("payments_count", self.payments_count)?,
            amount_collected: mo(self.amount_collected),
            valid_until: self.valid_until,
            checkout: from_json("checkout", self.checkout)?,
            custom_metadata: json_object("custom_metadata", self.custom_metadata)?,
            payment_methods: from_json("payment methods", self.payment_methods)?,
            recurring_interval: self
                .recurring_interval
                .as_deref()
                .map(|s| parsed("recurring interval", s, RecurringInterval::parse))
                .transpose()?,
            recurring_interval_count: count_opt("recurring_interval_count", self.recurring_interval_count)?,
            coupon_ids: from_json("coupon ids", self.coupon_ids)?,
            coupons: lines_from_stored(&self.coupons, c),
            original_amount: mo(self.original_amount),
            item_level_discounted_amount: mo(self.item_level_discounted_amount),
            total_vat_amount: mo(self.total_vat_amount),
            total_price_excluding_vat: mo(self.total_price_excluding_vat),
            amount: mo(self.amount),
            items,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

fn links_matching<'a>(branch: Uuid, q: &'a ListQuery<PaymentLinkSort>, f: &'a PaymentLinkFilter, coll: &'static str) -> payment_links::BoxedQuery<'a, Pg> {
    use payment_links::dsl as l;
    let mut query = l::payment_links.filter(l::branch_id.eq(branch)).into_boxed();
    if let Some(term) = &q.search {
        let pat = contains_pattern(term);
        query = query.filter(folded_like(l::name, pat.clone(), coll).or(folded_like(l::description, pat, coll)));
    }
    if !f.statuses.is_empty() {
        query = query.filter(l::status.eq_any(f.statuses.iter().map(|s| s.as_str().to_string()).collect::<Vec<_>>()));
    }
    if let Some(x) = f.from_date {
        query = query.filter(l::created_at.ge(x));
    }
    if let Some(x) = f.to_date {
        query = query.filter(l::created_at.le(x));
    }
    if let Some(x) = f.from_price {
        query = query.filter(l::amount.ge(billing_model::money::stored_bound(x, true)));
    }
    if let Some(x) = f.to_price {
        query = query.filter(l::amount.le(billing_model::money::stored_bound(x, false)));
    }
    if let Some(x) = f.consumer_id {
        query = query.filter(l::consumer_id.eq(x.0));
    }
    if !f.product_ids.is_empty() {
        let ids: Vec<Uuid> = f.product_ids.iter().map(|p| p.0).collect();
        query = query.filter(exists(
            payment_link_items::table
                .filter(payment_link_items::link_id.eq(l::id))
                .filter(payment_link_items::product_id.eq_any(ids)),
        ));
    }
    query
}

impl PgTx<'_> {
    fn link_items_of(&mut self, rows: Vec<LinkRow>) -> StoreResult<Vec<PaymentLink>> {
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        self.flush()?;
        let mut lines = self.lines_of::<LinkItems>(&ids)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let c = currency(&r.currency)?;
            let items = lines
                .of(r.id, c)?
                .into_iter()
                .map(|(line, own)| {
                    Ok(PaymentLinkItem {
                        id: line.id.0.into(),
                        line,
                        allow_custom_quantity: own.allow_custom_quantity,
                        min_quantity: count_opt("min_quantity", own.min_quantity)?,
                        max_quantity: count_opt("max_quantity", own.max_quantity)?,
                        updated_at: own.updated_at,
                    })
                })
                .collect::<StoreResult<Vec<_>>>()?;
            out.push(r.into_domain(items)?);
        }
        Ok(out)
    }

    fn write_link_items(&mut self, l: &PaymentLink) -> StoreResult<()> {
        let lines = l.items.iter().map(|it| {
            let own = LinkItemOwn {
                allow_custom_quantity: it.allow_custom_quantity,
                min_quantity: it.min_quantity.map(i64::from),
                max_quantity: it.max_quantity.map(i64::from),
                updated_at: it.updated_at,
            };
            (it.id.0, &it.line, own)
        });
        self.write_lines::<LinkItems>(l.id.0, true, lines)
    }

    fn one_link(&mut self, row: Option<LinkRow>) -> StoreResult<Option<PaymentLink>> {
        match row {
            Some(r) => Ok(self.link_items_of(vec![r])?.pop()),
            None => Ok(None),
        }
    }
}

impl billing_model::payment_link::PaymentLinkTx for PgTx<'_> {
    fn insert_payment_link(&mut self, l: &PaymentLink) -> StoreResult<()> {
        let row = LinkRow::new(l)?;
        self.write(|c| diesel::insert_into(payment_links::table).values(&row).execute(c))?;
        self.write_link_items(l)
    }

    fn payment_link(&mut self, branch: BranchId, id: PaymentLinkId) -> StoreResult<Option<PaymentLink>> {
        use payment_links::dsl as l;
        let row = self.read(|c| {
            l::payment_links
                .filter(l::id.eq(id.0))
                .filter(l::branch_id.eq(branch.0))
                .select(LinkRow::as_select())
                .first(c)
                .optional()
        })?;
        self.one_link(row)
    }

    fn payment_link_by_short_id(&mut self, short_id: &str) -> StoreResult<Option<PaymentLink>> {
        use payment_links::dsl as l;
        let row = self.read(|c| {
            l::payment_links
                .filter(l::short_id.eq(short_id))
                .select(LinkRow::as_select())
                .first(c)
                .optional()
        })?;
        self.one_link(row)
    }

    fn update_payment_link(&mut self, link: &PaymentLink) -> StoreResult<()> {
        self.update_payment_link_row(link)?;
        self.write_link_items(link)
    }

    fn update_payment_link_row(&mut self, link: &PaymentLink) -> StoreResult<()> {
        use payment_links::dsl as l;
        let row = LinkRow::new(link)?;
        let n = self.write(|c| diesel::update(l::payment_links.filter(l::id.eq(row.id))).set(&row).execute(c))?;
        if n == 0 {
            return Err(StoreError::NotFound("payment link".into()));
        }
        Ok(())
    }

    fn payment_link_metadata(&mut self, branch: BranchId, id: PaymentLinkId) -> StoreResult<Option<Map<String, Value>>> {
        use payment_links::dsl as l;
        let found: Option<Value> = self.read(|c| {
            l::payment_links
                .filter(l::id.eq(id.0))
                .filter(l::branch_id.eq(branch.0))
                .select(l::custom_metadata)
                .first(c)
                .optional()
        })?;
        Ok(found.map(|v| match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }))
    }

    fn add_payment_link_collected(&mut self, branch: BranchId, id: PaymentLinkId, amount: Money) -> StoreResult<()> {
        use payment_links::dsl as l;
        let add = m(amount)?;
        let n = self.write(|c| {
            diesel::update(l::payment_links.filter(l::id.eq(id.0)).filter(l::branch_id.eq(branch.0)))
                .set(l::amount_collected.eq(l::amount_collected + add))
                .execute(c)
        })?;
        if n == 0 {
            return Err(StoreError::NotFound("payment link".into()));
        }
        Ok(())
    }

    fn link_products(&mut self, branch: BranchId, ids: &[ProductId]) -> StoreResult<Vec<billing_model::product::Product>> {
        use crate::product::{prices_of, products::dsl as pr, ProductRow};
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let wanted: Vec<uuid::Uuid> = ids.iter().map(|x| x.0).collect();
        let rows = self.read(|c| {
            pr::products
                .filter(pr::branch_id.eq(branch.0))
                .filter(pr::id.eq_any(&wanted))
                .filter(diesel::dsl::not(pr::is_deleted))
                .select(ProductRow::as_select())
                .load(c)
        })?;
        if rows.is_empty() {
            return Ok(vec![]);
        }
        let found: Vec<uuid::Uuid> = rows.iter().map(|r| r.id).collect();
        let prices = self.read(|c| prices_of(c, &found))?;
        let mut by_product: std::collections::HashMap<uuid::Uuid, Vec<billing_model::product::ProductPrice>> = std::collections::HashMap::new();
        for p in prices {
            by_product.entry(p.product_id).or_default().push(p.into_domain()?);
        }
        rows.into_iter()
            .map(|r| {
                let ps = by_product.remove(&r.id).unwrap_or_default();
                r.into_domain(ps)
            })
            .collect()
    }

    fn link_coupons(&mut self, branch: BranchId, ids: &[CouponId]) -> StoreResult<Vec<billing_model::coupon::Coupon>> {
        use crate::coupon::{coupons::dsl as k, CouponRow};
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let wanted: Vec<uuid::Uuid> = ids.iter().map(|x| x.0).collect();
        let rows = self.read(|c| {
            k::coupons
                .filter(k::branch_id.eq(branch.0))
                .filter(k::id.eq_any(&wanted))
                .filter(diesel::dsl::not(k::is_deleted))
                .select(CouponRow::as_select())
                .load(c)
        })?;
        rows.into_iter().map(CouponRow::into_domain).collect()
    }

    fn list_payment_links(&mut self, branch: BranchId, q: &ListQuery<PaymentLinkSort>, f: &PaymentLinkFilter) -> StoreResult<Page<PaymentLink>> {
        use payment_links::dsl as l;
        let coll = self.search_collation;
        let (rows, total) = self.read(|c| {
            let total = links_matching(branch.0, q, f, coll).count().get_result::<i64>(c)?;
            let query = links_matching(branch.0, q, f, coll).select(LinkRow::as_select());
            let query = match q.sort {
                PaymentLinkSort::CreatedAt => order!(query, q.direction, l::created_at, l::id),
                PaymentLinkSort::UpdatedAt => order!(query, q.direction, nulls l::updated_at, l::id),
                PaymentLinkSort::Name => order!(query, q.direction, l::name, l::id),
                PaymentLinkSort::Amount => order!(query, q.direction, l::amount, l::id),
            };
            let (limit, offset) = page_bounds(q);
            let rows: Vec<LinkRow> = query.limit(limit).offset(offset).load(c)?;
            Ok((rows, total))
        })?;
        let items = self.link_items_of(rows)?;
        Ok(page_of(q.page, q.limit, items, total))
    }

    fn consumer_has_payment_links_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[PaymentLinkStatus]) -> StoreResult<bool> {
        use payment_links::dsl as l;
        let names: Vec<String> = statuses.iter().map(|s| s.as_str().to_string()).collect();
        let n: i64 = self.read(|c| {
            l::payment_links
                .filter(l::branch_id.eq(branch.0))
                .filter(l::consumer_id.eq(consumer.0))
                .filter(l::status.eq_any(&names))
                .count()
                .get_result(c)
        })?;
        Ok(n > 0)
    }

    fn insert_link_attempt(&mut self, a: &LinkAttempt) -> StoreResult<()> {
        let row = AttemptRow::new(a)?;
        self.write(|c| diesel::insert_into(payment_link_attempts::table).values(&row).execute(c))
            .map(drop)
    }

    fn link_attempt(&mut self, id: Uuid) -> StoreResult<Option<LinkAttempt>> {
        use payment_link_attempts::dsl as a;
        let row = self.read(|c| a::payment_link_attempts.find(id).select(AttemptRow::as_select()).first(c).optional())?;
        row.map(AttemptRow::into_domain).transpose()
    }

    fn delete_link_attempt(&mut self, id: Uuid) -> StoreResult<bool> {
        use payment_link_attempts::dsl as a;
        Ok(self.write(|c| diesel::delete(a::payment_link_attempts.find(id)).execute(c))? > 0)
    }

    fn count_link_attempts(&mut self, link: PaymentLinkId) -> StoreResult<u64> {
        use payment_link_attempts::dsl as a;
        let n: i64 = self.read(|c| a::payment_link_attempts.filter(a::link_id.eq(link.0)).count().get_result(c))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
