//! Link payments in flight: recorded before the gateway is called, finished exactly once.
//!
//! Paying a link follows the gateway-attempt pattern of [`crate::payment`] (record, call with
//! no transaction open, record the outcome), with one difference: nothing of the payment exists
//! before the gateway approves (a failed payment creates no consumer, invoice or payment). So the
//! attempt is its own row, [`LinkAttempt`], with a due-work item of kind [`LINK_CHARGE_KIND`]
//! (same id) due [`ATTEMPT_TIMEOUT`] later:
//!
//! - the row is unique per link and session (the link's consumer, or the contact the payer
//!   gave): a second attempt of the same payer while one is in flight is `DUPLICATE_PAYMENT`, and
//!   attempts in flight count against `max_number_of_payments`;
//! - the outcome is recorded only by whoever deletes the row: the request, or the item's handler
//!   when the request never came back (a crash, a gateway that never answered). The handler
//!   records the attempt failed (PAYMENT_LINK_PAY_ATTEMPT_FAILED) and voids the charge at the
//!   gateway by its reference until the gateway confirms, so a late approval is never recorded
//!   and never kept;
//! - an unclear gateway answer (an error or time-out: [`GatewayOutcome::is_unclear`]) is
//!   recorded failed at once and its item is left to void the charge the same way.

use super::{LinkAttempt, PaymentLink, PaymentLinkStatus};
use crate::clock::{format_rfc3339, Timestamp};
use crate::engine::Engine;
use crate::error::{Result, StoreError};
use crate::event::{EntityType, Event, EventType};
use crate::ids::{BranchId, EventId, PaymentLinkId};
use crate::payment::gateway::GatewayOutcome;
use crate::payment::{org_now, ATTEMPT_TIMEOUT};
use crate::store::{Store, Tx};
use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, Handler};
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

/// A link charge whose outcome was not recorded in time: give it up and void it (id = the
/// attempt's id).
pub const LINK_CHARGE_KIND: &str = "payment_link.charge";
/// What the handler counts in a [`crate::work::WorkReport`].
pub const LINK_CHARGES_ABANDONED: &str = "payment_link.charges_abandoned";

/// The payload of an attempt's work item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Recorded {
    pub branch_id: BranchId,
    pub link_id: PaymentLinkId,
    pub reference: String,
    /// Already recorded failed: only the void is left.
    #[serde(default)]
    pub abandoned: bool,
    /// The server time (not the organization's) at which the attempt was recorded: the handler
    /// leaves an attempt alone until it is one work lease old in server time, as it does a card
    /// charge's (see [`crate::payment`]'s attempts).
    #[serde(default)]
    pub started: Option<Timestamp>,
}

impl Recorded {
    fn of(item: &DueWork) -> Option<Self> {
        serde_json::from_value(item.payload.clone()).ok()
    }
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("plain data serializes")
    }
    /// The item that stands for the attempt until its outcome is recorded.
    pub fn item(&self, a: &LinkAttempt) -> DueWork {
        DueWork::new(
            crate::ids::WorkId(a.id),
            a.org_id,
            LINK_CHARGE_KIND,
            a.created_at + ATTEMPT_TIMEOUT,
            self.to_value(),
        )
    }
}

/// The link payment kinds of due work.
pub(crate) fn work_handlers<S: Store>() -> Vec<Handler<Engine<S>>> {
    vec![Handler {
        kind: LINK_CHARGE_KIND,
        batched: false,
        ready: |_| true,
        run: |b, items, report| {
            for item in items {
                match b.finish_abandoned_link_charge(item) {
                    Ok(true) => report.add(LINK_CHARGES_ABANDONED, 1),
                    Ok(false) => {}
                    Err(e) if is_lease_lost(&e) => {}
                    Err(_) => report.errors += 1,
                }
            }
        },
    }]
}

