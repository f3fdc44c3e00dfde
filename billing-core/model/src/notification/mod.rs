//! Messages to people: consumers (invoice sent, payment receipt, installment reminder and
//! failure, failed subscription renewal) and invited team members (the invitation).
//!
//! - A [`Notification`] is recorded in the same transaction as the change that causes it,
//!   together with its due-work item ([`crate::work`]; the item's id is the notification's),
//!   so it commits with the change or not at all, and no committed one is lost.
//! - The item is sent by whichever process claims it, with no transaction open, through the
//!   [`NotificationSender`] of its channel (e-mail over SMTP, SMS and WhatsApp through an HTTP
//!   provider: the server's). Each channel is its own kind of due work (`notification.email`,
//!   …), claimed only by a process that has a sender for it, so a process without SMTP leaves
//!   e-mails to one that has it.
//! - A failed attempt is retried after [`RETRY_DELAYS_MINUTES`] (in the organization's time),
//!   then the notification is `failed`. A refusal the provider says is final (an SMTP 5xx, an
//!   HTTP 4xx other than 408 and 429) fails it at once. A notification not sent within
//!   [`MAX_AGE_HOURS`] of its creation is `failed` ("expired") rather than sent late.
//!   At least once: a process that dies after the provider took the message but before the
//!   attempt was recorded sends it again when the lease runs out.
//! - Consumer notifications go to every channel of the consumer's `communication_methods` for
//!   which it has contact details (e-mail; phone for SMS and WhatsApp), or, when none does, to
//!   its e-mail or else its phone by SMS; in its preferred language ([`template`]).
//! - They are on by default; support switches them off for an organization (the
//!   `consumer_notifications` setting), admins per kind ([`NotificationSwitches`]). An invoice
//!   created with `notify_consumer: false` is not sent (no INVOICE_SENT) until it is sent on
//!   request (`POST /invoices/{id}/send`); receipts, reminders and failures about it follow the
//!   switches. A switch is read when a notification would be recorded and again before it is
//!   sent.
//!
//! Files: [`queue`] (recording), [`send`] (the due-work handlers, attempts, retries),
//! [`reminder`] (installment reminders), [`template`] (texts), [`ops`] (the API), [`store`].

pub mod sender;
pub mod store;
pub mod template;
pub mod view;
pub mod wire;

pub use sender::{Delivery, Message, NotificationSender};
pub use store::NotificationTx;
pub use view::{NotificationDetail, NotificationView};
pub use wire::parse_notification_list;

use crate::clock::Timestamp;
use crate::fields::Language;
use crate::ids::{BranchId, ConsumerId, NotificationId, OrgId};
use crate::wire_enum;
use serde::{Deserialize, Serialize};

wire_enum!(Channel { Email = "EMAIL", Sms = "SMS", WhatsApp = "WHATSAPP" });

wire_enum!(
    /// What a notification says.
    Kind {
        InvoiceSent = "INVOICE_SENT",
        PaymentReceipt = "PAYMENT_RECEIPT",
        InstallmentReminder = "INSTALLMENT_REMINDER",
        InstallmentFailed = "INSTALLMENT_FAILED",
        SubscriptionRenewalFailed = "SUBSCRIPTION_RENEWAL_FAILED",
        OrganizationInvite = "ORGANIZATION_INVITE",
    }
);

wire_enum!(
    /// `pending` (no attempt yet), `retrying` (an attempt failed, another is scheduled),
    /// `sent`, `failed` (given up), `canceled` (switched off before it was sent).
    Status { Pending = "pending", Retrying = "retrying", Sent = "sent", Failed = "failed", Canceled = "canceled" }
);

impl Status {
    /// Whether nothing more happens to it.
    pub fn is_final(self) -> bool {
        matches!(self, Status::Sent | Status::Failed | Status::Canceled)
    }
}

/// Delays before retries 1 to 6, in minutes after the previous attempt (about 17 hours in all).
pub const RETRY_DELAYS_MINUTES: [i64; 6] = [1, 5, 15, 60, 240, 720];
/// A notification not sent this long after it was made is not sent any more.
pub const MAX_AGE_HOURS: i64 = 72;
/// The longest provider error kept per attempt, in characters.
pub const ERROR_CHARS: usize = 500;

