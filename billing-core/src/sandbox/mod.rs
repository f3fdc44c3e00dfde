//! The sandbox test clock. A sandbox organization's time is the server clock plus an offset
//! that only grows; advancing it runs the organization's work that falls due on the way, each
//! item at its own time, before the call answers.

pub mod ops;
mod wire;

use crate::clock::Timestamp;
use chrono::Duration;

/// The most due-work items one clock advance runs before it answers.
pub const MAX_WORK_PER_ADVANCE: usize = 100_000;

/// The most stops one clock advance makes at due times on the way (see
/// [`Billing::advance_sandbox_clock`]); past them it jumps to its target.
pub const MAX_STOPS_PER_ADVANCE: usize = 10_000;

/// How far to move the test clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    By(Duration),
    To(Timestamp),
}
