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
//! - Each kind of work has a handler in the engine's registry (billing-core's `work`).
//!
//! PostgreSQL claims with `FOR UPDATE SKIP LOCKED`; SQLite claims under its single writer.

pub mod store;

pub use store::{Reschedule, WorkTx};

use crate::clock::Timestamp;
use crate::ids::{OrgId, WorkId};
use chrono::Duration;
use serde_json::Value;
use std::collections::BTreeMap;

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

/// One kind's line of [`WorkTx::work_queue_depths`]: what a monitoring scrape shows of the
/// queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDepth {
    pub kind: String,
    /// Every item of the kind, due or not.
    pub items: u64,
    /// Items due (in their organization's time) that nobody holds: waiting for a runner.
    pub due: u64,
    /// Items held by a claim (in flight).
    pub leased: u64,
    /// How long the longest-waiting due item has been due, in microseconds of its
    /// organization's time (0 when none is due): the queue's lag.
    pub lag_us: i64,
}

/// How long a claim holds an item before another process may take it over.
pub const DEFAULT_LEASE: Duration = Duration::seconds(60);

/// What a run of due work did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkReport {
    /// Items claimed.
    pub claimed: usize,
    /// Items whose run failed (a store error); they are claimed again when their lease ends.
    pub errors: usize,
    /// What the handlers counted, by label (`webhook.delivered`, …).
    pub counts: BTreeMap<&'static str, usize>,
}

impl WorkReport {
    pub fn add(&mut self, label: &'static str, n: usize) {
        *self.counts.entry(label).or_default() += n;
    }

    /// Adds another run's counts to this one.
    pub fn merge(&mut self, other: WorkReport) {
        self.claimed += other.claimed;
        self.errors += other.errors;
        for (k, v) in other.counts {
            self.add(k, v);
        }
    }

    /// What a handler counted under `label` (0 when nothing).
    pub fn count(&self, label: &str) -> usize {
        self.counts.get(label).copied().unwrap_or(0)
    }
}
