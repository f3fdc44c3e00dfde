//! What the API answers of webhooks: Webhook (an endpoint, its secret only on create and
//! rotation) and WebhookDelivery (a delivery with its event and attempts), borrowed from the
//! domain values.

use super::{Attempt, Delivery, DeliveryStatus, Endpoint};
use crate::clock::Timestamp;
use crate::event::{EntityType, Event, EventType};
use crate::ids::{BranchId, EventId};
use crate::schema::{Integer, JsonObject};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

/// Webhook: an endpoint (`secret_key` on create and rotation only).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "Webhook")]
pub struct WebhookView<'a> {
    /// The endpoint's id.
    pub id: Uuid,
    /// Where the events are POSTed (an absolute http(s) URL).
    pub url: &'a str,
    /// The event types the endpoint receives (every type when `all_event_types`).
    pub event_types: &'a [EventType],
    /// Whether the endpoint receives every event type, including types added later.
    pub all_event_types: bool,
    /// The merchant's note about the endpoint.
    pub description: Option<&'a str>,
    /// Whether events are sent to it (a disabled endpoint gets no new deliveries).
    pub enabled: bool,
    /// The branch whose events the endpoint receives.
    pub branch_id: BranchId,
    /// When the endpoint was registered.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the endpoint was last changed; `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
    /// The HMAC key of the signatures (create and rotate-secret only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_key: Option<&'a str>,
}

impl Endpoint {
    /// Webhook, without its secret.
    pub fn view(&self) -> WebhookView<'_> {
        WebhookView {
            id: self.id,
            url: &self.url,
            event_types: self.event_types.as_deref().unwrap_or(EventType::ALL),
            all_event_types: self.event_types.is_none(),
            description: self.description.as_deref(),
            enabled: self.enabled,
            branch_id: self.branch_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
            secret_key: None,
        }
    }

    /// Webhook with its `secret_key` (the answer of create and rotate-secret).
    pub fn view_with_secret(&self) -> WebhookView<'_> {
        WebhookView {
            secret_key: Some(&self.secret_key),
            ..self.view()
        }
    }
}

/// A delivery with its event (`None` if the event is gone).
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryDetail {
    pub delivery: Delivery,
    pub event: Option<Event>,
}

/// WebhookDelivery: one event sent to one endpoint, with its attempts.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "WebhookDelivery")]
pub struct DeliveryView<'a> {
    /// The delivery's id.
    pub id: Uuid,
    /// The endpoint it goes to.
    pub endpoint_id: Uuid,
    /// The event it carries.
    pub event_id: EventId,
    /// The event's type.
    pub event_type: EventType,
    /// The event: `id`, `event_type`, `entity_type`, `entity_id`, `created_at` and `payload`
    /// (the body POSTed to the endpoint); `null` if the event is gone.
    #[schemars(with = "Option<JsonObject>")]
    pub event: Option<EventView<'a>>,
    /// `pending`, `retrying`, `delivered` or `failed` (given up; it can be sent again on
    /// request).
    pub status: DeliveryStatus,
    /// How many attempts were made.
    #[schemars(with = "Integer")]
    pub attempt_count: usize,
    /// When the next scheduled attempt is due; `null` when none is.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub next_attempt_at: Option<Timestamp>,
    /// Each attempt: `number`, `at` (RFC 3339), `response_status`, `response_body` (its
    /// first 1024 characters), `error`, `duration_ms` and `manual` (sent on request).
    #[schemars(with = "Vec<JsonObject>")]
    pub attempts: &'a [Attempt],
    /// When the delivery was created (when its event was fanned out).
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When its status or attempts last changed.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub updated_at: Timestamp,
}

/// The event inside a WebhookDelivery.
#[derive(Debug, Serialize)]
pub struct EventView<'a> {
    pub id: EventId,
    pub event_type: EventType,
    pub entity_type: EntityType,
    pub entity_id: Uuid,
    #[serde(with = "crate::clock::wire_time")]
    pub created_at: Timestamp,
    pub payload: &'a Value,
}

impl DeliveryDetail {
    /// WebhookDelivery, borrowed from the delivery and its event.
    pub fn view(&self) -> DeliveryView<'_> {
        let d = &self.delivery;
        DeliveryView {
            id: d.id,
            endpoint_id: d.endpoint_id,
            event_id: d.event_id,
            event_type: d.event_type,
            event: self.event.as_ref().map(|e| EventView {
                id: e.id,
                event_type: e.event_type,
                entity_type: e.entity_type,
                entity_id: e.entity_id,
                created_at: e.created_at,
                payload: &e.payload,
            }),
            status: d.status,
            attempt_count: d.attempts.len(),
            next_attempt_at: d.next_attempt_at,
            attempts: &d.attempts,
            created_at: d.created_at,
            updated_at: d.updated_at,
        }
    }
}
