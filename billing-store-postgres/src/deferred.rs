//! Appends a batch sends together: in the first pass of `Store::write_each` (no savepoints), the
//! new invoices (with their lines), payments, subscription cycles, events and due-work items its
//! items write go out as one multi-row INSERT per table, instead of one statement each; so do
//! the updates of invoices, payments and subscriptions (one UPDATE per table), the completions and the drops of
//! queue items (one DELETE each).
//!
//! Why: on PostgreSQL a renewal day is bound by round trips, not by the database's work (one
//! statement is about 0.2 ms on a 2-core machine, whatever it does), and a renewal appends an
//! invoice, its line, its payment, its cycle, three events and three queue items.
//!
//! The rules that keep it the same as writing each at once:
//! - Only the first pass of a batch defers. A failure there (including one found when the
//!   deferred rows go out: a duplicate id, a cycle issued twice, a foreign key) rolls the whole
//!   pass back, and the batch runs again with a savepoint per item and nothing deferred, so the
//!   failing item fails alone as before.
//! - Every statement sends what is pending first (`PgTx::read`, `change` and `write` do), except
//!   the ones written to run apart (`read_apart`, `change_apart`, `write_apart`): those touch none
//!   of the tables above, or only rows that cannot be pending (they check: `flush_if_pending`,
//!   `flush_if_cycle_pending`, `flush_if_invoice_pending`). Forgetting to mark a statement costs
//!   a round trip, never a wrong answer.
//! - An update of an invoice or a payment still pending changes the pending row; an update of
//!   one written before (or of a subscription's row) goes out at the end too, in one UPDATE per
//!   table (`send_updates`), and the reads and conditional updates of that row (or of the
//!   payments of that invoice) send what is pending first (`flush_if_updated`). A subscription
//!   marked paid from what an outcome batch read ahead is one of those updates too
//!   (`defer_mark`).
//!   A row that turns out missing there fails the pass.
//! - Queue items keep their meaning: one inserted with `insert_work` must be new (a row the
//!   INSERT … ON CONFLICT DO NOTHING left out fails the pass), one with `insert_work_if_absent`
//!   leaves an existing item alone. A second write of an id already pending sends the first
//!   one before it is deferred, so they meet in the database as they would have.

use crate::event::{events, NewEventRow};
use crate::invoice::{invoice_items, invoices, item_rows, InvoiceRow, ItemRow};
use crate::payment::{payments, PaymentRow};
use crate::subscription::{subscription_cycles, SubRow};
use crate::support::*;
use crate::work::{due_work, WorkRow, INSERT_CHUNK};
use billing_model::clock::Timestamp;
use billing_model::event::Event;
use billing_model::invoice::Invoice;
use billing_model::work::DueWork;
use diesel::prelude::*;
use std::collections::HashSet;

/// A row as read, as the JSON object of its row type.
pub(crate) type Original = serde_json::Map<String, serde_json::Value>;

/// What a batch's first pass has written and not yet sent.
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    invoices: Vec<InvoiceRow>,
    items: Vec<ItemRow>,
    payments: Vec<PaymentRow>,
    /// (subscription, cycle, invoice)
    cycles: Vec<(Uuid, i64, Uuid)>,
    events: Vec<Event>,
    /// Each item with whether it is inserted only if absent.
    work: Vec<(DueWork, bool)>,
    /// Queue items completed (deleted while still leased as given), answered as done: a lease
    /// found lost when they go out fails the pass.
    completions: Vec<(Uuid, Option<Timestamp>)>,
    /// Queue items deleted whoever holds them, if they exist.
    drops: Vec<Uuid>,
    /// The ids of `work`, `completions` and `drops`.
    work_ids: HashSet<Uuid>,
    /// Updates of invoices, payments and subscriptions this pass did not insert: the newest row
    /// of each, with the row as the database holds it when this pass read it ahead (see
    /// `prefetch`): then only the columns that differ are sent.
    invoice_updates: Vec<(InvoiceRow, Option<Original>)>,
    payment_updates: Vec<(PaymentRow, Option<Original>)>,
    subscription_updates: Vec<(SubRow, Option<Original>)>,
    /// Subscriptions whose latest invoice is marked paid, with the time (`mark_latest_invoice_paid`
    /// answered from what the batch read ahead).
    marks: Vec<(Uuid, Timestamp)>,
    /// The ids of the updated rows, and the invoices of the updated payments.
    updated: HashSet<Uuid>,
}

