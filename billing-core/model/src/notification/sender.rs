//! What a notification sender is given and how a send ends: the sender a host plugs in (the
//! server's SMTP and SMS/WhatsApp clients, and tests).

use super::template::Rendered;
use super::{Channel, Kind};
use crate::fields::Language;
use crate::ids::NotificationId;

/// One message to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: NotificationId,
    pub kind: Kind,
    pub channel: Channel,
    /// An e-mail address, or an E.164 phone number for SMS and WhatsApp.
    pub to: String,
    pub language: Language,
    /// The organization's name (an e-mail's sender name).
    pub organization: String,
    pub texts: Rendered,
}

/// How a send ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivery {
    /// The provider took the message (its id for it, when it gave one).
    Sent { provider_id: Option<String> },
    /// It failed in a way that may pass (no connection, a time-out, a 4xx SMTP answer, an HTTP
    /// 5xx, 408 or 429): tried again later.
    Retry(String),
    /// The provider refused it for good (an SMTP 5xx, an HTTP 4xx): not tried again.
    Refused(String),
}

/// Sends messages of one channel (blocking). Implemented by the server (SMTP, the SMS
/// provider) and by tests.
pub trait NotificationSender: Send + Sync {
    fn send(&self, m: &Message) -> Delivery;
    /// The longest a send may take (a claim's lease covers it).
    fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(10)
    }
}
