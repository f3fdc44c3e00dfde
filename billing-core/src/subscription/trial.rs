//! Trials' operations and due work: recording a trial and its end, and ending it (the first
//! paid cycle's invoice). The rules are [`billing_model::subscription::trial`]'s.

pub use billing_model::subscription::trial::*;

use super::{Subscription, SubscriptionStatus};
use crate::engine::Engine;
use crate::error::{Error, Result, StoreError};
use crate::ids::SubscriptionId;
use crate::ids::{BranchId, WorkId};
use crate::payment::org_now;
use crate::store::{Store, Tx};
use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, Handler};
use serde::{Deserialize, Serialize};

/// End a trial: issue the first paid cycle's invoice.
pub const TRIAL_END_KIND: &str = "subscription.trial_end";
/// Report key.
pub const TRIAL_ENDED: &str = "subscription.trial_ended";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TrialPayload {
    branch_id: BranchId,
    subscription_id: SubscriptionId,
}

fn item_id(s: SubscriptionId) -> WorkId {
    // Renewal items flip the lowest bit (cycle << 1 | 1); this one is even.
    WorkId(uuid::Uuid::from_u128(s.0.as_u128() ^ 0b110))
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
    matches!(e, Error::Store(StoreError::UniqueViolation(name)) if name == crate::error::constraint::SUBSCRIPTION_CYCLES)
}

impl<S: Store> Engine<S> {
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

pub(crate) fn work_handlers<S: Store>() -> Vec<Handler<Engine<S>>> {
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
