//! What a store offers for the due-work queue (part of [`crate::store::Tx`]).

use super::{DueTimes, DueWork, QueueDepth};
use crate::clock::Timestamp;
use crate::error::StoreResult;
use crate::ids::{OrgId, WorkId};
use serde_json::Value;

/// Due-work reads and writes inside one transaction (part of [`crate::store::Tx`]).
pub trait WorkTx {
    /// Inserts an unleased item; an existing id is a `UniqueViolation`.
    fn insert_work(&mut self, w: &DueWork) -> StoreResult<()>;
    fn work(&mut self, id: WorkId) -> StoreResult<Option<DueWork>>;
    /// Inserts the item unless one with its id exists (which is left as it is); returns
    /// whether it inserted. For work queued once per id (a subscription's renewal into one
    /// cycle), where a second queuing is a no-op. The default reads, then inserts; a store may
    /// do it in one statement.
    fn insert_work_if_absent(&mut self, w: &DueWork) -> StoreResult<bool> {
        if self.work(w.id)?.is_some() {
            return Ok(false);
        }
        self.insert_work(w)?;
        Ok(true)
    }
    /// [`Self::insert_work_if_absent`] for a caller that does not need the answer: a store may
    /// then send it later in the transaction, with others (PostgreSQL does in a batch's first
    /// pass), as long as everything the transaction reads or changes afterwards sees it.
    fn queue_work_if_absent(&mut self, w: &DueWork) -> StoreResult<()> {
        self.insert_work_if_absent(w).map(drop)
    }
    /// Claims up to `limit` items of `kinds`, of organization `org` (or of all), that are due
    /// (`due_at <= server_now + org clock offset`) and not leased (`leased_until` absent or
    /// `<= server_now`), earliest due first: sets `leased_until = lease_until`, adds one to
    /// `attempts`, and returns them as updated. Concurrent claims never return the same item.
    fn claim_due_work(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp, lease_until: Timestamp, limit: u32) -> StoreResult<Vec<DueWork>>;
    /// [`Self::claim_due_work`] over every organization but those in `except` (a fair claim
    /// passes over organizations that already hold many runners).
    fn claim_due_work_except(
        &mut self,
        except: &[OrgId],
        kinds: &[&str],
        server_now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<DueWork>>;
    /// Whether `claim_due_work` would find something (a cheap read, so that idle pollers take
    /// no write transaction).
    fn due_work_exists(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp) -> StoreResult<bool>;
    /// The earliest `due_at` (organization time) of `org`'s items of `kinds`, due or not: of
    /// those nobody holds (`leased_until` absent or `<= server_now`) and of those held. A
    /// sandbox clock advance steps through these times.
    fn work_due_times(&mut self, org: OrgId, kinds: &[&str], server_now: Timestamp) -> StoreResult<DueTimes>;
    /// Per kind, over every organization, ordered by kind: the items, those due and free (due
    /// as [`Self::claim_due_work`] counts it: in the organization's time), those leased at
    /// `server_now`, and the longest wait of a due free item. Kinds without items are absent.
    fn work_queue_depths(&mut self, server_now: Timestamp) -> StoreResult<Vec<QueueDepth>>;
    /// Claims item `id` whether due or not, unless another claim holds it.
    fn claim_work(&mut self, id: WorkId, server_now: Timestamp, lease_until: Timestamp) -> StoreResult<Option<DueWork>>;
    /// Deletes the item if its lease is still `lease`; returns whether it did.
    fn complete_work(&mut self, id: WorkId, lease: Option<Timestamp>) -> StoreResult<bool>;
    /// Deletes the item whoever holds it (for the work's owner, which ends it while a handler
    /// may be looking at it); returns whether it existed. The default reads its lease, then
    /// completes it.
    fn end_work(&mut self, id: WorkId) -> StoreResult<bool> {
        match self.work(id)? {
            Some(w) => self.complete_work(id, w.leased_until),
            None => Ok(false),
        }
    }
    /// [`Self::end_work`] for a caller that does not need the answer: a store may then send it
    /// later in the transaction, with others (PostgreSQL does in a batch's first pass), as long
    /// as everything the transaction reads or changes afterwards sees it.
    fn drop_work(&mut self, id: WorkId) -> StoreResult<()> {
        self.end_work(id).map(drop)
    }
    /// Sets a new due time and payload and clears the lease, if the lease is still `lease`;
    /// returns whether it did.
    fn reschedule_work(&mut self, id: WorkId, lease: Option<Timestamp>, due_at: Timestamp, payload: &Value) -> StoreResult<bool>;

    // Batches: the same as the calls above, for many items at once. A store may do each in
    // one statement (PostgreSQL does), so that work run in batches (the webhook fan-out, the
    // recording of delivery attempts) costs a few round trips per batch rather than per item.
    // The defaults make one call per item.

    /// [`Self::insert_work`] of every item; any existing id is a `UniqueViolation` (and none
    /// is inserted when the transaction is rolled back).
    fn insert_works(&mut self, items: &[DueWork]) -> StoreResult<()> {
        items.iter().try_for_each(|w| self.insert_work(w))
    }
    /// [`Self::complete_work`] of every `(id, lease)`: deletes each item whose lease is still
    /// the one given, and returns the `(id, lease)` pairs it deleted (in any order); the others
    /// are left as they are (their lease was lost). The pairs, not only the ids: one id may
    /// come twice with two leases (an expired claim and its successor), and only the current
    /// one counts.
    fn complete_works(&mut self, items: &[(WorkId, Option<Timestamp>)]) -> StoreResult<Vec<(WorkId, Option<Timestamp>)>> {
        let mut done = Vec::with_capacity(items.len());
        for (id, lease) in items {
            if self.complete_work(*id, *lease)? {
                done.push((*id, *lease));
            }
        }
        Ok(done)
    }
    /// [`Self::reschedule_work`] of every item, each to its own due time, with an empty
    /// payload (`{}`); returns the `(id, lease)` pairs it rescheduled (in any order).
    fn reschedule_works(&mut self, items: &[Reschedule]) -> StoreResult<Vec<(WorkId, Option<Timestamp>)>> {
        let mut done = Vec::with_capacity(items.len());
        for r in items {
            if self.reschedule_work(r.id, r.lease, r.due_at, &serde_json::json!({}))? {
                done.push((r.id, r.lease));
            }
        }
        Ok(done)
    }
}

/// One item of [`WorkTx::reschedule_works`]: the item, the lease it is held with, its new due
/// time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reschedule {
    pub id: WorkId,
    pub lease: Option<Timestamp>,
    pub due_at: Timestamp,
}
