//! What a store offers for webhooks (part of [`crate::store::Tx`]).

use super::{Delivery, DeliveryFilter, Endpoint};
use crate::ids::BranchId;
use crate::list::Page;
use crate::store::StoreResult;
use uuid::Uuid;

/// Webhook endpoint and delivery reads and writes inside one transaction. (Events reach
/// deliveries through the due-work queue: [`crate::event::record`] enqueues each event's fan-out
/// in the event's own transaction.)
pub trait WebhookTx: crate::event::EventTx {
    fn insert_webhook_endpoint(&mut self, e: &Endpoint) -> StoreResult<()>;
    /// The endpoint with this id, deleted or not, of any branch.
    fn webhook_endpoint(&mut self, id: Uuid) -> StoreResult<Option<Endpoint>>;
    /// Replaces every stored field of the endpoint.
    fn update_webhook_endpoint(&mut self, e: &Endpoint) -> StoreResult<()>;
    /// The branch's live (not deleted) endpoints, oldest first (ties by id).
    fn list_webhook_endpoints(&mut self, branch: BranchId) -> StoreResult<Vec<Endpoint>>;
    /// Inserts a delivery; a second delivery of one event to one endpoint is a
    /// `UniqueViolation` of `webhook_deliveries_endpoint_event_key`.
    fn insert_webhook_delivery(&mut self, d: &Delivery) -> StoreResult<()>;
    fn webhook_delivery(&mut self, id: Uuid) -> StoreResult<Option<Delivery>>;
    /// What an attempt of the delivery needs, in one lookup: the delivery, its endpoint
    /// (deleted or not) and its event, either of which may be gone.
    #[allow(clippy::type_complexity)]
    fn webhook_delivery_context(&mut self, id: Uuid) -> StoreResult<Option<(Delivery, Option<Endpoint>, Option<crate::event::Event>)>> {
        let Some(d) = self.webhook_delivery(id)? else { return Ok(None) };
        let e = self.webhook_endpoint(d.endpoint_id)?;
        let ev = self.event_by_id(d.event_id)?;
        Ok(Some((d, e, ev)))
    }
    /// Replaces the status, counts, times and attempts of the delivery.
    fn update_webhook_delivery(&mut self, d: &Delivery) -> StoreResult<()>;
    /// The endpoint's deliveries matching the filter, newest first (`created_at`, then id),
    /// one page of them, with the total across pages.
    fn list_webhook_deliveries(&mut self, endpoint: Uuid, f: &DeliveryFilter, page: u32, limit: u32) -> StoreResult<Page<Delivery>>;
}
