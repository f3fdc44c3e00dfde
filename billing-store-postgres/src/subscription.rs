//! Subscriptions with their items and billed cycles: `billing_model::subscription::SubscriptionTx`.

use crate::deferred::{replace_or_push, Pending, Stage};
use crate::prefetch::{Original, ReadAhead};
use crate::priced_line::line_table;
use crate::subscription_row::{subscriptions, SubRow};
use crate::support::*;
use billing_model::clock::Timestamp;
use billing_model::ids::*;
use billing_model::list::{Direction, ListQuery, Page};
use billing_model::subscription::*;
use diesel::dsl::sql;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};
use std::collections::{HashMap, HashSet};

line_table! {
    /// A subscription's items (see `crate::priced_line`), with when each was last changed.
    subscription_items (subscription_id) as SubscriptionItems, rows SubItemRow, own SubItemOwn {
        updated_at -> Nullable<Timestamptz>: Option<Ts>,
    }
}

diesel::allow_tables_to_appear_in_same_query!(subscriptions, subscription_items);

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

/// The columns of a subscription's row that `mark_latest_invoice_paid` reads.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = subscriptions)]
pub(crate) struct MarkState {
    id: Uuid,
    branch_id: Uuid,
    latest_invoice_id: Option<Uuid>,
    latest_invoice_paid: bool,
    status: String,
}

impl MarkState {
    /// Whether marking `invoice` paid, for `branch` and in one of `statuses`, would change it.
    fn marks(&self, branch: BranchId, invoice: InvoiceId, statuses: &[&str]) -> bool {
        self.branch_id == branch.0 && self.latest_invoice_id == Some(invoice.0) && !self.latest_invoice_paid && statuses.contains(&self.status.as_str())
    }
}

/// What a batch's first pass defers of subscriptions (see `deferred`): updates of their rows, and
/// latest invoices marked paid from what an outcome batch read ahead.
#[derive(Default)]
pub(crate) struct Deferred {
    /// The newest row of each updated subscription, with the row as the database holds it when
    /// this pass read it ahead (see `prefetch`): then only the columns that differ are sent.
    updates: Vec<(SubRow, Option<Original>)>,
    /// Subscriptions whose latest invoice is marked paid, with the time.
    marks: Vec<(Uuid, Timestamp)>,
    /// The ids of the updated and marked subscriptions.
    updated: HashSet<Uuid>,
}

impl Pending<PgKind> for Deferred {
    fn is_empty(&self) -> bool {
        self.updates.is_empty() && self.marks.is_empty()
    }

    fn updates(&self, id: Uuid) -> bool {
        self.updated.contains(&id)
    }

    /// The marks first: a later update of the same row was written after it (a mark after an
    /// update reads the row, which sends the update first).
    fn send(&mut self, tx: &mut PgTx<'_>, stage: Stage) -> StoreResult<()> {
        if stage != Stage::Updates {
            return Ok(());
        }
        self.updated.clear();
        let (marks, updates) = (std::mem::take(&mut self.marks), std::mem::take(&mut self.updates));
        if !marks.is_empty() {
            let (ids, ats): (Vec<Uuid>, Vec<Timestamp>) = marks.iter().copied().unzip();
            let n = tx.change_apart(|c| {
                diesel::sql_query(
                    "UPDATE subscriptions AS s SET latest_invoice_paid = true, updated_at = u.at \
                     FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, at) WHERE s.id = u.id AND NOT s.latest_invoice_paid",
                )
                .bind::<diesel::sql_types::Array<diesel::sql_types::Uuid>, _>(&ids)
                .bind::<diesel::sql_types::Array<diesel::sql_types::Timestamptz>, _>(&ats)
                .execute(c)
            })?;
            if n != ids.len() {
                tx.state.aborted.get_or_insert_with(|| "a subscription marked paid had changed".into());
                return Err(StoreError::NotFound("subscription".into()));
            }
        }
        tx.send_updates("subscriptions", "subscription", &updates)
    }
}

/// What a batch read ahead of subscriptions: a renewal batch's subscriptions (with their
/// items), an outcome batch's what marking its invoices' subscriptions paid looks at.
#[derive(Default)]
pub(crate) struct Ahead {
    subs: HashMap<Uuid, Subscription>,
    marks: HashMap<Uuid, MarkState>,
}

impl ReadAhead for Ahead {
    fn is_empty(&self) -> bool {
        self.subs.is_empty() && self.marks.is_empty()
    }

    fn forget(&mut self, id: Uuid) {
        self.subs.remove(&id);
        self.marks.remove(&id);
    }
}

