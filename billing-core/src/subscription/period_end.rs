//! The two timed steps of a cycle, each a function of one subscription in the caller's
//! transaction (so that a due-work item runs it alone, or a batch runs many in one
//! transaction):
//!
//! - [`PREPARE_KIND`] — prepare the next cycle's invoice, `subscription_invoice_lead_days`
//!   before the period end (the organization's setting; with 0 there is no such step and the
//!   renewal issues the invoice). The invoice bills the plan of the next cycle (a SCHEDULED
//!   plan change's target, when there is one), is due at the period end, and is the cycle's one
//!   invoice (`subscription_cycles_key`). Not prepared when the subscription is not ACTIVE or
//!   ends at the period end (a scheduled cancellation, `until_cycle_number`). It does not become
//!   the subscription's `latest_invoice` before its cycle starts.
//! - [`crate::subscription::RENEWAL_KIND`] — at the period end: a SCHEDULED plan change is
//!   applied first (SUBSCRIPTION_PLAN_CHANGED); then, when the subscription ends here (a
//!   scheduled cancellation or `until_cycle_number`), it is CANCELED (a plan change still
//!   scheduled is withdrawn, SUBSCRIPTION_PLAN_CHANGE_CANCELED, instead of applied) and a
//!   prepared next-cycle invoice that is not paid is voided; otherwise the subscription moves
//!   to the next cycle billed by the prepared invoice, or by one issued now, and with
//!   auto-renewal the charge of that invoice is queued.
//!
//! When a prepared invoice must not stay payable (the subscription is canceled at the period
//! end, or its `until_cycle_number` lowered), it is voided at once and its cycle row deleted;
//! when the subscription renews again (uncancel, `until_cycle_number` raised) and the
//! preparation time has passed, the invoice is prepared at once ([`Engine::sync_next_invoice`]).

use super::ops::{emit, schedule_renewal};
use super::renewal::{queue_charge, DueCharge, ENDED, RENEWED};
use super::{Subscription, SubscriptionStatus};
use crate::auth::Scope;
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::Result;
use crate::event::EventType;
use crate::ids::{InvoiceId, WorkId};
use crate::invoice::{Invoice, InvoiceStatus};
use crate::payment::PaymentStatus;
use crate::store::{Store, Tx};
use crate::work::DueWork;
use chrono::Duration;
use serde_json::json;

/// Prepare the next cycle's invoice ahead of the period end.
pub const PREPARE_KIND: &str = "subscription.prepare_invoice";
/// Report key: a next-cycle invoice prepared.
pub const PREPARED: &str = "subscription.invoice_prepared";

/// What a step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Too early: the item is due again then.
    Early(Timestamp),
    /// Done (a report key, or `None` for nothing to do): the item is complete.
    Done(Option<&'static str>),
}

/// The preparation item of cycle `cycle` of `s`: one id per subscription and cycle.
pub(crate) fn prepare_work_id(s: crate::ids::SubscriptionId, cycle: u32) -> WorkId {
    WorkId(uuid::Uuid::from_u128(s.0.as_u128() ^ (u128::from(cycle) << 1 | 1) ^ (0x5052_4550u128 << 96)))
}

/// Whether the subscription ends at its current period end.
pub(crate) fn ends_at_period_end(s: &Subscription) -> bool {
    s.cancel_at_period_end || s.until_cycle_number.is_some_and(|u| s.current_cycle_number >= u)
}

/// Queues the preparation of the next cycle's invoice `lead` before the period end (nothing
/// without a lead time), unless it is queued.
pub(crate) fn schedule_prepare(tx: &mut dyn Tx, s: &Subscription, lead: Duration) -> Result<()> {
    if lead <= Duration::zero() {
        return Ok(());
    }
    let next = s.current_cycle_number + 1;
    let id = prepare_work_id(s.id, next);
    let payload = json!({"branch_id": s.branch_id, "subscription_id": s.id, "cycle": next});
    tx.queue_work_if_absent(&DueWork::new(id, s.org_id, PREPARE_KIND, s.current_period_end - lead, payload))?;
    Ok(())
}

/// Whether an invoice is still open to a change: not canceled, nothing paid, no charge in
/// flight.
pub(crate) fn is_open(inv: &Invoice, payments: &[crate::payment::Payment]) -> bool {
    inv.status != InvoiceStatus::Canceled && !inv.is_finalised(payments) && !payments.iter().any(|p| p.status == PaymentStatus::Processing)
}

impl<S: Store> Engine<S> {
    /// Prepares the invoice of cycle `cycle` of `s` when its time has come (see the module).
    pub(crate) fn prepare_next_invoice(&self, tx: &mut dyn Tx, scope: &Scope, s: &Subscription, cycle: u32, now: Timestamp) -> Result<Step> {
        if s.status != SubscriptionStatus::Active || s.current_cycle_number + 1 != cycle {
            return Ok(Step::Done(None));
        }
        let lead = scope.org.settings.invoice_lead();
        if lead <= Duration::zero() {
            // No lead time (any more): the renewal issues the invoice at the period end.
            return Ok(Step::Done(None));
        }
        let due = s.current_period_end - lead;
        if now < due {
            return Ok(Step::Early(due));
        }
        if ends_at_period_end(s) || tx.subscription_cycle_invoice(s.id, cycle)?.is_some() {
            return Ok(Step::Done(None));
        }
        if super::freeze::moves_period_end(tx, s)? {
            // A freeze will move the period end: its end queues the preparation again.
            return Ok(Step::Done(None));
        }
        let plan = match tx.scheduled_plan_change(s.id)?.filter(|c| c.effective_cycle == cycle) {
            Some(c) => c.target,
            None => s.plan(),
        };
        self.new_cycle_invoice(tx, scope, s, &plan, cycle, None, None, now)?;
        Ok(Step::Done(Some(PREPARED)))
    }

