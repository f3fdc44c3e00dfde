//! A transaction's side of batches: what the resource files call to defer their writes
//! (`deferred`) and to take what was read ahead (`prefetch`), each through its own part.

use crate::deferred::{self, Deferred, Pending};
use crate::prefetch::{Original, Prefetched, ReadAhead};
use crate::support::*;
use diesel::prelude::*;

/// The parts a batch's first pass defers into, in the order they go out (see `deferred`).
pub(crate) type Parts = Vec<Box<dyn Pending<PgKind>>>;

impl<'c> PgTx<'c> {
    /// Starts deferring into `parts` (the first pass of a batch).
    pub(crate) fn defer_appends(&mut self, parts: Parts) {
        self.deferred = Some(Deferred::new(parts));
    }

    /// Whether this transaction defers (a batch's first pass).
    pub(crate) fn deferring(&self) -> bool {
        self.deferred.is_some()
    }

    /// The deferred part `P`: `None` when this transaction does not defer.
    pub(crate) fn deferred<P: Pending<PgKind>>(&mut self) -> Option<&mut P> {
        self.deferred.as_mut()?.part::<P>()
    }

    /// [`Self::deferred`], to look at.
    pub(crate) fn deferred_ref<P: Pending<PgKind>>(&self) -> Option<&P> {
        self.deferred.as_ref()?.part_ref::<P>()
    }

    /// Sends everything pending (see `deferred::send`).
    pub(crate) fn flush(&mut self) -> StoreResult<()> {
        let Some(d) = &mut self.deferred else { return Ok(()) };
        if d.is_empty() {
            return Ok(());
        }
        let mut parts = d.take();
        let sent = deferred::send::<PgKind>(self, &mut parts);
        if let Some(d) = &mut self.deferred {
            d.restore(parts);
        }
        sent
    }

    /// Ends a batch's first pass before it commits: sends what is pending, then lets every part
    /// finish (`Pending::finish`: the invoice numbers taken ahead and not handed out are given
    /// back).
    pub(crate) fn end_deferring(&mut self) -> StoreResult<()> {
        self.flush()?;
        let Some(d) = &mut self.deferred else { return Ok(()) };
        let mut parts = d.take();
        let ended = deferred::finish::<PgKind>(self, &mut parts);
        if let Some(d) = &mut self.deferred {
            d.restore(parts);
        }
        ended
    }

    /// Sends what is pending when an update of the row of `id` (a subscription's, an
    /// invoice's), or of a row under it (a payment of invoice `id`), is among it.
    pub(crate) fn flush_if_updated(&mut self, id: Uuid) -> StoreResult<()> {
        match &self.deferred {
            Some(d) if d.updates(id) => self.flush(),
            _ => Ok(()),
        }
    }

    /// Whether an update of the row of `id`, or of a row under it, is pending.
    pub(crate) fn update_pending(&self, id: Uuid) -> bool {
        self.deferred.as_ref().is_some_and(|d| d.updates(id))
    }

    /// One UPDATE of `table` for `rows` (by `id`: the columns that changed from the rows'
    /// originals, see [`deferred::changed_columns`]), sent as one JSON parameter. A row whose id
    /// is missing fails the pass, as its own UPDATE would have failed its item (the savepoint
    /// pass finds which).
    pub(crate) fn send_updates<R: serde::Serialize>(&mut self, table: &str, what: &str, rows: &[(R, Option<Original>)]) -> StoreResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut json: Vec<Value> = Vec::with_capacity(rows.len());
        for (row, _) in rows {
            match serde_json::to_value(row) {
                Ok(v @ Value::Object(_)) => json.push(v),
                Ok(_) => return Err(StoreError::backend(format!("a {what} row is not a JSON object"))),
                Err(e) => return Err(StoreError::backend(format!("a {what} row as JSON: {e}"))),
            }
        }
        let originals: Vec<Option<&Original>> = rows.iter().map(|(_, o)| o.as_ref()).collect();
        let columns = deferred::changed_columns(&json, &originals);
        // Only what is set, and the id, goes out.
        for v in &mut json {
            if let Value::Object(o) = v {
                o.retain(|k, _| k == "id" || columns.contains(k));
            }
        }
        let json = Value::Array(json);
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

    /// What a batch's reads found, replacing whatever was read ahead before.
    pub(crate) fn read_ahead(&mut self, parts: Vec<Box<dyn ReadAhead>>) {
        self.prefetched = Prefetched::new(parts);
    }

    /// The part `A` of what was read ahead, if any.
    pub(crate) fn ahead<A: ReadAhead>(&mut self) -> Option<&mut A> {
        self.prefetched.part::<A>()
    }

    /// [`Self::ahead`], to look at.
    pub(crate) fn ahead_ref<A: ReadAhead>(&self) -> Option<&A> {
        self.prefetched.part_ref::<A>()
    }

    /// Forgets what was read ahead: all of it (`None`), or what is kept under one id (see
    /// `Prefetched::forget`).
    pub(crate) fn forget_prefetched(&mut self, id: Option<Uuid>) {
        self.prefetched.forget(id);
    }

    /// Keeps `row` (of a row read ahead) as the database holds it, for its deferred update.
    pub(crate) fn keep_original<R: serde::Serialize>(&mut self, id: Uuid, row: StoreResult<R>) {
        if self.deferred.is_none() {
            return;
        }
        // A row that does not map is simply not kept: its update then sets every column.
        if let Some(Value::Object(o)) = row.ok().and_then(|r| serde_json::to_value(r).ok()) {
            self.prefetched.keep_original(id, o);
        }
    }

    /// The row `id` as read ahead in this pass and not written since, taken: a write of the
    /// row apart calls this first (its deferred update compares with it; any other write of it
    /// makes it stale).
    pub(crate) fn take_original(&mut self, id: Uuid) -> Option<Original> {
        self.prefetched.take_original(id)
    }
}
