//! Recording notifications, in the caller's transaction: the row and its due-work item (id =
//! the notification's id, due at once), so they commit with the change that causes them.

use super::{Channel, Kind, Notification, Status};
use crate::clock::Timestamp;
use crate::consumer::{CommunicationMethod, Consumer};
use crate::error::Result;
use crate::fields::Language;
use crate::ids::{NotificationId, OrgId, WorkId};
use crate::invoice::Invoice;
use crate::org::Organization;
use crate::store::Tx;
use crate::work::DueWork;
use serde_json::{json, Value};

/// The due-work kind that sends a notification of `channel`.
pub fn work_kind(channel: Channel) -> &'static str {
    match channel {
        Channel::Email => super::send::EMAIL_KIND,
        Channel::Sms => super::send::SMS_KIND,
        Channel::WhatsApp => super::send::WHATSAPP_KIND,
    }
}

/// Where a consumer's notifications go: every channel of its `communication_methods` for which
/// it has contact details (in that order, each once), or, when none does, its e-mail, else its
/// phone by SMS. Empty when it has neither.
pub fn channels_of(c: &Consumer) -> Vec<(Channel, String)> {
    let email = c.email.as_ref().map(|e| e.as_str().to_string());
    let phone = c.phone_number.as_ref().map(|p| p.as_str().to_string());
    let mut out: Vec<(Channel, String)> = Vec::new();
    for m in &c.communication_methods {
        let (channel, to) = match m {
            CommunicationMethod::Email => (Channel::Email, &email),
            CommunicationMethod::Sms => (Channel::Sms, &phone),
            CommunicationMethod::WhatsApp => (Channel::WhatsApp, &phone),
        };
        if let Some(to) = to {
            if !out.iter().any(|(c, _)| *c == channel) {
                out.push((channel, to.clone()));
            }
        }
    }
    if out.is_empty() {
        if let Some(e) = email {
            out.push((Channel::Email, e));
        } else if let Some(p) = phone {
            out.push((Channel::Sms, p));
        }
    }
    out
}

/// A new notification, pending, due now (to be given its channel, recipient, branch and
/// consumer).
fn pending(org: OrgId, kind: Kind, language: Language, payload: Value, now: Timestamp) -> Notification {
    Notification {
        id: NotificationId::new(),
        org_id: org,
        branch_id: None,
        consumer_id: None,
        kind,
        channel: Channel::Email,
        recipient: String::new(),
        language,
        payload,
        status: Status::Pending,
        attempts: vec![],
        next_attempt_at: Some(now),
        created_at: now,
        updated_at: now,
        sent_at: None,
    }
}

/// Records one notification and its item.
pub(crate) fn record(tx: &mut dyn Tx, n: &Notification) -> Result<()> {
    tx.insert_notification(n)?;
    tx.insert_work(&DueWork::new(WorkId(n.id.0), n.org_id, work_kind(n.channel), n.created_at, json!({})))?;
    Ok(())
}

/// Records a consumer notification of `kind` on each of the consumer's channels, unless the
/// organization switched it off or the consumer is deleted or unreachable. `payload` gets the
/// organization's and the consumer's names. Returns how many were recorded.
pub(crate) fn to_consumer(tx: &mut dyn Tx, org: &Organization, c: &Consumer, kind: Kind, mut payload: Value, now: Timestamp) -> Result<usize> {
    if !org.settings.notifies(kind) || c.is_deleted || c.org_id != org.id {
        return Ok(0);
    }
    payload["organization"] = json!(org.name);
    payload["consumer_name"] = json!(c.name);
    let channels = channels_of(c);
    for (channel, recipient) in &channels {
        let n = Notification {
            branch_id: Some(c.branch_id),
            consumer_id: Some(c.id),
            channel: *channel,
            recipient: recipient.clone(),
            ..pending(org.id, kind, c.preferred_language, payload.clone(), now)
        };
        record(tx, &n)?;
    }
    Ok(channels.len())
}

/// [`to_consumer`] about an invoice; the payload names the invoice and its page (`url`, where it is
/// paid). The consumer is read in the transaction.
pub(crate) fn about_invoice(
    tx: &mut dyn Tx,
    org: &Organization,
    public_url: &str,
    inv: &Invoice,
    kind: Kind,
    mut extra: Value,
    now: Timestamp,
) -> Result<usize> {
    // `notify_consumer` is about sending the invoice: its creator sees to that (INVOICE_SENT
    // is recorded when the invoice is made with it, or sent on request). What follows (receipts,
    // reminders, failures) follows the organization's switches.
    if !org.settings.notifies(kind) {
        return Ok(0);
    }
    let Some(c) = tx.consumer(inv.branch_id, inv.consumer_id)? else {
        return Ok(0);
    };
    let mut payload = json!({
        "invoice_id": inv.id,
        "org_invoice_number": inv.org_invoice_number,
        "total_amount": inv.total_amount,
        "currency": inv.currency,
        "url": inv.url(public_url),
    });
    if let (Value::Object(p), Value::Object(e)) = (&mut payload, &mut extra) {
        p.append(e);
    }
    to_consumer(tx, org, &c, kind, payload, now)
}

/// Records an e-mail to a person who is not a consumer (an invited team member).
pub(crate) fn to_person(tx: &mut dyn Tx, org: OrgId, email: &str, language: Language, kind: Kind, payload: Value, now: Timestamp) -> Result<NotificationId> {
    let n = Notification {
        recipient: email.to_string(),
        ..pending(org, kind, language, payload, now)
    };
    record(tx, &n)?;
    Ok(n.id)
}

/// The consumer's SUBSCRIPTION_RENEWAL_FAILED notifications (with the unpaid invoice's page),
/// in the transaction that records the failed renewal (the organization and the invoice are
/// read in it: the renewal handlers have no scope).
pub(crate) fn renewal_failed(
    tx: &mut dyn Tx,
    public_url: &str,
    s: &crate::subscription::Subscription,
    invoice: crate::ids::InvoiceId,
    now: Timestamp,
) -> Result<usize> {
    let Some(org) = tx.org(s.org_id)? else { return Ok(0) };
    let Some(inv) = tx.invoice(s.branch_id, invoice)? else { return Ok(0) };
    about_invoice(
        tx,
        &org,
        public_url,
        &inv,
        Kind::SubscriptionRenewalFailed,
        json!({"subscription_id": s.id}),
        now,
    )
}
