//! The due-work queue: every piece of background work (webhook fan-out and deliveries today;
//! billing cycles and scheduled charges later) is a [`DueWork`] row, claimed with a lease so
//! that it is done once whichever process does it.
//!
//! - `due_at` is in the organization's time, so a sandbox test clock makes work due: an item is
//!   due when `due_at <= server_now + the organization's clock offset`.
//! - Claiming sets `leased_until` (server time) and counts the claim in `attempts`; an item whose
//!   lease has run out (its process died) is claimable again, so nothing committed is lost.
//! - Completing or rescheduling an item names the lease it was claimed with: when the lease was
//!   lost (it expired and another process claimed the item), the call changes nothing and says
//!   so, and the caller rolls its transaction back.
//!
//! PostgreSQL claims with `FOR UPDATE SKIP LOCKED`; SQLite claims under its single writer.

use crate::clock::Timestamp;
use crate::engine::Billing;
use crate::error::Result;
use crate::ids::{OrgId, WorkId};
use crate::store::{Store, StoreResult};
use chrono::Duration;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct DueWork {
    pub id: WorkId,
    pub org_id: OrgId,
    /// What to do (`webhook.fanout`, `webhook.delivery`, …); the runner dispatches on it.
    pub kind: String,
    /// When it is due, in the organization's time.
    pub due_at: Timestamp,
    pub payload: Value,
    /// How many times it was claimed.
    pub attempts: u32,
    /// Server time until which the claimer holds it; `None` when nobody does.
    pub leased_until: Option<Timestamp>,
}

impl DueWork {
    pub fn new(id: WorkId, org_id: OrgId, kind: &str, due_at: Timestamp, payload: Value) -> Self {
        DueWork {
            id,
            org_id,
            kind: kind.to_string(),
            due_at,
            payload,
            attempts: 0,
            leased_until: None,
        }
    }
}

/// See [`WorkTx::work_due_times`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DueTimes {
    /// The earliest due time of the items nobody holds.
    pub next_free: Option<Timestamp>,
    /// The earliest due time of the items held by a claim (in flight).
    pub first_held: Option<Timestamp>,
}

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
    /// Whether `claim_due_work` would find something (a cheap read, so that idle pollers take
    /// no write transaction).
    fn due_work_exists(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp) -> StoreResult<bool>;
    /// The earliest `due_at` (organization time) of `org`'s items of `kinds`, due or not: of
    /// those nobody holds (`leased_until` absent or `<= server_now`) and of those held. A
    /// sandbox clock advance steps through these times.
    fn work_due_times(&mut self, org: OrgId, kinds: &[&str], server_now: Timestamp) -> StoreResult<DueTimes>;
    /// Claims item `id` whether due or not, unless another claim holds it.
    fn claim_work(&mut self, id: WorkId, server_now: Timestamp, lease_until: Timestamp) -> StoreResult<Option<DueWork>>;
    /// Deletes the item if its lease is still `lease`; returns whether it did.
    fn complete_work(&mut self, id: WorkId, lease: Option<Timestamp>) -> StoreResult<bool>;
    /// Sets a new due time and payload and clears the lease, if the lease is still `lease`;
    /// returns whether it did.
    fn reschedule_work(&mut self, id: WorkId, lease: Option<Timestamp>, due_at: Timestamp, payload: &Value) -> StoreResult<bool>;
}

/// How long a claim holds an item before another process may take it over.
pub const DEFAULT_LEASE: Duration = Duration::seconds(60);

impl<S: Store> Billing<S> {
    /// Claims due work of `kinds` (of one organization or all) with a lease of `lease`.
    pub fn claim_due_work(&self, org: Option<OrgId>, kinds: &[&str], lease: Duration, limit: u32) -> Result<Vec<DueWork>> {
        let now = self.clock().now();
        if !self.store.read(|tx| Ok(tx.due_work_exists(org, kinds, now)?))? {
            return Ok(vec![]);
        }
        self.store.write_leased(|tx| Ok(tx.claim_due_work(org, kinds, now, now + lease, limit)?))
    }
}
