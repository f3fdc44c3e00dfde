//! What a store offers for the due-work queue (part of [`crate::store::Tx`]).

use super::{DueTimes, DueWork, QueueDepth};
use crate::clock::Timestamp;
use crate::ids::{OrgId, WorkId};
use crate::store::StoreResult;
use serde_json::Value;

/// Due-work reads and writes inside one transaction (part of [`crate::store::Tx`]).
pub trait WorkTx {
    /// Inserts an unleased item; an existing id is a `UniqueViolation`.
    fn insert_work(&mut self, w: &DueWork) -> StoreResult<()>;
    fn work(&mut self, id: WorkId) -> StoreResult<Option<DueWork>>;
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
    /// Sets a new due time and payload and clears the lease, if the lease is still `lease`;
    /// returns whether it did.
    fn reschedule_work(&mut self, id: WorkId, lease: Option<Timestamp>, due_at: Timestamp, payload: &Value) -> StoreResult<bool>;
}
