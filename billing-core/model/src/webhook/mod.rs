//! Webhook endpoints, signed delivery of outbox events, retries and the delivery log.
//!
//! - An [`Endpoint`] belongs to a branch and receives that branch's events of the types it
//!   subscribes to (all types when `event_types` is `None`) while it is enabled.
//! - Every event committed to the outbox is fanned out to a [`Delivery`] per subscribed endpoint
//!   (exactly once: the deliveries are created in the transaction that completes the fan-out
//!   work item, and (endpoint, event) is unique), and each delivery is a due-work item
//!   ([`crate::work`]) attempted by whichever process claims it.
//! - A 2xx answer delivers; anything else is retried after [`RETRY_DELAYS_MINUTES`] (5, 30, 120,
//!   360, 720 minutes after the previous attempt, in the organization's time), then the delivery
//!   is `failed` and never retried by itself; `billing.webhooks().retry_delivery` sends it
//!   again on request.
//! - The HTTP call is the caller's [`WebhookTransport`]; the rules here are synchronous.
//!
//! Files: [`ops`] (endpoints and the delivery log), [`deliver`] (fan-out, attempts, retries:
//! the due-work handlers), [`sign`], [`store`] (the [`WebhookTx`] slice), [`wire`] (requests),
//! [`view`] (responses).

pub mod destination;
pub mod sign;
pub mod store;
pub mod transport;
pub mod view;
pub mod wire;

pub use sign::{signature, signature_header, verify, verify_at, VerifyError, USER_AGENT};
pub use store::{DeliveryContext, WebhookTx};
pub use transport::{request, Outcome, WebhookTransport};
pub use view::{DeliveryDetail, DeliveryView, WebhookView};
pub use wire::{check_url, event_types, parse_delivery_list, parse_page};

use crate::clock::Timestamp;
use crate::event::EventType;
use crate::ids::{BranchId, EventId, OrgId};
use crate::wire_enum;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Delays before retries 1 to 5, in minutes after the previous attempt.
pub const RETRY_DELAYS_MINUTES: [i64; 5] = [5, 30, 120, 360, 720];
/// The longest response-body excerpt kept per attempt, in characters.
pub const RESPONSE_EXCERPT_CHARS: usize = 1024;

wire_enum!(DeliveryStatus { Pending = "pending", Delivered = "delivered", Failed = "failed", Retrying = "retrying" });

#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub id: Uuid,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub url: String,
    /// Subscribed types; `None` for all.
    pub event_types: Option<Vec<EventType>>,
    pub description: Option<String>,
    pub enabled: bool,
    pub secret_key: String,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
    pub deleted_at: Option<Timestamp>,
}

impl Endpoint {
    pub fn subscribes_to(&self, t: EventType) -> bool {
        self.event_types.as_ref().is_none_or(|ts| ts.contains(&t))
    }
}

/// One attempt to deliver, as recorded in the delivery log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    /// When it was made (organization time), RFC 3339.
    pub at: String,
    pub response_status: Option<u16>,
    /// The first [`RESPONSE_EXCERPT_CHARS`] characters of the response body.
    pub response_body: Option<String>,
    pub error: Option<String>,
    pub duration_ms: u64,
    /// Sent on request (`POST /webhooks/deliveries/{id}/retry`) rather than by the schedule.
    #[serde(default)]
    pub manual: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// Also the id of the delivery's due-work item.
    pub id: Uuid,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub endpoint_id: Uuid,
    pub event_id: EventId,
    pub event_type: EventType,
    pub status: DeliveryStatus,
    pub next_attempt_at: Option<Timestamp>,
    pub attempts: Vec<Attempt>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Filters of the delivery log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeliveryFilter {
    pub status: Option<DeliveryStatus>,
    pub event_type: Option<EventType>,
    /// `created_at >= from` (organization time).
    pub from: Option<Timestamp>,
    /// `created_at < to`.
    pub to: Option<Timestamp>,
}

/// The body of `POST /webhooks` and `PUT /webhooks/{id}`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointFields {
    pub url: Option<String>,
    /// `Some(None)`: all types (`"all"`, `["*"]` or `null`-free "all" forms).
    pub event_types: Option<Option<Vec<EventType>>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
}
