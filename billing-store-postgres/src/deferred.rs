//! Writes a batch sends together: in the first pass of `Store::write_each` (no savepoints), the
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
//!   `flush_if_invoice_pending`, and `cycle_invoice` for cycles). Forgetting to mark a statement
//!   costs a round trip, never a wrong answer.
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
//!
//! The machinery here knows no resource: each batched resource keeps its share of what waits in
//! a [`Pending`] of its own (in its file: what it defers, how it is sent, what it answers about
//! it), and the store lists those parts once, in the order they go out (`lib.rs`,
//! `deferred_parts`). A flush sends every part's deletes, then every part's updates, then every
//! part's inserts, each stage in the parts' order (so the referenced tables first).

use crate::prefetch::Original;
use billing_model::store::StoreResult;
use std::any::Any;
use std::collections::HashSet;
use uuid::Uuid;

/// When a part's waiting writes go out in a flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Deletions (of queue items), first.
    Deletes,
    /// Updates of rows written before the batch.
    Updates,
    /// New rows, last.
    Inserts,
}

/// The kind of transaction a batch's parts are sent with (the store's `PgTx`, as `support::Pg`),
/// named by a type without a lifetime so that the transaction can keep the parts.
pub(crate) trait TxKind: 'static {
    type Tx<'c>;
}

/// A batched resource's share of what a batch's first pass defers, kept in the transaction while
/// the pass runs.
pub(crate) trait Pending<K: TxKind>: Any {
    /// Whether nothing waits.
    fn is_empty(&self) -> bool;
    /// Whether an update of the row `id` waits (or of a row that belongs to it: a payment of
    /// invoice `id`).
    fn updates(&self, _id: Uuid) -> bool {
        false
    }
    /// Sends what waits for `stage`, and forgets it.
    fn send(&mut self, tx: &mut K::Tx<'_>, stage: Stage) -> StoreResult<()>;
    /// Ends the pass, after its last flush and before it commits.
    fn finish(&mut self, _tx: &mut K::Tx<'_>) -> StoreResult<()> {
        Ok(())
    }
}

/// What a batch's first pass has written and not yet sent: the batched resources' parts, in the
/// order they go out.
pub(crate) struct Deferred<K: TxKind> {
    parts: Vec<Box<dyn Pending<K>>>,
}

impl<K: TxKind> Deferred<K> {
    pub(crate) fn new(parts: Vec<Box<dyn Pending<K>>>) -> Self {
        Deferred { parts }
    }

    /// The part of type `P`, if the batch has one (and it is not being sent).
    pub(crate) fn part<P: Pending<K>>(&mut self) -> Option<&mut P> {
        self.parts.iter_mut().find_map(|p| (&mut **p as &mut dyn Any).downcast_mut::<P>())
    }

    /// [`Self::part`], to look at.
    pub(crate) fn part_ref<P: Pending<K>>(&self) -> Option<&P> {
        self.parts.iter().find_map(|p| (&**p as &dyn Any).downcast_ref::<P>())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.parts.iter().all(|p| p.is_empty())
    }

    /// Whether any part holds an update of the row `id` (see [`Pending::updates`]).
    pub(crate) fn updates(&self, id: Uuid) -> bool {
        self.parts.iter().any(|p| p.updates(id))
    }

    /// Takes the parts out, to send them with the transaction that keeps them ([`send`]);
    /// [`Self::restore`] puts them back.
    pub(crate) fn take(&mut self) -> Vec<Box<dyn Pending<K>>> {
        std::mem::take(&mut self.parts)
    }

    pub(crate) fn restore(&mut self, parts: Vec<Box<dyn Pending<K>>>) {
        self.parts = parts;
    }
}

/// Sends what waits in `parts`: every part's deletes, then updates, then inserts.
pub(crate) fn send<K: TxKind>(tx: &mut K::Tx<'_>, parts: &mut [Box<dyn Pending<K>>]) -> StoreResult<()> {
    for stage in [Stage::Deletes, Stage::Updates, Stage::Inserts] {
        for part in parts.iter_mut() {
            part.send(tx, stage)?;
        }
    }
    Ok(())
}

/// Ends the pass for every part ([`Pending::finish`]).
pub(crate) fn finish<K: TxKind>(tx: &mut K::Tx<'_>, parts: &mut [Box<dyn Pending<K>>]) -> StoreResult<()> {
    for part in parts.iter_mut() {
        part.finish(tx)?;
    }
    Ok(())
}

/// Replaces the row of `row`'s id in `rows` (when `ids` has it) or adds it. A replaced update
/// keeps the original it had: the database still holds that row (nothing was sent since).
pub(crate) fn replace_or_push<R>(
    rows: &mut Vec<(R, Option<Original>)>,
    ids: &mut HashSet<Uuid>,
    row: (R, Option<Original>),
    id: impl Fn(&(R, Option<Original>)) -> Uuid,
) {
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
pub(crate) fn changed_columns(rows: &[serde_json::Value], originals: &[Option<&Original>]) -> Vec<String> {
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
