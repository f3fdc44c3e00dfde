//! What a store offers for webhooks (part of [`crate::store::Tx`]).

use super::{Delivery, DeliveryFilter, Endpoint};
use crate::error::StoreResult;
use crate::ids::BranchId;
use crate::list::Page;
use uuid::Uuid;

/// Webhook endpoint and delivery reads and writes inside one transaction. (Events reach
/// deliveries through the due-work queue: [`crate::event::record`] enqueues each event's fan-out
/// in the event's own transaction.)
/// A delivery with its endpoint (deleted or not) and its event, either of which may be gone.
pub type DeliveryContext = (Delivery, Option<Endpoint>, Option<crate::event::Event>);

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
    /// [`Self::insert_webhook_delivery`] of every delivery (one statement in stores that can).
    fn insert_webhook_deliveries(&mut self, ds: &[Delivery]) -> StoreResult<()> {
        ds.iter().try_for_each(|d| self.insert_webhook_delivery(d))
    }
    fn webhook_delivery(&mut self, id: Uuid) -> StoreResult<Option<Delivery>>;
    /// What an attempt of the delivery needs, in one lookup: the delivery, its endpoint
    /// (deleted or not) and its event, either of which may be gone.
    fn webhook_delivery_context(&mut self, id: Uuid) -> StoreResult<Option<DeliveryContext>> {
        let Some(d) = self.webhook_delivery(id)? else { return Ok(None) };
        let e = self.webhook_endpoint(d.endpoint_id)?;
        let ev = self.event_by_id(d.event_id)?;
        Ok(Some((d, e, ev)))
    }
    /// [`Self::webhook_delivery_context`] of many deliveries: those found, in any order (one
    /// statement in stores that can, so a batch of attempts reads what it needs at once).
    fn webhook_delivery_contexts(&mut self, ids: &[Uuid]) -> StoreResult<Vec<DeliveryContext>> {
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            found.extend(self.webhook_delivery_context(*id)?);
        }
        Ok(found)
    }
    /// Replaces the status, counts, times and attempts of the delivery.
    fn update_webhook_delivery(&mut self, d: &Delivery) -> StoreResult<()>;
    /// [`Self::update_webhook_delivery`] of every delivery (one statement in stores that can).
    fn update_webhook_deliveries(&mut self, ds: &[Delivery]) -> StoreResult<()> {
        ds.iter().try_for_each(|d| self.update_webhook_delivery(d))
    }
    /// The endpoint's deliveries matching the filter, newest first (`created_at`, then id),
    /// one page of them, with the total across pages.
    fn list_webhook_deliveries(&mut self, endpoint: Uuid, f: &DeliveryFilter, page: u32, limit: u32) -> StoreResult<Page<Delivery>>;
}