impl Deferred {
    fn is_empty(&self) -> bool {
        self.invoices.is_empty()
            && self.payments.is_empty()
            && self.cycles.is_empty()
            && self.events.is_empty()
            && self.work.is_empty()
            && self.completions.is_empty()
            && self.drops.is_empty()
            && self.invoice_updates.is_empty()
            && self.payment_updates.is_empty()
            && self.subscription_updates.is_empty()
            && self.marks.is_empty()
    }
}

impl PgTx<'_> {
    /// Records a new invoice and its lines for the end of the batch; `false` when this
    /// transaction does not defer.
    pub(crate) fn defer_invoice(&mut self, inv: &Invoice) -> StoreResult<bool> {
        let Some(d) = &mut self.deferred else { return Ok(false) };
        d.invoices.push(InvoiceRow::new(inv)?);
        d.items.extend(item_rows(inv)?);
        Ok(true)
    }

    /// Sends what is pending when a new payment, or an update of a payment of `invoice`, is
    /// among it.
    pub(crate) fn flush_if_payments_pending(&mut self, invoice: Uuid) -> StoreResult<()> {
        match &self.deferred {
            Some(d) if !d.payments.is_empty() || d.updated.contains(&invoice) => self.flush(),
            _ => Ok(()),
        }
    }

    /// Records a new payment for the end of the batch; gives it back when this transaction does
    /// not defer.
    pub(crate) fn defer_payment(&mut self, row: PaymentRow) -> Option<PaymentRow> {
        match &mut self.deferred {
            Some(d) => {
                d.payments.push(row);
                None
            }
            None => Some(row),
        }
    }

    /// An update of a payment: changes the pending row when the payment is still pending, else
    /// records the update for the end of the batch (where a payment that is missing fails the
    /// pass); gives `row` back to be written when this transaction does not defer.
    /// `original`: the row as read ahead and not written since (see `prefetch`).
    pub(crate) fn defer_payment_update(&mut self, row: PaymentRow, original: Option<Original>) -> Option<PaymentRow> {
        let Some(d) = &mut self.deferred else { return Some(row) };
        if let Some(p) = d.payments.iter_mut().find(|p| p.id == row.id) {
            *p = row;
            return None;
        }
        d.updated.insert(row.invoice_id);
        replace_or_push(&mut d.payment_updates, &mut d.updated, (row, original), |r| r.0.id);
        None
    }

    /// An update of an invoice's row: [`Self::defer_payment_update`] for invoices.
    pub(crate) fn defer_invoice_update(&mut self, row: InvoiceRow, original: Option<Original>) -> Option<InvoiceRow> {
        let Some(d) = &mut self.deferred else { return Some(row) };
        if let Some(p) = d.invoices.iter_mut().find(|p| p.id == row.id) {
            *p = row;
            return None;
        }
        replace_or_push(&mut d.invoice_updates, &mut d.updated, (row, original), |r| r.0.id);
        None
    }

    /// An update of a subscription's row: [`Self::defer_payment_update`] for subscriptions
    /// (none is inserted in a batch).
    pub(crate) fn defer_subscription_update(&mut self, row: SubRow, original: Option<Original>) -> Option<SubRow> {
        let Some(d) = &mut self.deferred else { return Some(row) };
        replace_or_push(&mut d.subscription_updates, &mut d.updated, (row, original), |r| r.0.id);
        None
    }

    /// Records that subscription `id`'s latest invoice is marked paid at `at`, for the end of
    /// the batch (where a row found otherwise fails the pass); `false` when this transaction
    /// does not defer.
    pub(crate) fn defer_mark(&mut self, id: Uuid, at: Timestamp) -> bool {
        let Some(d) = &mut self.deferred else { return false };
        d.updated.insert(id);
        d.marks.push((id, at));
        true
    }

    /// Sends what is pending when an update of the row of `id` (a subscription's, an
    /// invoice's) is among it.
    pub(crate) fn flush_if_updated(&mut self, id: Uuid) -> StoreResult<()> {
        match &self.deferred {
            Some(d) if d.updated.contains(&id) => self.flush(),
            _ => Ok(()),
        }
    }

    /// Records a subscription's cycle for the end of the batch; `false` when this transaction
    /// does not defer.
    pub(crate) fn defer_cycle(&mut self, subscription: Uuid, cycle: i64, invoice: Uuid) -> bool {
        match &mut self.deferred {
            Some(d) => {
                d.cycles.push((subscription, cycle, invoice));
                true
            }
            None => false,
        }
    }

    /// Sends what is pending when a cycle of `subscription` is among it.
    pub(crate) fn flush_if_cycle_pending(&mut self, subscription: Uuid) -> StoreResult<()> {
        match &self.deferred {
            Some(d) if d.cycles.iter().any(|(s, _, _)| *s == subscription) => self.flush(),
            _ => Ok(()),
        }
    }

    /// Sends what is pending when invoice `id` (new or updated) is among it.
    pub(crate) fn flush_if_invoice_pending(&mut self, id: Uuid) -> StoreResult<()> {
        match &self.deferred {
            Some(d) if d.updated.contains(&id) || d.invoices.iter().any(|i| i.id == id) => self.flush(),
            _ => Ok(()),
        }
    }

    /// Whether this transaction defers (a batch's first pass).
    pub(crate) fn deferring(&self) -> bool {
        self.deferred.is_some()
    }

    /// Starts deferring the appends (the first pass of a batch).
    pub(crate) fn defer_appends(&mut self) {
        self.deferred = Some(Deferred::default());
    }

    /// Records `e` for the end of the batch; `false` when this transaction does not defer.
    pub(crate) fn defer_event(&mut self, e: &Event) -> bool {
        match &mut self.deferred {
            Some(d) => {
                d.events.push(e.clone());
                true
            }
            None => false,
        }
    }

    /// Records queue item `w` for the end of the batch (`if_absent`: leave an existing item
    /// alone); `false` when this transaction does not defer.
    pub(crate) fn defer_work(&mut self, w: &DueWork, if_absent: bool) -> StoreResult<bool> {
        if self.deferred.as_ref().is_some_and(|d| d.work_ids.contains(&w.id.0)) {
            self.flush()?;
        }
        match &mut self.deferred {
            Some(d) => {
                d.work_ids.insert(w.id.0);
                d.work.push((w.clone(), if_absent));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Records the completion of queue item `id` under `lease` for the end of the batch, as if
    /// the lease were held (the pass fails there if it was not); `false` when this transaction
    /// does not defer. The caller has sent what was pending of `id`.
    pub(crate) fn defer_completion(&mut self, id: Uuid, lease: Option<Timestamp>) -> bool {
        match &mut self.deferred {
            Some(d) => {
                d.work_ids.insert(id);
                d.completions.push((id, lease));
                true
            }
            None => false,
        }
    }

    /// Records the deletion of queue item `id` (whoever holds it, if it exists) for the end of
    /// the batch; `false` when this transaction does not defer. The caller has sent what was
    /// pending of `id`.
    pub(crate) fn defer_drop(&mut self, id: Uuid) -> bool {
        match &mut self.deferred {
            Some(d) => {
                d.work_ids.insert(id);
                d.drops.push(id);
                true
            }
            None => false,
        }
    }

    /// Sends what is pending when queue item `id` is among it.
    pub(crate) fn flush_if_pending(&mut self, id: Uuid) -> StoreResult<()> {
        match &self.deferred {
            Some(d) if d.work_ids.contains(&id) => self.flush(),
            _ => Ok(()),
        }
    }

    /// Sends everything pending: the dropped and the completed queue items in a DELETE each, then one INSERT per
    /// table and chunk, the referenced tables first (invoices, their lines, payments, cycles,
    /// events, queue items). A completion whose lease was lost fails the pass (as
    /// `StoreError::LeaseLost`), and so does a plain queue item whose id existed
    /// (`UniqueViolation("due_work_pkey")`).
    pub(crate) fn flush(&mut self) -> StoreResult<()> {
        let Some(d) = &mut self.deferred else { return Ok(()) };
        if d.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(d);
        let (pending_events, pending_work) = (pending.events, pending.work);
        if !pending.drops.is_empty() {
            self.change_apart(|c| {
                diesel::sql_query("DELETE FROM due_work WHERE id = ANY($1)")
                    .bind::<diesel::sql_types::Array<diesel::sql_types::Uuid>, _>(&pending.drops)
                    .execute(c)
            })?;
        }
        if !pending.completions.is_empty() {
            let (ids, leases): (Vec<Uuid>, Vec<Option<Timestamp>>) = pending.completions.iter().copied().unzip();
            let deleted: Vec<crate::work::Held> = self.change_apart(|c| {
                diesel::sql_query(
                    "DELETE FROM due_work w USING unnest($1::uuid[], $2::timestamptz[]) AS u(id, lease) \
                     WHERE w.id = u.id AND w.leased_until IS NOT DISTINCT FROM u.lease RETURNING u.id, u.lease",
                )
                .bind::<diesel::sql_types::Array<diesel::sql_types::Uuid>, _>(&ids)
                .bind::<diesel::sql_types::Array<diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>>, _>(&leases)
                .load(c)
            })?;
            if deleted.len() != ids.len() {
                let done: HashSet<Uuid> = deleted.into_iter().map(|h| h.pair().0 .0).collect();
                let lost = ids.iter().find(|id| !done.contains(id)).copied().unwrap_or_default();
                // The item went on as if its lease were held: the pass must not commit.
                self.state.aborted.get_or_insert_with(|| "a completed item's lease was lost".into());
                return Err(StoreError::LeaseLost(billing_model::ids::WorkId(lost)));
            }
        }
        self.send_updates("invoices", "invoice", &pending.invoice_updates)?;
        self.send_updates("payments", "payment", &pending.payment_updates)?;
        // The marks first: a later update of the same row was written after it (a mark after
        // an update reads the row, which sends the update first).
        if !pending.marks.is_empty() {
            let (ids, ats): (Vec<Uuid>, Vec<Timestamp>) = pending.marks.iter().copied().unzip();
            let n = self.change_apart(|c| {
                diesel::sql_query(
                    "UPDATE subscriptions AS s SET latest_invoice_paid = true, updated_at = u.at \
                     FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, at) WHERE s.id = u.id AND NOT s.latest_invoice_paid",
                )
                .bind::<diesel::sql_types::Array<diesel::sql_types::Uuid>, _>(&ids)
                .bind::<diesel::sql_types::Array<diesel::sql_types::Timestamptz>, _>(&ats)
                .execute(c)
            })?;
            if n != ids.len() {
                self.state.aborted.get_or_insert_with(|| "a subscription marked paid had changed".into());
                return Err(StoreError::NotFound("subscription".into()));
            }
        }
        self.send_updates("subscriptions", "subscription", &pending.subscription_updates)?;
        // A row of a chunk is about 30 parameters at most (an invoice): 200 rows stay well
        // under PostgreSQL's 65,535.
        for chunk in pending.invoices.chunks(200) {
            self.change_apart(|c| diesel::insert_into(invoices::table).values(chunk).execute(c))?;
        }
        for chunk in pending.items.chunks(200) {
            self.change_apart(|c| diesel::insert_into(invoice_items::table).values(chunk).execute(c))?;
        }
        for chunk in pending.payments.chunks(200) {
            self.change_apart(|c| diesel::insert_into(payments::table).values(chunk).execute(c))?;
        }
        for chunk in pending.cycles.chunks(INSERT_CHUNK) {
            use subscription_cycles::dsl as y;
            let rows: Vec<_> = chunk
                .iter()
                .map(|(s, n, i)| (y::subscription_id.eq(*s), y::cycle_number.eq(*n), y::invoice_id.eq(*i)))
                .collect();
            self.change_apart(|c| diesel::insert_into(y::subscription_cycles).values(&rows).execute(c))?;
        }
        for chunk in pending_events.chunks(INSERT_CHUNK) {
            let rows: Vec<NewEventRow<'_>> = chunk.iter().map(NewEventRow::new).collect();
            self.change_apart(|c| diesel::insert_into(events::table).values(&rows).execute(c))?;
        }
        for chunk in pending_work.chunks(INSERT_CHUNK) {
            let rows: Vec<WorkRow> = chunk.iter().map(|(w, _)| WorkRow::new(w)).collect();
            let inserted: Vec<Uuid> = self.change_apart(|c| {
                diesel::insert_into(due_work::table)
                    .values(&rows)
                    .on_conflict(due_work::id)
                    .do_nothing()
                    .returning(due_work::id)
                    .get_results(c)
            })?;
            let inserted: HashSet<Uuid> = inserted.into_iter().collect();
            if chunk.iter().any(|(w, if_absent)| !if_absent && !inserted.contains(&w.id.0)) {
                // As a failed statement would, this fails the pass, whatever a caller makes of
                // the error (it may not be the caller's own item).
                self.state.aborted.get_or_insert_with(|| "a queued item's id existed".into());
                return Err(StoreError::UniqueViolation(billing_model::error::constraint::DUE_WORK_PKEY.into()));
            }
        }
        Ok(())
    }

    /// One UPDATE of `table` for `rows` (by `id`: the columns that changed from the rows'
    /// originals, see [`changed_columns`]), sent as one JSON parameter. A row whose id is
    /// missing fails the pass, as its own UPDATE would have failed its item (the savepoint pass
    /// finds which).
    fn send_updates<R: serde::Serialize>(&mut self, table: &str, what: &str, rows: &[(R, Option<Original>)]) -> StoreResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut json: Vec<serde_json::Value> = Vec::with_capacity(rows.len());
        for (row, _) in rows {
            match serde_json::to_value(row) {
                Ok(v @ serde_json::Value::Object(_)) => json.push(v),
                Ok(_) => return Err(StoreError::backend(format!("a {what} row is not a JSON object"))),
                Err(e) => return Err(StoreError::backend(format!("a {what} row as JSON: {e}"))),
            }
        }
        let originals: Vec<Option<&Original>> = rows.iter().map(|(_, o)| o.as_ref()).collect();
        let columns = changed_columns(&json, &originals);
        // Only what is set, and the id, goes out.
        for v in &mut json {
            if let serde_json::Value::Object(o) = v {
                o.retain(|k, _| k == "id" || columns.contains(k));
            }
        }
        let json = serde_json::Value::Array(json);
        // The names are the row type's own fields, not input.
        let set: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
        let from: Vec<String> = columns.iter().map(|c| format!("v.\"{c}\"")).collect();
        let sql = format!(
            "UPDATE {table} AS t SET ({}) = ROW({}) FROM json_populate_recordset(NULL::{table}, $1) AS v WHERE t.id = v.id",
            set.join(", "),
            from.join(", ")
        );
        let n = self.change_apart(|c| diesel::sql_query(&sql).bind::<diesel::sql_types::Json, _>(&json).execute(c))?;
        if n != rows.len() {
            self.state.aborted.get_or_insert_with(|| format!("an updated {what} was missing"));
            return Err(StoreError::NotFound(what.into()));
        }
        Ok(())
    }
}

/// Replaces the row of `row`'s id in `rows` (when `ids` has it) or adds it. A replaced update
/// keeps the original it had: the database still holds that row (nothing was sent since).
fn replace_or_push<R>(rows: &mut Vec<(R, Option<Original>)>, ids: &mut HashSet<Uuid>, row: (R, Option<Original>), id: impl Fn(&(R, Option<Original>)) -> Uuid) {
    let key = id(&row);
    if ids.insert(key) {
        rows.push(row);
    } else if let Some(r) = rows.iter_mut().find(|r| id(r) == key) {
        r.0 = row.0;
    } else {
        rows.push(row);
    }
}

/// The columns of `rows` (JSON objects of one row type) to send: those that differ from the
/// row's original in any row, or all of them (but `id`) when a row has no original or none
/// differs (so the UPDATE still finds each row, and a missing one fails the pass).
fn changed_columns(rows: &[serde_json::Value], originals: &[Option<&Original>]) -> Vec<String> {
    let all = || -> Vec<String> {
        rows.first()
            .and_then(|r| r.as_object())
            .map(|o| o.keys().filter(|k| *k != "id").cloned().collect())
            .unwrap_or_default()
    };
    let mut changed: Vec<String> = Vec::new();
    for (row, original) in rows.iter().zip(originals) {
        let (Some(row), Some(original)) = (row.as_object(), original) else {
            return all();
        };
        for (k, v) in row {
            if k != "id" && original.get(k) != Some(v) && !changed.contains(k) {
                changed.push(k.clone());
            }
        }
    }
    if changed.is_empty() {
        return all();
    }
    changed
}
