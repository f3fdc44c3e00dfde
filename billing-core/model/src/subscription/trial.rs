//! Trials: a subscription created with `trial: true` is not billed until `period_start`.
//!
//! - The trial runs from the creation until `period_start` (which must be in the future, at
//!   most [`MAX_TRIAL_DAYS`] days ahead): the subscription is `TRIALING` in cycle 0, whose
//!   period is the trial (`current_period_start` = creation, `current_period_end` =
//!   `trial_end` = `period_start`). No invoice is issued during the trial. Cycle 1, the first
//!   paid one, starts at `period_start` as for any subscription (the cycles keep its calendar).
//! - The trial's end is an item of the due-work queue ([`TRIAL_END_KIND`], due at
//!   `period_start` in the organization's time): cycle 1's invoice is issued (INVOICE_CREATED,
//!   `subscription_id` set) and the subscription is `TRIAL_PENDING` — the trial is over, its
//!   first paid invoice is awaited. With auto-renewal the invoice is charged to the consumer's
//!   card as a renewal is (declines retried 1, 3 and 7 days later; after the last, `INACTIVE`
//!   with SUBSCRIPTION_INACTIVATED). Paid in full, by the charge or by any other means, the
//!   subscription is `ACTIVE` (SUBSCRIPTION_ACTIVATED) and renews from then on. A zero total is
//!   settled at once (ACTIVE at the trial's end).
//! - Cancel of a TRIALING or TRIAL_PENDING subscription: CANCELED at once (with
//!   `cancel_related_invoices`, the unpaid first invoice is voided). A trial cannot be frozen.
//! - SubscriptionDetailed: `trial_end` (= `period_start`) and `trial_period_days` (its length
//!   in whole days, rounded up), `null` for subscriptions without a trial.

use super::{Subscription, SubscriptionId, SubscriptionStatus};
use crate::clock::{format_rfc3339, Timestamp};
use crate::error::StoreResult;
use crate::error::{Error, FieldError, Result};
use chrono::Duration;

/// The longest trial.
pub const MAX_TRIAL_DAYS: i64 = 3650;

#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub subscription_id: SubscriptionId,
    pub start: Timestamp,
    pub end: Timestamp,
}

impl Trial {
    /// Its length in whole days, rounded up.
    pub fn period_days(&self) -> i64 {
        super::freeze::ceil_days(self.end - self.start)
    }
}

/// Trial reads and writes inside one transaction (part of [`crate::store::Tx`]): one row per
/// subscription that had a trial.
pub trait TrialTx {
    fn insert_trial(&mut self, t: &Trial) -> StoreResult<()>;
    fn subscription_trial(&mut self, subscription: SubscriptionId) -> StoreResult<Option<Trial>>;
}
/// A trial asks for a `period_start` after now and not too far ahead (a 422 at `period_start`).
pub fn check(period_start: Timestamp, now: Timestamp) -> Result<()> {
    let problem = if period_start <= now {
        format!(
            "with a trial, period_start is when the trial ends and billing starts: it must be after now ({})",
            format_rfc3339(&now)
        )
    } else if period_start - now > Duration::days(MAX_TRIAL_DAYS) {
        format!("a trial lasts at most {MAX_TRIAL_DAYS} days")
    } else {
        return Ok(());
    };
    Err(Error::invalid(FieldError::body(
        "value_error",
        "period_start",
        format!("Value error, {problem}"),
    )))
}

/// Makes a new subscription a trial: TRIALING in cycle 0, from now to its anchor.
pub fn begin(s: &mut Subscription, now: Timestamp) {
    s.status = SubscriptionStatus::Trialing;
    s.current_cycle_number = 0;
    s.current_period_start = now;
    s.current_period_end = s.period_anchor;
}
