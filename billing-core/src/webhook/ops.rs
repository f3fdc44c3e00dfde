//! Webhook endpoint operations and the delivery log ([`Webhooks`]).

use super::{DeliveryDetail, DeliveryFilter, Endpoint, EndpointFields};
use crate::auth::Scope;
use crate::engine::Engine;
use crate::error::{Error, FieldError, Result};
use crate::lane::Lane;
use crate::list::Page;
use crate::store::Store;
use rand::RngCore;
use uuid::Uuid;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const CREATE: Lane = Lane::Write;
    pub const GET: Lane = Lane::Read;
    pub const LIST: Lane = Lane::Read;
    pub const UPDATE: Lane = Lane::Write;
    pub const DELETE: Lane = Lane::Write;
    pub const ROTATE_SECRET: Lane = Lane::Write;
    pub const LIST_DELIVERIES: Lane = Lane::Read;
    pub const GET_DELIVERY: Lane = Lane::Read;
    /// Sends the delivery now: an HTTP call to the receiver.
    pub const RETRY_DELIVERY: Lane = Lane::Io;
}

fn new_secret() -> String {
    let mut b = [0u8; 32];
    rand::rng().fill_bytes(&mut b);
    format!("whsec_{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>())
}

fn missing_url() -> Error {
    Error::invalid(FieldError::body("missing", "url", "Field required"))
}

/// A 422 at `url` when webhooks may not go to its host (see [`super::destination`]).
fn check_destination<S: Store>(billing: &Engine<S>, url: &str) -> Result<()> {
    if billing.allows_private_webhooks() {
        return Ok(());
    }
    match super::destination::refuse_url(url) {
        Some(why) => Err(Error::invalid(FieldError::body(
            "value_error",
            "url",
            format!(
                "Value error, webhooks are sent only to public addresses: {why} (for a receiver on your own machine in \
                 development, start the server with --webhook-allow-private)"
            ),
        ))),
        None => Ok(()),
    }
}

/// Webhook endpoints decide where an organization's payment data is sent, so only admins
/// (organization or branch) change them or send deliveries again; branch users may read
/// endpoints (never their secrets) and the delivery log.
pub(crate) fn require_webhook_admin(scope: &Scope) -> Result<()> {
    if scope.actor.role == crate::org::Role::BranchUser {
        return Err(Error::forbidden("branch users cannot manage webhooks"));
    }
    Ok(())
}

/// The endpoint if it is live and in the request's branch.
fn endpoint_in(tx: &mut dyn crate::store::Tx, scope: &Scope, id: Uuid) -> Result<Endpoint> {
    tx.webhook_endpoint(id)?
        .filter(|e| e.branch_id == scope.branch_id() && e.org_id == scope.org_id() && e.deleted_at.is_none())
        .ok_or_else(|| Error::not_found("Webhook", id))
}

crate::service!(
    /// Webhook endpoints (create, get, list, update, delete, rotate_secret) and their delivery
    /// log (list_deliveries, get_delivery, retry_delivery).
    Webhooks
);

impl<S: Store> Webhooks<'_, S> {
    pub fn create(&self, scope: &Scope, f: EndpointFields) -> Result<Endpoint> {
        require_webhook_admin(scope)?;
        let now = self.now(scope);
        let url = f.url.ok_or_else(missing_url)?;
        check_destination(self.engine, &url)?;
        let e = Endpoint {
            id: Uuid::now_v7(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            url,
            // Left out: the organization's default (`webhook_defaults`; every type unless set).
            event_types: f.event_types.unwrap_or_else(|| scope.org.settings.webhook_defaults.event_types.clone()),
            description: f.description.filter(|d| !d.is_empty()),
            enabled: f.enabled.unwrap_or(true),
            secret_key: new_secret(),
            created_at: now,
            updated_at: None,
            deleted_at: None,
        };
        self.store.write(|tx| {
            tx.insert_webhook_endpoint(&e)?;
            Ok(e.clone())
        })
    }

    pub fn get(&self, scope: &Scope, id: Uuid) -> Result<Endpoint> {
        self.store.read(|tx| endpoint_in(tx, scope, id))
    }

    pub fn list(&self, scope: &Scope, page: u32, limit: u32) -> Result<Page<Endpoint>> {
        let all = self.store.read(|tx| Ok(tx.list_webhook_endpoints(scope.branch_id())?))?;
        let total = all.len() as u64;
        // In u64: a far page (`page=2972944846`) is an empty page, not an overflow.
        let skip = usize::try_from(u64::from(page.max(1) - 1) * u64::from(limit)).unwrap_or(usize::MAX);
        let items = all.into_iter().skip(skip).take(limit as usize).collect();
        Ok(Page { items, total, page, limit })
    }

    pub fn update(&self, scope: &Scope, id: Uuid, f: EndpointFields) -> Result<Endpoint> {
        require_webhook_admin(scope)?;
        if let Some(u) = &f.url {
            check_destination(self.engine, u)?;
        }
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut e = endpoint_in(tx, scope, id)?;
            if let Some(u) = &f.url {
                e.url = u.clone();
            }
            if let Some(t) = &f.event_types {
                e.event_types = t.clone();
            }
            if let Some(d) = &f.description {
                e.description = Some(d.clone()).filter(|d| !d.is_empty());
            }
            if let Some(en) = f.enabled {
                e.enabled = en;
            }
            e.updated_at = Some(now);
            tx.update_webhook_endpoint(&e)?;
            Ok(e)
        })
    }

    /// Deletes the endpoint; its pending deliveries are not sent (they end `failed` when due).
    pub fn delete(&self, scope: &Scope, id: Uuid) -> Result<()> {
        require_webhook_admin(scope)?;
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut e = endpoint_in(tx, scope, id)?;
            e.deleted_at = Some(now);
            e.enabled = false;
            e.updated_at = Some(now);
            tx.update_webhook_endpoint(&e)?;
            Ok(())
        })
    }

    /// A new `secret_key`; deliveries from now on are signed with it.
    pub fn rotate_secret(&self, scope: &Scope, id: Uuid) -> Result<Endpoint> {
        require_webhook_admin(scope)?;
        let now = self.now(scope);
        let secret = new_secret();
        self.store.write(|tx| {
            let mut e = endpoint_in(tx, scope, id)?;
            e.secret_key = secret.clone();
            e.updated_at = Some(now);
            tx.update_webhook_endpoint(&e)?;
            Ok(e)
        })
    }

    /// The endpoint's delivery log, each delivery with its event (the page's events read in
    /// one batch).
    pub fn list_deliveries(&self, scope: &Scope, endpoint: Uuid, f: &DeliveryFilter, page: u32, limit: u32) -> Result<Page<DeliveryDetail>> {
        self.store.read(|tx| {
            endpoint_in(tx, scope, endpoint)?;
            let p = tx.list_webhook_deliveries(endpoint, f, page, limit)?;
            // One delivery per (endpoint, event): the page's event ids are distinct.
            let ids: Vec<_> = p.items.iter().map(|d| d.event_id).collect();
            let mut events: std::collections::HashMap<_, _> = tx.events_by_ids(&ids)?.into_iter().map(|e| (e.id, e)).collect();
            let mut items = Vec::with_capacity(p.items.len());
            for d in p.items {
                let event = events.remove(&d.event_id);
                items.push(DeliveryDetail { delivery: d, event });
            }
            Ok(Page {
                items,
                total: p.total,
                page: p.page,
                limit: p.limit,
            })
        })
    }

    /// A delivery of the request's branch, with its event.
    pub fn get_delivery(&self, scope: &Scope, id: Uuid) -> Result<DeliveryDetail> {
        self.store.read(|tx| {
            let d = tx
                .webhook_delivery(id)?
                .filter(|d| d.branch_id == scope.branch_id() && d.org_id == scope.org_id())
                .ok_or_else(|| Error::not_found("Webhook delivery", id))?;
            let event = tx.event_by_id(d.event_id)?;
            Ok(DeliveryDetail { delivery: d, event })
        })
    }

    /// Sends a delivery of the request's branch again now (whatever its status) as a new,
    /// manual attempt, and returns it. A delivered one stays delivered; a failed one that fails
    /// again stays failed; a scheduled one keeps its schedule unless this attempt succeeds.
    pub fn retry_delivery(&self, scope: &Scope, id: Uuid) -> Result<DeliveryDetail> {
        require_webhook_admin(scope)?;
        self.attempt_delivery_now(scope, id)?;
        self.get_delivery(scope, id)
    }
}
