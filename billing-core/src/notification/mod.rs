//! Messages to send to people (invitations, invoices), recorded in the same transaction as the
//! change that causes them; a sender picks them up.

mod store;

pub use store::NotificationTx;

use crate::clock::Timestamp;
use crate::fields::Language;
use crate::ids::{BranchId, NotificationId, OrgId};
use crate::wire_enum;

wire_enum!(Channel { Email = "EMAIL", Sms = "SMS", WhatsApp = "WHATSAPP" });

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub id: NotificationId,
    pub org_id: OrgId,
    pub branch_id: Option<BranchId>,
    pub channel: Channel,
    pub recipient: String,
    /// What to say, e.g. `ORGANIZATION_INVITE`.
    pub template: String,
    pub language: Language,
    pub payload: serde_json::Value,
    pub created_at: Timestamp,
    pub sent_at: Option<Timestamp>,
}
