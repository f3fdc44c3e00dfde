//! What happens to a subscription around its invoices being paid: its events, its activation
//! by a paid invoice (and the renewal then queued).

use super::*;
use crate::clock::{format_rfc3339, Timestamp};
use crate::error::Result;
use crate::event::{EntityType, Event, EventType};
use crate::ids::{EventId, SubscriptionId, WorkId};
use crate::invoice::Invoice;
use crate::store::Tx;
use crate::work::DueWork;
use serde_json::json;

/// The work item that renews `s` into cycle `cycle`: one id per subscription and cycle, so
/// scheduling it twice finds the first.
pub(crate) fn renewal_work_id(s: SubscriptionId, cycle: u32) -> WorkId {
    WorkId(uuid::Uuid::from_u128(s.0.as_u128() ^ (u128::from(cycle) << 1 | 1)))
}

/// Queues the renewal into the next cycle at the current period's end, unless it is queued,
/// and (with a lead time) the preparation of the next cycle's invoice `lead` before it.
pub(crate) fn schedule_renewal(tx: &mut dyn Tx, s: &Subscription, lead: chrono::Duration) -> Result<()> {
    let next = s.current_cycle_number + 1;
    let id = renewal_work_id(s.id, next);
    let payload = json!({"branch_id": s.branch_id, "subscription_id": s.id, "cycle": next});
    tx.queue_work_if_absent(&DueWork::new(id, s.org_id, super::RENEWAL_KIND, s.current_period_end, payload))?;
    super::period_end::schedule_prepare(tx, s, lead)
}

/// A SUBSCRIPTION_* event about `s` (its status as it is now); `data` names the subscription,
/// its latest invoice and, for a charge, the payment.
pub fn subscription_event(public_url: &str, t: EventType, s: &Subscription, payment: Option<crate::ids::PaymentId>, now: Timestamp) -> Event {
    Event {
        id: EventId::new(),
        org_id: s.org_id,
        branch_id: s.branch_id,
        event_type: t,
        entity_type: EntityType::Subscription,
        entity_id: s.id.0,
        payload: json!({
            "event_type": t,
            "entity_type": EntityType::Subscription,
            "entity_id": s.id,
            "entity_url": Subscription::api_url(public_url, s.id),
            "status": s.status,
            "data": {
                "subscription": {"id": s.id, "url": Subscription::api_url(public_url, s.id)},
                "invoice": s.latest_invoice_id.map(|id| json!({"id": id, "url": Invoice::api_url(public_url, id)})),
                "payment": payment.map(|id| json!({"id": id, "url": crate::payment::Payment::api_url(public_url, id)})),
                "metadata": {},
                "current_cycle_number": s.current_cycle_number,
                "current_period_start": format_rfc3339(&s.current_period_start),
                "current_period_end": format_rfc3339(&s.current_period_end),
            },
            "timestamp": format_rfc3339(&now),
        }),
        created_at: now,
    }
}

pub(crate) fn emit(tx: &mut dyn Tx, public_url: &str, t: EventType, s: &Subscription, now: Timestamp) -> Result<()> {
    crate::event::record(tx, &subscription_event(public_url, t, s, None, now))
}

/// Whether paying its invoice activates a subscription in `status`.
fn activated_by_payment(status: SubscriptionStatus) -> bool {
    matches!(status, SubscriptionStatus::Inactive | SubscriptionStatus::TrialPending)
}

/// Makes an INACTIVE or TRIAL_PENDING subscription ACTIVE (SUBSCRIPTION_ACTIVATED; then FROZEN when a
/// freeze is in force, [`super::freeze::on_activated`]) and queues its renewal (it
/// is not renewed while inactive). Other statuses are left as they are. Returns whether it
/// changed.
pub(crate) fn activate(tx: &mut dyn Tx, public_url: &str, s: &mut Subscription, now: Timestamp) -> Result<bool> {
    if !activated_by_payment(s.status) {
        return Ok(false);
    }
    s.status = SubscriptionStatus::Active;
    s.started_at.get_or_insert(now);
    s.renewal_failures = 0;
    s.updated_at = Some(now);
    emit(tx, public_url, EventType::SubscriptionActivated, s, now)?;
    super::freeze::on_activated(tx, public_url, s, now)?;
    let lead = tx.org(s.org_id)?.map(|o| o.settings.invoice_lead()).unwrap_or_default();
    schedule_renewal(tx, s, lead)?;
    Ok(true)
}

/// What paying an invoice of a subscription changes (called where payments are recorded, in
/// their transaction): the latest invoice counts as paid, and a fully paid invoice makes an
/// INACTIVE subscription ACTIVE (the first invoice paid, or an overdue renewal paid at last).
pub(crate) fn on_invoice_paid(tx: &mut dyn Tx, public_url: &str, inv: &Invoice, fully: bool, now: Timestamp) -> Result<()> {
    let Some(sid) = inv.subscription_id else { return Ok(()) };
    // The common case, a renewal's invoice paid: its latest invoice is marked paid, and a
    // status that no payment activates needs nothing more (one write, no read).
    let settled: Vec<SubscriptionStatus> = SubscriptionStatus::ALL.iter().copied().filter(|x| !activated_by_payment(*x)).collect();
    if tx.mark_latest_invoice_paid(inv.branch_id, sid.into(), inv.id, &settled, now)? {
        return Ok(());
    }
    // The row is what changes; the items are read only for an activation's event.
    let Some(mut s) = tx.subscription_row(inv.branch_id, sid.into())? else {
        return Ok(());
    };
    let mut changed = false;
    if s.latest_invoice_id == Some(inv.id) && !s.latest_invoice_paid {
        s.latest_invoice_paid = true;
        s.updated_at = Some(now);
        changed = true;
    }
    let activates = activated_by_payment(s.status);
    if fully && (s.latest_invoice_id == Some(inv.id) || s.started_at.is_none()) && activates {
        // SUBSCRIPTION_ACTIVATED carries the items.
        if let Some(whole) = tx.subscription(inv.branch_id, sid.into())? {
            s.items = whole.items;
        }
        changed |= activate(tx, public_url, &mut s, now)?;
    }
    if changed {
        // Neither step changes an item.
        tx.update_subscription_row(&s)?;
    }
    Ok(())
}
