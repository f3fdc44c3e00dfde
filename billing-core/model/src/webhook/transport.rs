//! What a webhook attempt sends and how it ends: the request (body and signed headers) and the
//! transport that carries it (implemented by the server, and by tests).

use super::sign;
use crate::event::Event;
use uuid::Uuid;

/// How one HTTP attempt ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The response status, if a response came.
    pub status: Option<u16>,
    /// The response body (the log keeps an excerpt).
    pub body: String,
    /// Why no response came (refused, timed out, unsupported scheme, …).
    pub error: Option<String>,
    pub duration: std::time::Duration,
}

impl Outcome {
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// Sends one webhook request (blocking). Implemented by the server (and by tests).
pub trait WebhookTransport: Send + Sync {
    fn post(&self, url: &str, headers: &[(String, String)], body: &[u8], timeout: std::time::Duration) -> Outcome;
    /// How long an attempt may take before it counts as failed.
    fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(10)
    }
    /// How much longer than [`Self::timeout`] a claim of due work holds (recording an attempt
    /// must fit in it); also how soon work of a crashed process is taken over.
    fn lease_margin(&self) -> std::time::Duration {
        std::time::Duration::from_secs(30)
    }
}
/// The request of one attempt: the body (the event's payload as compact JSON) and the headers.
pub fn request(event: &Event, delivery_id: Uuid, secret: &str, unix: i64) -> (Vec<u8>, Vec<(String, String)>) {
    let body = serde_json::to_vec(&event.payload).expect("JSON values serialize");
    let headers = vec![
        ("Content-Type".to_string(), "application/json".to_string()),
        ("User-Agent".to_string(), sign::USER_AGENT.to_string()),
        ("X-Webhook-Event".to_string(), event.event_type.as_str().to_string()),
        ("X-Webhook-Entity-Type".to_string(), event.entity_type.as_str().to_string()),
        ("X-Webhook-Entity-ID".to_string(), event.entity_id.to_string()),
        ("X-Webhook-Signature".to_string(), sign::signature_header(secret, unix, &body)),
        ("X-Webhook-Timestamp".to_string(), unix.to_string()),
        ("X-Webhook-Delivery-ID".to_string(), delivery_id.to_string()),
    ];
    (body, headers)
}
