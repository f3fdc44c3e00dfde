//! The due-work queue: `billing_model::work::WorkTx`. Its claims are `work_claim`'s.

use crate::deferred::{Pending, Stage};
use crate::support::*;
use billing_model::clock::Timestamp;
use billing_model::error::constraint;
use billing_model::ids::{OrgId, WorkId};
use billing_model::store::StoreResult;
use billing_model::work::{DueTimes, DueWork, QueueDepth, Reschedule};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Json, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use serde_json::Value;
use std::collections::HashSet;
use uuid::Uuid;

diesel::table! {
    due_work (id) {
        id -> Uuid,
        org_id -> Uuid,
        kind -> Text,
        due_at -> Timestamptz,
        payload -> Json,
        attempts -> Int4,
        leased_until -> Nullable<Timestamptz>,
    }
}

#[derive(Queryable, Selectable, QueryableByName, Insertable, AsChangeset)]
#[diesel(table_name = due_work, check_for_backend(diesel::pg::Pg), treat_none_as_null = true)]
pub struct WorkRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub kind: String,
    pub due_at: Ts,
    pub payload: Value,
    pub attempts: i32,
    pub leased_until: Option<Ts>,
}

impl WorkRow {
    pub fn new(w: &DueWork) -> Self {
        WorkRow {
            id: w.id.0,
            org_id: w.org_id.0,
            kind: w.kind.clone(),
            due_at: w.due_at,
            payload: w.payload.clone(),
            attempts: w.attempts as i32,
            leased_until: w.leased_until,
        }
    }
    pub fn into_domain(self) -> DueWork {
        DueWork {
            id: self.id.into(),
            org_id: self.org_id.into(),
            kind: self.kind,
            due_at: self.due_at,
            payload: self.payload,
            attempts: self.attempts.max(0) as u32,
            leased_until: self.leased_until,
        }
    }
}

#[derive(QueryableByName)]
struct DepthRow {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = BigInt)]
    items: i64,
    #[diesel(sql_type = BigInt)]
    due: i64,
    #[diesel(sql_type = BigInt)]
    leased: i64,
    #[diesel(sql_type = BigInt)]
    lag_us: i64,
}

/// An item and the lease it was held with (what the batch lease checks return).
#[derive(QueryableByName)]
struct Held {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    lease: Option<Timestamp>,
}

impl Held {
    fn pair(self) -> (WorkId, Option<Timestamp>) {
        (WorkId(self.id), self.lease)
    }
}

#[derive(QueryableByName)]
struct DueTimesRow {
    #[diesel(sql_type = Nullable<Timestamptz>)]
    next_free: Option<Timestamp>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    first_held: Option<Timestamp>,
}

/// What a batch's first pass defers of the queue (see `deferred`): new items, and the
/// completions and drops of items.
#[derive(Default)]
pub(crate) struct Deferred {
    /// Each item with whether it is inserted only if absent.
    work: Vec<(DueWork, bool)>,
    /// Queue items completed (deleted while still leased as given), answered as done: a lease
    /// found lost when they go out fails the pass.
    completions: Vec<(Uuid, Option<Timestamp>)>,
    /// Queue items deleted whoever holds them, if they exist.
    drops: Vec<Uuid>,
    /// The ids of `work`, `completions` and `drops`.
    ids: HashSet<Uuid>,
}

impl Pending<PgKind> for Deferred {
    fn is_empty(&self) -> bool {
        self.work.is_empty() && self.completions.is_empty() && self.drops.is_empty()
    }