/// One attempt to send, as the notification's log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    /// When it was made (organization time), RFC 3339.
    pub at: String,
    /// `sent`, `retry` (failed, tried again later) or `failed` (failed for good).
    pub result: String,
    pub error: Option<String>,
    /// The provider's id of the message (the SMTP server's queue answer, the SMS provider's
    /// message id), when it gave one.
    pub provider_id: Option<String>,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// Also the id of its due-work item.
    pub id: NotificationId,
    pub org_id: OrgId,
    /// The branch of what it is about; `None` for organization-level ones (invitations).
    pub branch_id: Option<BranchId>,
    /// The consumer it goes to (`None` for invitations).
    pub consumer_id: Option<ConsumerId>,
    pub kind: Kind,
    pub channel: Channel,
    /// An e-mail address or an E.164 phone number.
    pub recipient: String,
    pub language: Language,
    /// What the template fills in (amounts, numbers, the pay link, the organization's name),
    /// fixed when it is recorded.
    pub payload: serde_json::Value,
    pub status: Status,
    pub attempts: Vec<Attempt>,
    pub next_attempt_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub sent_at: Option<Timestamp>,
}

/// Filters of `GET /notifications`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NotificationFilter {
    pub statuses: Vec<Status>,
    pub channels: Vec<Channel>,
    pub kinds: Vec<Kind>,
    pub consumer_id: Option<ConsumerId>,
    /// `created_at >= from` (organization time).
    pub from: Option<Timestamp>,
    /// `created_at < to`.
    pub to: Option<Timestamp>,
}

wire_enum!(NotificationSort { CreatedAt = "created_at", UpdatedAt = "updated_at", Status = "status", Kind = "kind", Channel = "channel" });

/// Which notifications a list covers: a branch's, and the organization-level ones too (for
/// organization admins).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NotificationScope {
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub with_org_level: bool,
}

/// Sorting and paging of a notification list.
pub type NotificationQuery = crate::list::ListQuery<NotificationSort>;

/// Per-kind switches of consumer notifications (organization admins change them); all on by
/// default. Invitations are not switchable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NotificationSwitches {
    pub invoice_sent: bool,
    pub payment_receipt: bool,
    pub installment_reminder: bool,
    pub installment_failed: bool,
    pub subscription_renewal_failed: bool,
}

impl Default for NotificationSwitches {
    fn default() -> Self {
        NotificationSwitches {
            invoice_sent: true,
            payment_receipt: true,
            installment_reminder: true,
            installment_failed: true,
            subscription_renewal_failed: true,
        }
    }
}

impl NotificationSwitches {
    /// The switch of `kind`, or `None` for a kind that is not switchable (invitations).
    pub fn get(&self, kind: Kind) -> Option<bool> {
        Some(match kind {
            Kind::InvoiceSent => self.invoice_sent,
            Kind::PaymentReceipt => self.payment_receipt,
            Kind::InstallmentReminder => self.installment_reminder,
            Kind::InstallmentFailed => self.installment_failed,
            Kind::SubscriptionRenewalFailed => self.subscription_renewal_failed,
            Kind::OrganizationInvite => return None,
        })
    }

    pub fn slot(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "invoice_sent" => &mut self.invoice_sent,
            "payment_receipt" => &mut self.payment_receipt,
            "installment_reminder" => &mut self.installment_reminder,
            "installment_failed" => &mut self.installment_failed,
            "subscription_renewal_failed" => &mut self.subscription_renewal_failed,
            _ => return None,
        })
    }

    pub const NAMES: &'static [&'static str] = &[
        "invoice_sent",
        "payment_receipt",
        "installment_reminder",
        "installment_failed",
        "subscription_renewal_failed",
    ];
}

/// Days before a later installment's due date that its reminder goes out, unless set.
pub const DEFAULT_REMINDER_DAYS: u32 = 3;
/// The most days ahead a reminder may be set to.
pub const MAX_REMINDER_DAYS: u32 = 30;
