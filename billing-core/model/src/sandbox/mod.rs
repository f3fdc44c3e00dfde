//! The sandbox test clock. A sandbox organization's time is the server clock plus an offset
//! that only grows; advancing it runs the organization's work that falls due on the way, each
//! item at its own time, before the call answers.

pub mod view;
pub mod wire;

pub use view::SandboxClock;

use crate::clock::Timestamp;
use chrono::Duration;

/// The most due-work items one clock advance runs before it answers.
pub const MAX_WORK_PER_ADVANCE: usize = 100_000;

/// The most stops one clock advance makes at due times on the way (see
/// `Billing::sandbox().advance`); past them it jumps to its target.
pub const MAX_STOPS_PER_ADVANCE: usize = 10_000;

/// How far to move the test clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    By(Duration),
    To(Timestamp),
}

/// How far a clock advance has come, reported while it runs (see
/// [`crate::Billing::set_advance_progress`]): a long advance (many stops, slow receivers) can
/// take a while, and whoever runs the server should see that it moves.
#[derive(Debug, Clone, PartialEq)]
pub struct AdvanceProgress {
    pub org: crate::ids::OrgId,
    /// Where the test clock is now, and where the advance goes.
    pub at: Timestamp,
    pub target: Timestamp,
    /// Stops made at due times so far, and due-work items run.
    pub stops: usize,
    pub items: usize,
    /// Wall-clock time since the advance started.
    pub elapsed: std::time::Duration,
    /// Whether this is the last report (the advance reached its target).
    pub done: bool,
}

/// Receives [`AdvanceProgress`] reports.
pub type ProgressReporter = std::sync::Arc<dyn Fn(&AdvanceProgress) + Send + Sync>;
