//! What the API answers of a notification: NotificationView, borrowed from a
//! [`NotificationDetail`] (the notification and its subject as the engine renders it).

use super::{Attempt, Channel, Kind, Notification, Status};
use crate::clock::Timestamp;
use crate::fields::Language;
use crate::ids::{BranchId, ConsumerId, NotificationId};
use crate::schema::{Integer, JsonObject};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// A notification with its subject as it is sent (rendered from its template and payload).
#[derive(Debug, Clone, PartialEq)]
pub struct NotificationDetail {
    pub notification: Notification,
    pub subject: String,
}

/// NotificationView: a customer notification (or an invitation), its status and attempts.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "NotificationView")]
pub struct NotificationView<'a> {
    /// The notification's id.
    pub id: NotificationId,
    /// What the notification says (an invoice sent, a receipt, a reminder, ...).
    pub kind: Kind,
    /// How it is sent: e-mail, SMS or WhatsApp.
    pub channel: Channel,
    /// Where it goes: an e-mail address or an E.164 phone number.
    pub recipient: &'a str,
    /// The language it is written in.
    pub language: Language,
    /// `pending`, `retrying`, `sent`, `failed` (given up) or `canceled` (switched off before
    /// it was sent).
    pub status: Status,
    /// The subject (an e-mail's subject line; for SMS and WhatsApp, the same title).
    pub subject: &'a str,
    /// The consumer it goes to; `null` for an invitation.
    pub consumer_id: Option<ConsumerId>,
    /// The branch of what it is about; `null` for organization-level ones (invitations).
    pub branch_id: Option<BranchId>,
    /// What the template fills in (amounts, numbers, the pay link, the organization's name),
    /// fixed when the notification was recorded.
    #[schemars(with = "JsonObject")]
    pub data: &'a Value,
    /// How many attempts to send it were made (those with result `sent`, `retry` or
    /// `failed`).
    #[schemars(with = "Integer")]
    pub attempt_count: usize,
    /// Each attempt: `number`, `at` (RFC 3339), `result` (`sent`, `retry` or `failed`),
    /// `error`, `provider_id` (the provider's message id) and `duration_ms`.
    #[schemars(with = "Vec<JsonObject>")]
    pub attempts: &'a [Attempt],
    /// When the next attempt is due; `null` when none is scheduled.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub next_attempt_at: Option<Timestamp>,
    /// When it was sent; `null` until then.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub sent_at: Option<Timestamp>,
    /// When it was recorded (with the change that caused it).
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When its status or attempts last changed.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub updated_at: Timestamp,
}

impl NotificationDetail {
    /// NotificationView, borrowed from the notification.
    pub fn view(&self) -> NotificationView<'_> {
        let n = &self.notification;
        NotificationView {
            id: n.id,
            kind: n.kind,
            channel: n.channel,
            recipient: &n.recipient,
            language: n.language,
            status: n.status,
            subject: &self.subject,
            consumer_id: n.consumer_id,
            branch_id: n.branch_id,
            data: &n.payload,
            attempt_count: n
                .attempts
                .iter()
                .filter(|a| a.result == "sent" || a.result == "retry" || a.result == "failed")
                .count(),
            attempts: &n.attempts,
            next_attempt_at: n.next_attempt_at,
            sent_at: n.sent_at,
            created_at: n.created_at,
            updated_at: n.updated_at,
        }
    }
}