    /// The drops and the completions in a DELETE each, first; the new items last, in one INSERT
    /// per chunk. A completion whose lease was lost fails the pass (as `StoreError::LeaseLost`),
    /// and so does a plain item whose id existed (a `UniqueViolation` of
    /// [`constraint::DUE_WORK_PKEY`]).
    fn send(&mut self, tx: &mut PgTx<'_>, stage: Stage) -> StoreResult<()> {
        match stage {
            Stage::Deletes => {
                let (drops, completions) = (std::mem::take(&mut self.drops), std::mem::take(&mut self.completions));
                if !drops.is_empty() {
                    tx.change_apart(|c| {
                        diesel::sql_query("DELETE FROM due_work WHERE id = ANY($1)")
                            .bind::<Array<SqlUuid>, _>(&drops)
                            .execute(c)
                    })?;
                }
                if !completions.is_empty() {
                    let (ids, leases): (Vec<Uuid>, Vec<Option<Timestamp>>) = completions.iter().copied().unzip();
                    let deleted: Vec<Held> = tx.change_apart(|c| {
                        diesel::sql_query(
                            "DELETE FROM due_work w USING unnest($1::uuid[], $2::timestamptz[]) AS u(id, lease) \
                             WHERE w.id = u.id AND w.leased_until IS NOT DISTINCT FROM u.lease RETURNING u.id, u.lease",
                        )
                        .bind::<Array<SqlUuid>, _>(&ids)
                        .bind::<Array<Nullable<Timestamptz>>, _>(&leases)
                        .load(c)
                    })?;
                    if deleted.len() != ids.len() {
                        let done: HashSet<Uuid> = deleted.into_iter().map(|h| h.pair().0 .0).collect();
                        let lost = ids.iter().find(|id| !done.contains(id)).copied().unwrap_or_default();
                        // The item went on as if its lease were held: the pass must not commit.
                        tx.state.aborted.get_or_insert_with(|| "a completed item's lease was lost".into());
                        return Err(StoreError::LeaseLost(WorkId(lost)));
                    }
                }
                Ok(())
            }
            Stage::Updates => Ok(()),
            Stage::Inserts => {
                self.ids.clear();
                for chunk in std::mem::take(&mut self.work).chunks(INSERT_CHUNK) {
                    let rows: Vec<WorkRow> = chunk.iter().map(|(w, _)| WorkRow::new(w)).collect();
                    let inserted: Vec<Uuid> = tx.change_apart(|c| {
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
                        tx.state.aborted.get_or_insert_with(|| "a queued item's id existed".into());
                        return Err(StoreError::UniqueViolation(constraint::DUE_WORK_PKEY.into()));
                    }
                }
                Ok(())
            }
        }
    }
}

impl PgTx<'_> {
    /// Records queue item `w` for the end of the batch (`if_absent`: leave an existing item
    /// alone); `false` when this transaction does not defer.
    fn defer_work(&mut self, w: &DueWork, if_absent: bool) -> StoreResult<bool> {
        if self.deferred_ref::<Deferred>().is_some_and(|d| d.ids.contains(&w.id.0)) {
            self.flush()?;
        }
        match self.deferred::<Deferred>() {
            Some(d) => {
                d.ids.insert(w.id.0);
                d.work.push((w.clone(), if_absent));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Records the completion of queue item `id` under `lease` for the end of the batch, as if
    /// the lease were held (the pass fails there if it was not); `false` when this transaction
    /// does not defer. The caller has sent what was pending of `id`.
    fn defer_completion(&mut self, id: Uuid, lease: Option<Timestamp>) -> bool {
        match self.deferred::<Deferred>() {
            Some(d) => {
                d.ids.insert(id);
                d.completions.push((id, lease));
                true
            }
            None => false,
        }
    }

    /// Records the deletion of queue item `id` (whoever holds it, if it exists) for the end of
    /// the batch; `false` when this transaction does not defer. The caller has sent what was
    /// pending of `id`.
    fn defer_drop(&mut self, id: Uuid) -> bool {
        match self.deferred::<Deferred>() {
            Some(d) => {
                d.ids.insert(id);
                d.drops.push(id);
                true
            }
            None => false,
        }
    }

    /// Sends what is pending when queue item `id` is among it.
    fn flush_if_pending(&mut self, id: Uuid) -> StoreResult<()> {
        match self.deferred_ref::<Deferred>() {
            Some(d) if d.ids.contains(&id) => self.flush(),
            _ => Ok(()),
        }
    }
}

impl billing_model::work::WorkTx for PgTx<'_> {
    fn insert_work(&mut self, w: &DueWork) -> StoreResult<()> {
        if self.defer_work(w, false)? {
            return Ok(());
        }
        let row = WorkRow::new(w);
        self.write(|c| diesel::insert_into(due_work::table).values(&row).execute(c)).map(drop)
    }

    fn insert_work_if_absent(&mut self, w: &DueWork) -> StoreResult<bool> {
        // The answer is wanted now.
        self.flush_if_pending(w.id.0)?;
        let row = WorkRow::new(w);
        let n = self.write_apart(|c| {
            diesel::insert_into(due_work::table)
                .values(&row)
                .on_conflict(due_work::id)
                .do_nothing()
                .execute(c)
        })?;
        Ok(n > 0)
    }

    fn queue_work_if_absent(&mut self, w: &DueWork) -> StoreResult<()> {
        if self.defer_work(w, true)? {
            return Ok(());
        }
        self.insert_work_if_absent(w).map(drop)
    }

    fn work(&mut self, id: WorkId) -> StoreResult<Option<DueWork>> {
        self.flush_if_pending(id.0)?;
        let row = self.read_apart(|c| due_work::table.find(id.0).select(WorkRow::as_select()).first(c).optional())?;
        Ok(row.map(WorkRow::into_domain))
    }

    fn claim_due_work(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp, lease_until: Timestamp, limit: u32) -> StoreResult<Vec<DueWork>> {
        self.claim(org, &[], kinds, server_now, lease_until, limit)
    }

    fn claim_due_work_except(
        &mut self,
        except: &[OrgId],
        kinds: &[&str],
        server_now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<DueWork>> {
        self.claim(None, except, kinds, server_now, lease_until, limit)
    }

    fn due_work_exists(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp) -> StoreResult<bool> {
        self.any_due(org, kinds, server_now)
    }

    fn work_due_times(&mut self, org: OrgId, kinds: &[&str], server_now: Timestamp) -> StoreResult<DueTimes> {
        if kinds.is_empty() {
            return Ok(DueTimes::default());
        }
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        let row: DueTimesRow = self.read(|c| {
            diesel::sql_query(
                "SELECT MIN(due_at) FILTER (WHERE leased_until IS NULL OR leased_until <= $2) AS next_free, \
                        MIN(due_at) FILTER (WHERE leased_until > $2) AS first_held \
                 FROM due_work WHERE org_id = $1 AND kind = ANY($3)",
            )
            .bind::<SqlUuid, _>(org.0)
            .bind::<Timestamptz, _>(server_now)
            .bind::<Array<Text>, _>(&kinds)
            .get_result(c)
        })?;
        Ok(DueTimes {
            next_free: row.next_free,
            first_held: row.first_held,
        })
    }

    fn work_queue_depths(&mut self, server_now: Timestamp) -> StoreResult<Vec<QueueDepth>> {
        let rows: Vec<DepthRow> = self.read(|c| {
            diesel::sql_query(
                "SELECT w.kind, COUNT(*) AS items, \
                        COUNT(*) FILTER (WHERE w.due_at <= $1 + o.clock_offset_us * interval '1 microsecond' \
                                           AND (w.leased_until IS NULL OR w.leased_until <= $1)) AS due, \
                        COUNT(*) FILTER (WHERE w.leased_until > $1) AS leased, \
                        COALESCE(MAX((EXTRACT(EPOCH FROM ($1 + o.clock_offset_us * interval '1 microsecond' - w.due_at)) * 1000000)::bigint) \
                                 FILTER (WHERE w.due_at <= $1 + o.clock_offset_us * interval '1 microsecond' \
                                           AND (w.leased_until IS NULL OR w.leased_until <= $1)), 0) AS lag_us \
                 FROM due_work w JOIN organizations o ON o.id = w.org_id GROUP BY w.kind ORDER BY w.kind",
            )
            .bind::<Timestamptz, _>(server_now)
            .load(c)
        })?;
        Ok(rows
            .into_iter()
            .map(|r| QueueDepth {
                kind: r.kind,
                items: r.items as u64,
                due: r.due as u64,
                leased: r.leased as u64,
                lag_us: r.lag_us,
            })
            .collect())
    }

    fn claim_work(&mut self, id: WorkId, server_now: Timestamp, lease_until: Timestamp) -> StoreResult<Option<DueWork>> {
        self.flush_if_pending(id.0)?;
        let rows: Vec<WorkRow> = self.change_apart(|c| {
            diesel::sql_query(
                "UPDATE due_work SET leased_until = $2, attempts = attempts + 1 \
                 WHERE id = $1 AND (leased_until IS NULL OR leased_until <= $3) \
                 RETURNING id, org_id, kind, due_at, payload, attempts, leased_until",
            )
            .bind::<SqlUuid, _>(id.0)
            .bind::<Timestamptz, _>(lease_until)
            .bind::<Timestamptz, _>(server_now)
            .load(c)
        })?;
        Ok(rows.into_iter().next().map(WorkRow::into_domain))
    }

    fn complete_work(&mut self, id: WorkId, lease: Option<Timestamp>) -> StoreResult<bool> {
        self.flush_if_pending(id.0)?;
        if self.defer_completion(id.0, lease) {
            return Ok(true);
        }
        let n = self.change_apart(|c| {
            diesel::sql_query("DELETE FROM due_work WHERE id = $1 AND leased_until IS NOT DISTINCT FROM $2")
                .bind::<SqlUuid, _>(id.0)
                .bind::<Nullable<Timestamptz>, _>(lease)
                .execute(c)
        })?;
        Ok(n > 0)
    }

    fn drop_work(&mut self, id: WorkId) -> StoreResult<()> {
        self.flush_if_pending(id.0)?;
        if self.defer_drop(id.0) {
            return Ok(());
        }
        self.end_work(id).map(drop)
    }

    fn end_work(&mut self, id: WorkId) -> StoreResult<bool> {
        self.flush_if_pending(id.0)?;
        let n = self.change_apart(|c| diesel::sql_query("DELETE FROM due_work WHERE id = $1").bind::<SqlUuid, _>(id.0).execute(c))?;
        Ok(n > 0)
    }

    fn reschedule_work(&mut self, id: WorkId, lease: Option<Timestamp>, due_at: Timestamp, payload: &Value) -> StoreResult<bool> {
        self.flush_if_pending(id.0)?;
        let n = self.change_apart(|c| {
            diesel::sql_query("UPDATE due_work SET due_at = $3, payload = $4, leased_until = NULL WHERE id = $1 AND leased_until IS NOT DISTINCT FROM $2")
                .bind::<SqlUuid, _>(id.0)
                .bind::<Nullable<Timestamptz>, _>(lease)
                .bind::<Timestamptz, _>(due_at)
                .bind::<Json, _>(payload)
                .execute(c)
        })?;
        Ok(n > 0)
    }

    fn insert_works(&mut self, items: &[DueWork]) -> StoreResult<()> {
        for chunk in items.chunks(INSERT_CHUNK) {
            let rows: Vec<WorkRow> = chunk.iter().map(WorkRow::new).collect();
            self.write(|c| diesel::insert_into(due_work::table).values(&rows).execute(c))?;
        }
        Ok(())
    }

    fn complete_works(&mut self, items: &[(WorkId, Option<Timestamp>)]) -> StoreResult<Vec<(WorkId, Option<Timestamp>)>> {
        if items.is_empty() {
            return Ok(vec![]);
        }
        let (ids, leases): (Vec<Uuid>, Vec<Option<Timestamp>>) = items.iter().map(|(id, l)| (id.0, *l)).unzip();
        let held: Vec<Held> = self.change(|c| {
            diesel::sql_query(
                "DELETE FROM due_work w USING unnest($1::uuid[], $2::timestamptz[]) AS u(id, lease) \
                 WHERE w.id = u.id AND w.leased_until IS NOT DISTINCT FROM u.lease RETURNING u.id, u.lease",
            )
            .bind::<Array<SqlUuid>, _>(&ids)
            .bind::<Array<Nullable<Timestamptz>>, _>(&leases)
            .load(c)
        })?;
        Ok(held.into_iter().map(Held::pair).collect())
    }

    fn reschedule_works(&mut self, items: &[Reschedule]) -> StoreResult<Vec<(WorkId, Option<Timestamp>)>> {
        if items.is_empty() {
            return Ok(vec![]);
        }
        let ids: Vec<Uuid> = items.iter().map(|r| r.id.0).collect();
        let leases: Vec<Option<Timestamp>> = items.iter().map(|r| r.lease).collect();
        let due: Vec<Timestamp> = items.iter().map(|r| r.due_at).collect();
        let held: Vec<Held> = self.change(|c| {
            diesel::sql_query(
                "UPDATE due_work w SET due_at = u.due, payload = '{}'::json, leased_until = NULL \
                 FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[]) AS u(id, lease, due) \
                 WHERE w.id = u.id AND w.leased_until IS NOT DISTINCT FROM u.lease RETURNING u.id, u.lease",
            )
            .bind::<Array<SqlUuid>, _>(&ids)
            .bind::<Array<Nullable<Timestamptz>>, _>(&leases)
            .bind::<Array<Timestamptz>, _>(&due)
            .load(c)
        })?;
        Ok(held.into_iter().map(Held::pair).collect())
    }
}
