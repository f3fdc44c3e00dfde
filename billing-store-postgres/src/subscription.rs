//! Subscriptions with their items and billed cycles: `billing_model::subscription::SubscriptionTx`.

use crate::priced_line::line_table;
use crate::support::*;
use billing_model::ids::*;
use billing_model::list::{Direction, ListQuery, Page};
use billing_model::money::Money;
use billing_model::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_model::product::RecurringInterval;
use billing_model::subscription::*;
use diesel::dsl::sql;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};

diesel::table! {
    subscriptions (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        user_id -> Uuid,
        consumer_id -> Uuid,
        description -> Nullable<Text>,
        currency -> Text,
        status -> Text,
        recurring_interval -> Text,
        recurring_interval_count -> Int8,
        period_anchor -> Timestamptz,
        current_cycle_number -> Int8,
        current_period_start -> Timestamptz,
        current_period_end -> Timestamptz,
        cancel_at_period_end -> Bool,
        until_cycle_number -> Nullable<Int8>,
        started_at -> Nullable<Timestamptz>,
        ended_at -> Nullable<Timestamptz>,
        latest_invoice_id -> Nullable<Uuid>,
        latest_invoice_paid -> Bool,
        renewal_failures -> Int8,
        options -> Jsonb,
        payment_methods -> Jsonb,
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
    /// A subscription's items (see `crate::priced_line`), with when each was last changed.
    subscription_items (subscription_id) as SubscriptionItems, rows SubItemRow, own SubItemOwn {
        updated_at -> Nullable<Timestamptz>: Option<Ts>,
    }
}

diesel::table! {
    subscription_cycles (subscription_id, cycle_number) {
        subscription_id -> Uuid,
        cycle_number -> Int8,
        invoice_id -> Uuid,
    }
}

diesel::table! {
    subscription_plan_changes (id) {
        id -> Uuid,
        subscription_id -> Uuid,
        status -> Text,
        currency -> Text,
        effective_cycle -> Int8,
        effective_at -> Timestamptz,
        body -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::allow_tables_to_appear_in_same_query!(subscriptions, subscription_items, subscription_cycles, subscription_plan_changes);

fn count_of(what: &str, v: i64) -> StoreResult<u32> {
    u32::try_from(v).map_err(|_| unreadable(what, v))
}

#[derive(Queryable, Selectable, Insertable, AsChangeset, Debug, serde::Serialize)]
#[diesel(table_name = subscriptions, treat_none_as_null = true, treat_none_as_default_value = false)]
pub struct SubRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub user_id: Uuid,
    pub consumer_id: Uuid,
    pub description: Option<String>,
    pub currency: String,
    pub status: String,
    pub recurring_interval: String,
    pub recurring_interval_count: i64,
    pub period_anchor: Ts,
    pub current_cycle_number: i64,
    pub current_period_start: Ts,
    pub current_period_end: Ts,
    pub cancel_at_period_end: bool,
    pub until_cycle_number: Option<i64>,
    pub started_at: Option<Ts>,
    pub ended_at: Option<Ts>,
    pub latest_invoice_id: Option<Uuid>,
    pub latest_invoice_paid: bool,
    pub renewal_failures: i64,
    pub options: Value,
    pub payment_methods: Value,
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

impl SubRow {
    pub(crate) fn new(v: &Subscription) -> StoreResult<Self> {
        Ok(SubRow {
            id: v.id.0,
            org_id: v.org_id.0,
            branch_id: v.branch_id.0,
            user_id: v.user_id.0,
            consumer_id: v.consumer_id.0,
            description: v.description.clone(),
            currency: v.currency.code().into(),
            status: v.status.as_str().into(),
            recurring_interval: v.recurring_interval.as_str().into(),
            recurring_interval_count: i64::from(v.recurring_interval_count),
            period_anchor: v.period_anchor,
            current_cycle_number: i64::from(v.current_cycle_number),
            current_period_start: v.current_period_start,
            current_period_end: v.current_period_end,
            cancel_at_period_end: v.cancel_at_period_end,
            until_cycle_number: v.until_cycle_number.map(i64::from),
            started_at: v.started_at,
            ended_at: v.ended_at,
            latest_invoice_id: v.latest_invoice_id.map(|x| x.0),
            latest_invoice_paid: v.latest_invoice_paid,
            renewal_failures: i64::from(v.renewal_failures),
            options: serde_json::json!({
                "notify_consumer": v.notify_consumer,
                "exclude_coupons_if_installments": v.exclude_coupons_if_installments,
                "anchor_cycle": v.anchor_cycle,
            }),
            payment_methods: to_json("payment_methods", &v.payment_methods),
            coupon_ids: to_json("coupon_ids", &v.coupon_ids),
            coupons: lines_to_stored(&v.coupons)?,
            original_amount: m(v.original_amount)?,
            item_level_discounted_amount: m(v.item_level_discounted_amount)?,
            total_vat_amount: m(v.total_vat_amount)?,
            total_price_excluding_vat: m(v.total_price_excluding_vat)?,
            amount: m(v.amount)?,
            created_at: v.created_at,
            updated_at: v.updated_at,
        })
    }

    fn into_domain(self, items: Vec<SubscriptionItem>) -> StoreResult<Subscription> {
        let c = currency(&self.currency)?;
        let mo = |x: i64| Money::from_stored(x, c);
        Ok(Subscription {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            user_id: self.user_id.into(),
            consumer_id: self.consumer_id.into(),
            description: self.description,
            currency: c,
            status: parsed("subscription status", &self.status, SubscriptionStatus::parse)?,
            recurring_interval: parsed("recurring interval", &self.recurring_interval, RecurringInterval::parse)?,
            recurring_interval_count: count_of("recurring_interval_count", self.recurring_interval_count)?,
            period_anchor: self.period_anchor,
            // Absent in rows written before plan changes: cycle 1.
            anchor_cycle: match self.options.get("anchor_cycle") {
                None => 1,
                Some(v) => v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| unreadable("options", &self.options))?,
            },
            current_cycle_number: count_of("current_cycle_number", self.current_cycle_number)?,
            current_period_start: self.current_period_start,
            current_period_end: self.current_period_end,
            cancel_at_period_end: self.cancel_at_period_end,
            until_cycle_number: self.until_cycle_number.map(|n| count_of("until_cycle_number", n)).transpose()?,
            started_at: self.started_at,
            ended_at: self.ended_at,
            latest_invoice_id: self.latest_invoice_id.map(Into::into),
            latest_invoice_paid: self.latest_invoice_paid,
            renewal_failures: count_of("renewal_failures", self.renewal_failures)?,
            notify_consumer: self.options["notify_consumer"].as_bool().ok_or_else(|| unreadable("options", &self.options))?,
            exclude_coupons_if_installments: self.options["exclude_coupons_if_installments"]
                .as_bool()
                .ok_or_else(|| unreadable("options", &self.options))?,
            payment_methods: from_json("payment methods", self.payment_methods)?,
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

fn subs_matching<'a>(branch: Uuid, q: &'a ListQuery<SubscriptionSort>, f: &'a SubscriptionFilter, coll: &'static str) -> subscriptions::BoxedQuery<'a, Pg> {
    use subscriptions::dsl as v;
    let mut query = v::subscriptions.filter(v::branch_id.eq(branch)).into_boxed();
    if let Some(term) = &q.search {
        let pattern = contains_pattern(term);
        let end = close(coll);
        query = query.filter(
            sql::<Bool>(&format!("({}", folded("subscriptions.description", coll)))
                .bind::<Text, _>(pattern.clone())
                .sql(&format!(
                    "{end} OR EXISTS (SELECT 1 FROM subscription_items i JOIN products p ON p.id = i.product_id \
                     WHERE i.subscription_id = subscriptions.id AND {}",
                    folded("p.name", coll)
                ))
                .bind::<Text, _>(pattern)
                .sql(&format!("{end}))")),
        );
    }
    if !f.statuses.is_empty() {
        query = query.filter(v::status.eq_any(f.statuses.iter().map(|s| s.as_str().to_string()).collect::<Vec<_>>()));
    }
    if let Some(x) = f.latest_invoice_is_paid {
        query = query.filter(v::latest_invoice_paid.eq(x));
    }
    if let Some(x) = f.from_date {
        query = query.filter(v::created_at.ge(x));
    }
    if let Some(x) = f.to_date {
        query = query.filter(v::created_at.le(x));
    }
    if let Some(x) = f.current_period_start_from {
        query = query.filter(v::current_period_start.ge(x));
    }
    if let Some(x) = f.current_period_start_to {
        query = query.filter(v::current_period_start.le(x));
    }
    if let Some(x) = f.current_period_end_from {
        query = query.filter(v::current_period_end.ge(x));
    }
    if let Some(x) = f.current_period_end_to {
        query = query.filter(v::current_period_end.le(x));
    }
    if let Some(x) = f.from_price {
        query = query.filter(v::amount.ge(billing_model::money::stored_bound(x, true)));
    }
    if let Some(x) = f.to_price {
        query = query.filter(v::amount.le(billing_model::money::stored_bound(x, false)));
    }
    if let Some(x) = f.consumer_id {
        query = query.filter(v::consumer_id.eq(x.0));
    }
    if !f.currencies.is_empty() {
        query = query.filter(v::currency.eq_any(f.currencies.iter().map(|c| c.code().to_string()).collect::<Vec<_>>()));
    }
    if !f.product_ids.is_empty() {
        let ids: Vec<Uuid> = f.product_ids.iter().map(|p| p.0).collect();
        query = query.filter(diesel::dsl::exists(
            subscription_items::table
                .filter(subscription_items::subscription_id.eq(v::id))
                .filter(subscription_items::product_id.eq_any(ids)),
        ));
    }
    query
}

impl PgTx<'_> {
    /// The subscription's row, if it is of `branch`.
    fn sub_row(&mut self, branch: BranchId, id: SubscriptionId) -> StoreResult<Option<SubRow>> {
        use subscriptions::dsl as v;
        self.flush_if_updated(id.0)?;
        self.read_apart(|c| {
            v::subscriptions
                .filter(v::id.eq(id.0))
                .filter(v::branch_id.eq(branch.0))
                .select(SubRow::as_select())
                .first(c)
                .optional()
        })
    }

    pub(crate) fn sub_items_of(&mut self, rows: Vec<SubRow>) -> StoreResult<Vec<Subscription>> {
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let mut lines = self.lines_of::<SubscriptionItems>(&ids)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let c = currency(&r.currency)?;
            let items = lines
                .of(r.id, c)?
                .into_iter()
                .map(|(line, own)| SubscriptionItem {
                    id: line.id.0.into(),
                    line,
                    updated_at: own.updated_at,
                })
                .collect();
            out.push(r.into_domain(items)?);
        }
        Ok(out)
    }

    fn write_sub_items(&mut self, v: &Subscription) -> StoreResult<()> {
        let lines = v.items.iter().map(|it| (it.id.0, &it.line, SubItemOwn { updated_at: it.updated_at }));
        self.write_lines::<SubscriptionItems>(v.id.0, true, lines)
    }
}

impl SubscriptionTx for PgTx<'_> {
    fn insert_subscription(&mut self, v: &Subscription) -> StoreResult<()> {
        let row = SubRow::new(v)?;
        self.write(|c| diesel::insert_into(subscriptions::table).values(&row).execute(c))?;
        self.write_sub_items(v)
    }

    fn subscription(&mut self, branch: BranchId, id: SubscriptionId) -> StoreResult<Option<Subscription>> {
        if let Some(s) = self.take_prefetched_subscription(branch, id) {
            return Ok(Some(s));
        }
        match self.sub_row(branch, id)? {
            Some(r) => Ok(self.sub_items_of(vec![r])?.pop()),
            None => Ok(None),
        }
    }

    fn subscription_row(&mut self, branch: BranchId, id: SubscriptionId) -> StoreResult<Option<Subscription>> {
        self.sub_row(branch, id)?.map(|r| r.into_domain(vec![])).transpose()
    }

    fn update_subscription(&mut self, s: &Subscription) -> StoreResult<()> {
        use subscriptions::dsl as v;
        let row = SubRow::new(s)?;
        let n = self.write(|c| diesel::update(v::subscriptions.filter(v::id.eq(row.id))).set(&row).execute(c))?;
        if n == 0 {
            return Err(billing_model::error::StoreError::NotFound("subscription".into()));
        }
        self.write_sub_items(s)
    }

    fn update_subscription_row(&mut self, s: &Subscription) -> StoreResult<()> {
        use subscriptions::dsl as v;
        let original = self.take_original(s.id.0);
        self.forget_prefetched(Some(s.id.0));
        // In a batch's first pass, it goes out with the others at the end.
        let Some(row) = self.defer_subscription_update(SubRow::new(s)?, original) else {
            return Ok(());
        };
        let n = self.write_apart(|c| diesel::update(v::subscriptions.filter(v::id.eq(row.id))).set(&row).execute(c))?;
        if n == 0 {
            return Err(billing_model::error::StoreError::NotFound("subscription".into()));
        }
        Ok(())
    }

    /// One UPDATE: a paid renewal neither reads nor rewrites the row.
    fn mark_latest_invoice_paid(
        &mut self,
        branch: BranchId,
        id: SubscriptionId,
        invoice: InvoiceId,
        statuses: &[SubscriptionStatus],
        at: Ts,
    ) -> StoreResult<bool> {
        use subscriptions::dsl as v;
        // In a batch's first pass, from what it read ahead (nothing has changed the row since:
        // a write of it forgets that), the UPDATE sent with the others at the end.
        let names: Vec<&str> = statuses.iter().map(|x| x.as_str()).collect();
        // The row is written apart here: what was read of it is no longer what it holds.
        self.take_original(id.0);
        if self.deferring() {
            if let Some(m) = self.take_prefetched_mark(id.0) {
                self.forget_prefetched(Some(id.0));
                let marks = m.marks(branch, invoice, &names);
                return Ok(marks && self.defer_mark(id.0, at));
            }
        }
        self.forget_prefetched(Some(id.0));
        self.flush_if_updated(id.0)?;
        let statuses: Vec<String> = names.iter().map(|x| x.to_string()).collect();
        let n = self.change_apart(|c| {
            diesel::update(
                v::subscriptions
                    .filter(v::id.eq(id.0))
                    .filter(v::branch_id.eq(branch.0))
                    .filter(v::latest_invoice_id.eq(invoice.0))
                    .filter(v::latest_invoice_paid.eq(false))
                    .filter(v::status.eq_any(statuses)),
            )
            .set((v::latest_invoice_paid.eq(true), v::updated_at.eq(Some(at))))
            .execute(c)
        })?;
        Ok(n == 1)
    }

    fn list_subscriptions(&mut self, branch: BranchId, q: &ListQuery<SubscriptionSort>, f: &SubscriptionFilter) -> StoreResult<Page<Subscription>> {
        use subscriptions::dsl as v;
        let coll = self.search_collation;
        let (rows, total) = self.read(|c| {
            let total = subs_matching(branch.0, q, f, coll).count().get_result::<i64>(c)?;
            let query = subs_matching(branch.0, q, f, coll).select(SubRow::as_select());
            let query = match q.sort {
                SubscriptionSort::CreatedAt => order!(query, q.direction, v::created_at, v::id),
                SubscriptionSort::UpdatedAt => order!(query, q.direction, nulls v::updated_at, v::id),
                SubscriptionSort::Amount => order!(query, q.direction, v::amount, v::id),
                SubscriptionSort::CurrentPeriodStart => order!(query, q.direction, v::current_period_start, v::id),
                SubscriptionSort::CurrentPeriodEnd => order!(query, q.direction, v::current_period_end, v::id),
                SubscriptionSort::Status => order!(query, q.direction, v::status, v::id),
            };
            let (limit, offset) = page_bounds(q);
            let rows: Vec<SubRow> = query.limit(limit).offset(offset).load(c)?;
            Ok((rows, total))
        })?;
        let items = self.sub_items_of(rows)?;
        Ok(page_of(q.page, q.limit, items, total))
    }

    fn consumer_has_subscriptions_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[SubscriptionStatus]) -> StoreResult<bool> {
        use subscriptions::dsl as v;
        let names: Vec<String> = statuses.iter().map(|s| s.as_str().to_string()).collect();
        let n: i64 = self.read(|c| {
            v::subscriptions
                .filter(v::branch_id.eq(branch.0))
                .filter(v::consumer_id.eq(consumer.0))
                .filter(v::status.eq_any(&names))
                .count()
                .get_result(c)
        })?;
        Ok(n > 0)
    }

    fn insert_subscription_cycle(&mut self, subscription: SubscriptionId, cycle: u32, invoice: InvoiceId) -> StoreResult<()> {
        use subscription_cycles::dsl as y;
        self.forget_prefetched(Some(subscription.0));
        if self.defer_cycle(subscription.0, i64::from(cycle), invoice.0) {
            return Ok(());
        }
        self.write(|c| {
            diesel::insert_into(y::subscription_cycles)
                .values((
                    y::subscription_id.eq(subscription.0),
                    y::cycle_number.eq(i64::from(cycle)),
                    y::invoice_id.eq(invoice.0),
                ))
                .execute(c)
        })
        .map(drop)
    }

    fn prefetch_renewals(&mut self, ids: &[SubscriptionId]) -> StoreResult<()> {
        PgTx::prefetch_renewals(self, ids)
    }

    fn subscription_cycles(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<(u32, InvoiceId)>> {
        use subscription_cycles::dsl as y;
        let rows: Vec<(i64, Uuid)> = self.read(|c| {
            y::subscription_cycles
                .filter(y::subscription_id.eq(subscription.0))
                .order_by(y::cycle_number)
                .select((y::cycle_number, y::invoice_id))
                .load(c)
        })?;
        rows.into_iter().map(|(n, id)| Ok((count_of("cycle_number", n)?, id.into()))).collect()
    }
}

/// A row of `subscription_plan_changes`: the target plan, diff and preview are its `body`.
#[derive(Queryable, Selectable, Insertable, AsChangeset, Debug)]
#[diesel(table_name = subscription_plan_changes, treat_none_as_null = true, treat_none_as_default_value = false)]
pub(crate) struct PlanChangeRow {
    id: Uuid,
    subscription_id: Uuid,
    status: String,
    currency: String,
    effective_cycle: i64,
    effective_at: Ts,
    body: Value,
    created_at: Ts,
    updated_at: Option<Ts>,
}

impl PlanChangeRow {
    fn new(c: &PlanChange) -> StoreResult<Self> {
        Ok(PlanChangeRow {
            id: c.id.0,
            subscription_id: c.subscription_id.0,
            status: c.status.as_str().into(),
            currency: c.currency().code().into(),
            effective_cycle: i64::from(c.effective_cycle),
            effective_at: c.effective_at,
            body: c.body_to_stored()?,
            created_at: c.created_at,
            updated_at: c.updated_at,
        })
    }

    pub(crate) fn into_domain(self) -> StoreResult<PlanChange> {
        PlanChange::from_stored(
            self.id.into(),
            self.subscription_id.into(),
            &self.status,
            currency(&self.currency)?,
            count_of("effective_cycle", self.effective_cycle)?,
            self.effective_at,
            &self.body,
            self.created_at,
            self.updated_at,
        )
        .ok_or_else(|| unreadable("plan change", self.id))
    }
}

impl PlanChangeTx for PgTx<'_> {
    fn insert_plan_change(&mut self, c: &PlanChange) -> StoreResult<()> {
        let row = PlanChangeRow::new(c)?;
        self.write(|conn| diesel::insert_into(subscription_plan_changes::table).values(&row).execute(conn))
            .map(drop)
    }

    fn update_plan_change(&mut self, c: &PlanChange) -> StoreResult<()> {
        use subscription_plan_changes::dsl as pc;
        let row = PlanChangeRow::new(c)?;
        let n = self.write(|conn| diesel::update(pc::subscription_plan_changes.filter(pc::id.eq(row.id))).set(&row).execute(conn))?;
        if n == 0 {
            return Err(billing_model::error::StoreError::NotFound("plan change".into()));
        }
        Ok(())
    }

    fn scheduled_plan_change(&mut self, subscription: SubscriptionId) -> StoreResult<Option<PlanChange>> {
        if let Some(found) = self.take_prefetched_plan_change(subscription) {
            return Ok(found);
        }
        use subscription_plan_changes::dsl as pc;
        let row: Option<PlanChangeRow> = self.read_apart(|conn| {
            pc::subscription_plan_changes
                .filter(pc::subscription_id.eq(subscription.0))
                .filter(pc::status.eq(PlanChangeStatus::Scheduled.as_str()))
                .select(PlanChangeRow::as_select())
                .first(conn)
                .optional()
        })?;
        row.map(PlanChangeRow::into_domain).transpose()
    }

    fn plan_changes(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<PlanChange>> {
        use subscription_plan_changes::dsl as pc;
        let rows: Vec<PlanChangeRow> = self.read_apart(|conn| {
            pc::subscription_plan_changes
                .filter(pc::subscription_id.eq(subscription.0))
                .order_by((pc::created_at, pc::id))
                .select(PlanChangeRow::as_select())
                .load(conn)
        })?;
        rows.into_iter().map(PlanChangeRow::into_domain).collect()
    }

    fn subscription_cycle_invoice(&mut self, subscription: SubscriptionId, cycle: u32) -> StoreResult<Option<InvoiceId>> {
        use subscription_cycles::dsl as y;
        self.flush_if_cycle_pending(subscription.0)?;
        if let Some(found) = self.prefetched_cycle_invoice(subscription, cycle) {
            return Ok(found);
        }
        let id: Option<Uuid> = self.read_apart(|conn| {
            y::subscription_cycles
                .filter(y::subscription_id.eq(subscription.0))
                .filter(y::cycle_number.eq(i64::from(cycle)))
                .select(y::invoice_id)
                .first(conn)
                .optional()
        })?;
        Ok(id.map(Into::into))
    }

    fn replace_subscription_cycle_invoice(&mut self, subscription: SubscriptionId, cycle: u32, old: InvoiceId, new: InvoiceId) -> StoreResult<bool> {
        use subscription_cycles::dsl as y;
        let n = self.write(|conn| {
            diesel::update(
                y::subscription_cycles
                    .filter(y::subscription_id.eq(subscription.0))
                    .filter(y::cycle_number.eq(i64::from(cycle)))
                    .filter(y::invoice_id.eq(old.0)),
            )
            .set(y::invoice_id.eq(new.0))
            .execute(conn)
        })?;
        Ok(n == 1)
    }

    fn delete_subscription_cycle(&mut self, subscription: SubscriptionId, cycle: u32, invoice: InvoiceId) -> StoreResult<bool> {
        use subscription_cycles::dsl as y;
        let n = self.write(|conn| {
            diesel::delete(
                y::subscription_cycles
                    .filter(y::subscription_id.eq(subscription.0))
                    .filter(y::cycle_number.eq(i64::from(cycle)))
                    .filter(y::invoice_id.eq(invoice.0)),
            )
            .execute(conn)
        })?;
        Ok(n == 1)
    }
}