    /// Brings the prepared next-cycle invoice in line with whether `s` renews at its period
    /// end: voided (and its cycle freed) when it ends there and the invoice is still open —
    /// whatever its status: an INACTIVE or FROZEN subscription keeps the invoice prepared while
    /// it was ACTIVE; prepared now when an ACTIVE one renews and the preparation time has
    /// passed.
    pub(crate) fn sync_next_invoice(&self, tx: &mut dyn Tx, scope: &Scope, s: &Subscription, now: Timestamp) -> Result<()> {
        if s.status.is_terminal() {
            return Ok(());
        }
        let next = s.current_cycle_number + 1;
        if ends_at_period_end(s) {
            self.withdraw_cycle_invoice(tx, scope, s, next)?;
        } else if s.status == SubscriptionStatus::Active {
            self.prepare_next_invoice(tx, scope, s, next, now)?;
        }
        Ok(())
    }

    /// Voids the invoice of cycle `n` if it is still open, and frees the cycle.
    pub(crate) fn withdraw_cycle_invoice(&self, tx: &mut dyn Tx, scope: &Scope, s: &Subscription, n: u32) -> Result<Option<InvoiceId>> {
        let Some(id) = tx.subscription_cycle_invoice(s.id, n)? else { return Ok(None) };
        let Some(inv) = tx.invoice(s.branch_id, id)? else { return Ok(None) };
        if !is_open(&inv, &tx.invoice_payments(id)?) {
            return Ok(None);
        }
        self.void_invoice_in(tx, scope, id)?;
        tx.delete_subscription_cycle(s.id, n, id)?;
        Ok(Some(id))
    }

    /// The period-end step of `s` into cycle `cycle` (see the module), in the caller's
    /// transaction; writes `s` when it changes it. The caller completes its work item (or
    /// reschedules it on [`Step::Early`]). With `charge_now`, the renewal charge is not queued
    /// but left there for the caller, which starts it in this transaction
    /// ([`Engine::start_first_charge`]).
    pub(crate) fn renew_at_period_end(
        &self,
        tx: &mut dyn Tx,
        scope: &Scope,
        s: &mut Subscription,
        cycle: u32,
        now: Timestamp,
        charge_now: Option<&mut Option<DueCharge>>,
    ) -> Result<Step> {
        if s.status.is_terminal() || s.current_cycle_number + 1 != cycle {
            // Over, or renewed already (a run twice): nothing to do.
            return Ok(Step::Done(None));
        }
        if s.current_period_end > now {
            // Early (the item was made before a change of the period): wait for the end.
            return Ok(Step::Early(s.current_period_end));
        }
        if super::freeze::holds_renewal(tx, s)? {
            // Not renewed while not active (activation queues the renewal again), nor at a
            // boundary inside a freeze (its end queues the renewal at the moved boundary).
            return Ok(Step::Done(None));
        }
        let end = s.current_period_end;
        let change = tx.scheduled_plan_change(s.id)?.filter(|c| c.effective_cycle <= cycle);
        if ends_at_period_end(s) {
            if let Some(c) = change {
                self.withdraw_change(tx, s, c, now)?;
            }
            self.withdraw_cycle_invoice(tx, scope, s, cycle)?;
            s.status = SubscriptionStatus::Canceled;
            s.ended_at = Some(end);
            s.updated_at = Some(now);
            tx.update_subscription(s)?;
            super::freeze::on_subscription_ended(tx, s, end, now)?;
            emit(tx, self.public_url(), EventType::SubscriptionCanceled, s, now)?;
            return Ok(Step::Done(Some(ENDED)));
        }
        // The items as stored: written again below only if they change (a plan change).
        let stored_items = s.items.clone();
        if let Some(c) = change {
            self.apply_plan_change(tx, s, c, cycle, end, now)?;
        }
        let (start, next_end) = s.cycle(cycle);
        s.current_cycle_number = cycle;
        s.current_period_start = start;
        s.current_period_end = next_end;
        let (inv, payments) = match tx.subscription_cycle_invoice(s.id, cycle)? {
            Some(id) => {
                // Prepared ahead: it becomes the latest invoice now that its cycle starts.
                let inv = tx.invoice(s.branch_id, id)?.ok_or_else(|| crate::error::Error::not_found("Invoice", id))?;
                let payments = tx.invoice_payments(id)?;
                s.latest_invoice_id = Some(id);
                s.latest_invoice_paid = inv.status == InvoiceStatus::Completed || payments.iter().any(|p| p.status.is_paid());
                s.renewal_failures = 0;
                s.updated_at = Some(now);
                (inv, payments)
            }
            None => {
                let (inv, payment) = self.issue_cycle_invoice(tx, scope, s, cycle, now)?;
                (inv, vec![payment])
            }
        };
        schedule_renewal(tx, s, scope.org.settings.invoice_lead())?;
        let owed = !matches!(inv.status, InvoiceStatus::Completed | InvoiceStatus::Canceled) && !inv.total_amount.is_zero();
        if s.payment_methods.auto_renewal() && owed {
            match charge_now {
                Some(slot) => {
                    *slot = Some(DueCharge {
                        invoice: inv,
                        payments,
                        first_at: start,
                        now,
                    })
                }
                None => queue_charge(tx, s, inv.id, 0, start, start, &scope.org.settings.subscription_renewal_retry_days)?,
            }
        }
        if s.items == stored_items {
            tx.update_subscription_row(s)?;
        } else {
            tx.update_subscription(s)?;
        }
        Ok(Step::Done(Some(RENEWED)))
    }
}