/// Writes PAYMENT_LINK_PAY_ATTEMPT_FAILED: a failed link payment creates nothing else, so this
/// is how the organization hears of it.
pub(crate) fn emit_attempt_failed(
    tx: &mut dyn Tx,
    public_url: &str,
    l: &PaymentLink,
    attempt: Uuid,
    status: &str,
    o: &GatewayOutcome,
    now: Timestamp,
) -> Result<()> {
    let t = EventType::PaymentLinkPayAttemptFailed;
    let url = PaymentLink::api_url(public_url, l.id);
    let e = Event {
        id: EventId::new(),
        org_id: l.org_id,
        branch_id: l.branch_id,
        event_type: t,
        entity_type: EntityType::PaymentLink,
        entity_id: l.id.0,
        payload: json!({
            "event_type": t,
            "entity_type": EntityType::PaymentLink,
            "entity_id": l.id,
            "entity_url": url,
            "status": l.status,
            "data": {
                "invoice": null,
                "payment": null,
                "payment_link": {"id": l.id, "url": url},
                "metadata": l.custom_metadata,
                "attempt": {"id": attempt, "status": status, "code": o.code, "message": o.message},
            },
            "timestamp": format_rfc3339(&now),
        }),
        created_at: now,
    };
    crate::event::record(tx, &e)
}

impl<S: Store> Engine<S> {
    /// The handler of a link charge nobody recorded: records it failed (if the request has
    /// not), then voids it at the gateway; the item stays until the gateway confirms the void.
    /// Returns whether this run gave the charge up.
    fn finish_abandoned_link_charge(&self, item: &DueWork) -> Result<bool> {
        let Some(mut rec) = Recorded::of(item) else {
            self.store.write_leased(|tx| Ok(tx.complete_work(item.id, item.leased_until)?))?;
            return Ok(false);
        };
        let server_now = self.clock().now();
        let mut abandoned = false;
        // The claim's lease, until the first step below gives it back.
        let mut lease = item.leased_until;
        if !rec.abandoned && rec.started.is_some_and(|t| server_now < t + self.work_lease()) {
            // The organization's clock passed the time-out, but the request may still be at
            // the gateway (a sandbox clock jumped): the item stays held by this claim, and the
            // request's outcome ends it.
            return Ok(false);
        }
        if !rec.abandoned {
            let attempt = item.id.0;
            let gave_up = self.store.write(|tx| {
                let now = org_now(tx, item.org_id, server_now)?;
                let held = tx.delete_link_attempt(attempt)?;
                if held {
                    if let Some(l) = tx.payment_link(rec.branch_id, rec.link_id)? {
                        let o = GatewayOutcome::of("TIMEOUT", "No answer from the gateway in time: the payment was canceled");
                        emit_attempt_failed(tx, self.public_url(), &l, attempt, "failed_internal_error", &o, now)?;
                    }
                }
                let next = Recorded {
                    abandoned: true,
                    ..rec.clone()
                };
                if !tx.reschedule_work(item.id, item.leased_until, now, &next.to_value())? {
                    return Err(StoreError::LeaseLost(item.id).into());
                }
                Ok(held)
            })?;
            if !gave_up {
                // The request recorded the outcome after all: nothing to void.
                self.store.write_leased(|tx| Ok(tx.complete_work(item.id, None)?))?;
                return Ok(false);
            }
            abandoned = true;
            rec.abandoned = true;
            lease = None;
        }
        self.void_abandoned(item, lease, &rec.reference, &rec.to_value())?;
        Ok(abandoned)
    }
}

/// Whether the link has taken all the payments it accepts.
pub(crate) fn used_up(l: &PaymentLink) -> bool {
    l.max_number_of_payments.is_some_and(|max| l.payments_count >= max)
}

/// The link after one more payment: COMPLETED once used up.
pub(crate) fn count_payment(l: &mut PaymentLink, now: Timestamp) {
    l.payments_count += 1;
    if used_up(l) {
        l.status = PaymentLinkStatus::Completed;
    }
    l.updated_at = Some(now);
}
