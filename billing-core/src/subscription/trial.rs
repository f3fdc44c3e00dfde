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
use crate::billing::Billing;
use crate::clock::{format_rfc3339, Timestamp};
use crate::error::{Error, FieldError, Result, StoreError};
use crate::ids::{BranchId, WorkId};
use crate::payment::org_now;
use crate::store::{Store, StoreResult, Tx};
use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, Handler};
use chrono::Duration;
use serde::{Deserialize, Serialize};

/// End a trial: issue the first paid cycle's invoice.
pub const TRIAL_END_KIND: &str = "subscription.trial_end";
/// Report key.
pub const TRIAL_ENDED: &str = "subscription.trial_ended";
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

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TrialPayload {
    branch_id: BranchId,
    subscription_id: SubscriptionId,
}

fn item_id(s: SubscriptionId) -> WorkId {
    // Renewal items flip the lowest bit (cycle << 1 | 1); this one is even.
    WorkId(uuid::Uuid::from_u128(s.0.as_u128() ^ 0b110))
}

/// A trial asks for a `period_start` after now and not too far ahead (a 422 at `period_start`).
pub(crate) fn check(period_start: Timestamp, now: Timestamp) -> Result<()> {
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
pub(crate) fn begin(s: &mut Subscription, now: Timestamp) {
    s.status = SubscriptionStatus::Trialing;
    s.current_cycle_number = 0;
    s.current_period_start = now;
    s.current_period_end = s.period_anchor;
}

/// Records the trial of a subscription just inserted and queues its end.
pub(crate) fn record(tx: &mut dyn Tx, s: &Subscription) -> Result<()> {
    tx.insert_trial(&Trial {
        subscription_id: s.id,
        start: s.current_period_start,
        end: s.current_period_end,
    })?;
    let payload = serde_json::to_value(TrialPayload {
        branch_id: s.branch_id,
        subscription_id: s.id,
    })
    .expect("plain data serializes");
    tx.insert_work(&DueWork::new(item_id(s.id), s.org_id, TRIAL_END_KIND, s.current_period_end, payload))?;
    Ok(())
}

fn is_cycle_taken(e: &Error) -> bool {
    matches!(e, Error::Store(StoreError::UniqueViolation(name)) if name == "subscription_cycles_key")
}

impl<S: Store> Billing<S> {
    /// Ends one trial (see the module): cycle 1's invoice, TRIAL_PENDING (ACTIVE for a zero
    /// total), the auto-renewal charge queued.
    fn end_trial(&self, item: &DueWork) -> Result<Option<&'static str>> {
        let drop_item = |b: &Self| {
            b.store.write_leased(|tx| Ok(tx.complete_work(item.id, item.leased_until)?))?;
            Ok(None)
        };
        let Ok(p) = serde_json::from_value::<TrialPayload>(item.payload.clone()) else {
            return drop_item(self);
        };
        let Some(scope) = self.store.read(|tx| self.engine_scope(tx, item, p.branch_id))? else {
            return drop_item(self);
        };
        let server_now = self.clock().now();
        let done = self.store.write(|tx| {
            let now = org_now(tx, item.org_id, server_now)?;
            let finish = |tx: &mut dyn Tx, what| {
                if !tx.complete_work(item.id, item.leased_until)? {
                    return Err(Error::from(StoreError::LeaseLost(item.id)));
                }
                Ok(what)
            };
            let Some(mut s) = tx.subscription(p.branch_id, p.subscription_id)? else {
                return finish(tx, None);
            };
            if s.status != SubscriptionStatus::Trialing || s.current_cycle_number != 0 {
                return finish(tx, None);
            }
            if s.current_period_end > now {
                if !tx.reschedule_work(item.id, item.leased_until, s.current_period_end, &item.payload)? {
                    return Err(StoreError::LeaseLost(item.id).into());
                }
                return Ok(None);
            }
            // A plan change made during the trial takes effect with the first paid cycle.
            if let Some(c) = tx.scheduled_plan_change(s.id)?.filter(|c| c.effective_cycle <= 1) {
                let trial_end = s.current_period_end;
                self.apply_plan_change(tx, &mut s, c, 1, trial_end, now)?;
            }
            let (start, end) = s.cycle(1);
            s.current_cycle_number = 1;
            s.current_period_start = start;
            s.current_period_end = end;
            s.status = SubscriptionStatus::TrialPending;
            let (inv, _) = self.issue_cycle_invoice(tx, &scope, &mut s, 1, now)?;
            if s.status == SubscriptionStatus::TrialPending && s.payment_methods.auto_renewal() {
                super::renewal::queue_charge(tx, &s, inv.id, 0, start, start, &scope.org.settings.subscription_renewal_retry_days)?;
            }
            tx.update_subscription(&s)?;
            finish(tx, Some(TRIAL_ENDED))
        });
        match done {
            Err(e) if is_cycle_taken(&e) => drop_item(self),
            r => r,
        }
    }
}

pub(crate) fn work_handlers<S: Store>() -> Vec<Handler<S>> {
    vec![Handler {
        kind: TRIAL_END_KIND,
        batched: false,
        ready: |_| true,
        run: |b, items, report| {
            for item in items {
                match b.end_trial(item) {
                    Ok(Some(label)) => report.add(label, 1),
                    Ok(None) => {}
                    Err(e) if is_lease_lost(&e) => {}
                    Err(_) => report.errors += 1,
                }
            }
        },
    }]
}
