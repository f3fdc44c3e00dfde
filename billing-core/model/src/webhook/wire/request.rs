//! What the webhook requests look like, for `/openapi.json` (the readers of [`super`] are the
//! truth; the server's tests check that each reads exactly these fields). A file of its own:
//! the documents name `crate::schema`, which names every resource's closed sets, and the
//! readers are imported by other resources (payment links check URLs with them).

use crate::event::EventType;
use crate::schema::{DateTime, PageNumber, PageSize, Url};
use crate::webhook::DeliveryStatus;
use schemars::JsonSchema;

/// WebhookCreate: `event_types` is a list of event types, or `"all"`.
#[derive(JsonSchema)]
pub struct WebhookCreate {
    /// Where to POST the events: an absolute http(s) URL of a public host.
    pub url: Url,
    /// The event types to receive (default: the organization's `webhook_defaults`, every
    /// type unless set).
    pub event_types: Option<WebhookEventTypes>,
    /// A note about the endpoint (at most 1000 characters).
    pub description: Option<String>,
    /// Whether events are sent to it (default true).
    pub enabled: Option<bool>,
}

/// WebhookUpdate: the given fields change.
#[derive(JsonSchema)]
pub struct WebhookUpdate {
    /// Where to POST the events.
    pub url: Option<Url>,
    /// The event types to receive.
    pub event_types: Option<WebhookEventTypes>,
    /// A note about the endpoint (an empty one removes it).
    pub description: Option<String>,
    /// Whether events are sent to it.
    pub enabled: Option<bool>,
}

/// Event types of an endpoint: a non-empty list (duplicates are dropped), or `"all"`.
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum WebhookEventTypes {
    List(Vec<EventType>),
    All(AllEvents),
}

/// `"all"`: every event type, including types added later.
#[derive(JsonSchema)]
pub enum AllEvents {
    #[serde(rename = "all")]
    All,
}

/// A webhook's delivery log.
#[derive(JsonSchema)]
pub struct DeliveryListQuery {
    /// Page number (from 1).
    pub page: Option<PageNumber>,
    /// Page size (1 to 100, default 10).
    pub limit: Option<PageSize>,
    /// The page size under the name some SDKs send (`limit` wins).
    pub size: Option<PageSize>,
    /// Only deliveries in this status.
    pub status: Option<DeliveryStatus>,
    /// Only deliveries of this event type.
    pub event_type: Option<EventType>,
    /// Created at or after this date-time (or date), in the organization's time.
    pub created_from: Option<DateTime>,
    /// Created before this date-time (or date).
    pub created_to: Option<DateTime>,
}
