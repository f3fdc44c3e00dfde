//! Outbox events of invoices and payments, with the spec's payload (Events, Payload).

use super::Invoice;
use crate::clock::{format_rfc3339, Timestamp};
use crate::event::{EntityType, Event, EventType};
use crate::ids::EventId;
use crate::payment::Payment;
use crate::payment_link::PaymentLink;
use crate::store::Tx;
use serde_json::{json, Value};

/// `metadata` is the custom_metadata of the invoice's payment link (`{}` without one).
fn data(public_url: &str, inv: &Invoice, payment: Option<&Payment>, metadata: &Value) -> Value {
    json!({
        "invoice": {"id": inv.id, "url": Invoice::api_url(public_url, inv.id)},
        "payment": payment.map(|p| json!({"id": p.id, "url": Payment::api_url(public_url, p.id)})),
        "payment_link": inv.payment_link_id.map(|id| json!({"id": id, "url": PaymentLink::api_url(public_url, id.into())})),
        "metadata": metadata,
    })
}

/// The custom_metadata of the invoice's payment link, as the webhook data's `metadata`.
pub(crate) fn link_metadata(tx: &mut dyn Tx, inv: &Invoice) -> crate::Result<Value> {
    let Some(id) = inv.payment_link_id else { return Ok(json!({})) };
    Ok(tx
        .payment_link_metadata(inv.branch_id, id.into())?
        .map(Value::Object)
        .unwrap_or_else(|| json!({})))
}

/// An INVOICE_* event about `inv` (its status as it is now).
pub fn invoice_event(public_url: &str, t: EventType, inv: &Invoice, metadata: &Value, now: Timestamp) -> Event {
    Event {
        id: EventId::new(),
        org_id: inv.org_id,
        branch_id: inv.branch_id,
        event_type: t,
        entity_type: EntityType::Invoice,
        entity_id: inv.id.0,
        payload: json!({
            "event_type": t,
            "entity_type": EntityType::Invoice,
            "entity_id": inv.id,
            "entity_url": Invoice::api_url(public_url, inv.id),
            "status": inv.status,
            "data": data(public_url, inv, None, metadata),
            "timestamp": format_rfc3339(&now),
        }),
        created_at: now,
    }
}

/// A PAYMENT_* event about `p` of `inv`.
pub fn payment_event(public_url: &str, t: EventType, inv: &Invoice, p: &Payment, metadata: &Value, now: Timestamp) -> Event {
    Event {
        id: EventId::new(),
        org_id: inv.org_id,
        branch_id: inv.branch_id,
        event_type: t,
        entity_type: EntityType::Payment,
        entity_id: p.id.0,
        payload: json!({
            "event_type": t,
            "entity_type": EntityType::Payment,
            "entity_id": p.id,
            "entity_url": Payment::api_url(public_url, p.id),
            "status": p.status,
            "data": data(public_url, inv, Some(p), metadata),
            "timestamp": format_rfc3339(&now),
        }),
        created_at: now,
    }
}

/// Writes an invoice event in the current transaction.
pub fn emit_invoice(tx: &mut dyn Tx, public_url: &str, t: EventType, inv: &Invoice, now: Timestamp) -> crate::Result<()> {
    let metadata = link_metadata(tx, inv)?;
    emit_invoice_with(tx, public_url, t, inv, &metadata, now)
}

/// [`emit_invoice`] with the link metadata already in hand ([`link_metadata`]): an operation
/// that records several events of one invoice reads it once.
pub fn emit_invoice_with(tx: &mut dyn Tx, public_url: &str, t: EventType, inv: &Invoice, metadata: &Value, now: Timestamp) -> crate::Result<()> {
    crate::event::record(tx, &invoice_event(public_url, t, inv, metadata, now))
}

pub fn emit_payment(tx: &mut dyn Tx, public_url: &str, t: EventType, inv: &Invoice, p: &Payment, now: Timestamp) -> crate::Result<()> {
    let metadata = link_metadata(tx, inv)?;
    emit_payment_with(tx, public_url, t, inv, p, &metadata, now)
}

/// [`emit_payment`] with the link metadata already in hand.
pub fn emit_payment_with(tx: &mut dyn Tx, public_url: &str, t: EventType, inv: &Invoice, p: &Payment, metadata: &Value, now: Timestamp) -> crate::Result<()> {
    crate::event::record(tx, &payment_event(public_url, t, inv, p, metadata, now))
}