impl PgTx<'_> {
    /// A renewal batch's reads (`SubscriptionTx::prefetch_renewals`): the subscriptions with
    /// their items, their freezes, scheduled plan changes and cycles, and their consumers'
    /// latest active cards, in six statements for the whole batch instead of six per renewal.
    fn read_renewals_ahead(&mut self, ids: &[SubscriptionId]) -> StoreResult<()> {
        // Its reads see what the transaction has written, sent or not (at a batch's start,
        // nothing is pending).
        self.flush()?;
        let ids: Vec<Uuid> = ids.iter().map(|x| x.0).collect();
        let rows: Vec<SubRow> = self.read_apart(|c| {
            use subscriptions::dsl as v;
            v::subscriptions.filter(v::id.eq_any(&ids)).select(SubRow::as_select()).load(c)
        })?;
        let subs = self.sub_items_of(rows)?;
        let freezes = self.freezes_ahead(&ids)?;
        let changes = self.plan_changes_ahead(&ids)?;
        let cycles = self.cycles_ahead(&ids)?;
        let consumers: Vec<Uuid> = subs.iter().map(|s| s.consumer_id.0).collect();
        let cards = self.cards_ahead(&consumers)?;
        let subs = Ahead {
            subs: subs.into_iter().map(|s| (s.id.0, s)).collect(),
            marks: HashMap::new(),
        };
        self.read_ahead(vec![Box::new(subs), Box::new(freezes), Box::new(changes), Box::new(cycles), Box::new(cards)]);
        Ok(())
    }

    /// Reads ahead what the responses of a page of subscriptions show besides the rows: their
    /// trials, live freezes and scheduled plan changes, their consumers and their latest
    /// invoices' payments, one statement each.
    fn read_views_ahead(&mut self, subs: &[Subscription]) -> StoreResult<()> {
        self.flush()?;
        let ids: Vec<Uuid> = subs.iter().map(|s| s.id.0).collect();
        let freezes = self.freezes_ahead(&ids)?;
        let trials = self.trials_ahead(&ids)?;
        let changes = self.plan_changes_ahead(&ids)?;
        let consumers: Vec<Uuid> = subs.iter().map(|s| s.consumer_id.0).collect();
        let consumers = self.consumers_ahead(&consumers)?;
        let invoices: Vec<Uuid> = subs.iter().filter_map(|s| s.latest_invoice_id.map(|i| i.0)).collect();
        let payments = self.payments_ahead(&invoices, &invoices)?;
        self.read_ahead(vec![
            Box::new(freezes),
            Box::new(trials),
            Box::new(changes),
            Box::new(consumers),
            Box::new(payments),
        ]);
        Ok(())
    }

    /// Reads ahead what marking the latest invoices of the subscriptions `ids` paid looks at,
    /// in one statement (none for no subscription).
    pub(crate) fn marks_ahead(&mut self, ids: &[Uuid]) -> StoreResult<Ahead> {
        let marks: Vec<MarkState> = match ids.is_empty() {
            true => vec![],
            false => self.read_apart(|c| {
                use subscriptions::dsl as v;
                v::subscriptions.filter(v::id.eq_any(ids)).select(MarkState::as_select()).load(c)
            })?,
        };
        Ok(Ahead {
            subs: HashMap::new(),
            marks: marks.into_iter().map(|m| (m.id, m)).collect(),
        })
    }

    /// The subscription as read ahead, once, when it is of `branch`.
    fn take_prefetched_subscription(&mut self, branch: BranchId, id: SubscriptionId) -> Option<Subscription> {
        let ahead = self.ahead::<Ahead>()?;
        let s = match ahead.subs.get(&id.0) {
            Some(s) if s.branch_id == branch => ahead.subs.remove(&id.0)?,
            _ => return None,
        };
        self.keep_original(s.id.0, SubRow::new(&s));
        Some(s)
    }

    /// An update of a subscription's row: recorded for the end of the batch (where a
    /// subscription that is missing fails the pass); gives `row` back to be written when this
    /// transaction does not defer. `original`: the row as read ahead and not written since.
    fn defer_subscription_update(&mut self, row: SubRow, original: Option<Original>) -> Option<SubRow> {
        let Some(d) = self.deferred::<Deferred>() else { return Some(row) };
        replace_or_push(&mut d.updates, &mut d.updated, (row, original), |r| r.0.id);
        None
    }

    /// Records that subscription `id`'s latest invoice is marked paid at `at`, for the end of
    /// the batch (where a row found otherwise fails the pass); `false` when this transaction
    /// does not defer.
    fn defer_mark(&mut self, id: Uuid, at: Timestamp) -> bool {
        let Some(d) = self.deferred::<Deferred>() else { return false };
        d.updated.insert(id);
        d.marks.push((id, at));
        true
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
            if let Some(m) = self.ahead::<Ahead>().and_then(|a| a.marks.remove(&id.0)) {
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
        self.insert_cycle(subscription, cycle, invoice)
    }

    fn prefetch_renewals(&mut self, ids: &[SubscriptionId]) -> StoreResult<()> {
        self.read_renewals_ahead(ids)
    }

    fn prefetch_subscription_views(&mut self, subs: &[Subscription]) -> StoreResult<()> {
        self.read_views_ahead(subs)
    }

    fn subscription_cycles(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<(u32, InvoiceId)>> {
        self.cycles_of(subscription)
    }
}
