//! Webhook endpoint operations and the delivery log.

use super::{DeliveryFilter, Endpoint, EndpointFields};
use crate::auth::Scope;
use crate::engine::Engine;
use crate::error::{Error, FieldError, Result};
use crate::lane::Lane;
use crate::list::Page;
use crate::store::Store;
use rand::RngCore;
use serde_json::Value;
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
            format!("Value error, webhooks are sent only to public addresses: {why}"),
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

impl<S: Store> Engine<S> {
    pub fn create_webhook_endpoint(&self, scope: &Scope, f: EndpointFields) -> Result<Endpoint> {
        require_webhook_admin(scope)?;
        let now = self.now(scope);
        let url = f.url.ok_or_else(missing_url)?;
        check_destination(self, &url)?;
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

    /// The endpoint if it is live and in the request's branch.
    fn endpoint_in(tx: &mut dyn crate::store::Tx, scope: &Scope, id: Uuid) -> Result<Endpoint> {
        tx.webhook_endpoint(id)?
            .filter(|e| e.branch_id == scope.branch_id() && e.org_id == scope.org_id() && e.deleted_at.is_none())
            .ok_or_else(|| Error::not_found("Webhook", id))
    }

    pub fn get_webhook_endpoint(&self, scope: &Scope, id: Uuid) -> Result<Endpoint> {
        self.store.read(|tx| Self::endpoint_in(tx, scope, id))
    }

    pub fn list_webhook_endpoints(&self, scope: &Scope, page: u32, limit: u32) -> Result<Page<Endpoint>> {
        let all = self.store.read(|tx| Ok(tx.list_webhook_endpoints(scope.branch_id())?))?;
        let total = all.len() as u64;
        // In u64: a far page (`page=2972944846`) is an empty page, not an overflow.
        let skip = usize::try_from(u64::from(page.max(1) - 1) * u64::from(limit)).unwrap_or(usize::MAX);
        let items = all.into_iter().skip(skip).take(limit as usize).collect();
        Ok(Page { items, total, page, limit })
    }

    pub fn update_webhook_endpoint(&self, scope: &Scope, id: Uuid, f: EndpointFields) -> Result<Endpoint> {
        require_webhook_admin(scope)?;
        if let Some(u) = &f.url {
            check_destination(self, u)?;
        }
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut e = Self::endpoint_in(tx, scope, id)?;
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
    pub fn delete_webhook_endpoint(&self, scope: &Scope, id: Uuid) -> Result<()> {
        require_webhook_admin(scope)?;
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut e = Self::endpoint_in(tx, scope, id)?;
            e.deleted_at = Some(now);
            e.enabled = false;
            e.updated_at = Some(now);
            tx.update_webhook_endpoint(&e)?;
            Ok(())
        })
    }

    /// A new `secret_key`; deliveries from now on are signed with it.
    pub fn rotate_webhook_secret(&self, scope: &Scope, id: Uuid) -> Result<Endpoint> {
        require_webhook_admin(scope)?;
        let now = self.now(scope);
        let secret = new_secret();
        self.store.write(|tx| {
            let mut e = Self::endpoint_in(tx, scope, id)?;
            e.secret_key = secret.clone();
            e.updated_at = Some(now);
            tx.update_webhook_endpoint(&e)?;
            Ok(e)
        })
    }

    /// The endpoint's delivery log, each delivery with its event.
    pub fn list_webhook_deliveries(&self, scope: &Scope, endpoint: Uuid, f: &DeliveryFilter, page: u32, limit: u32) -> Result<Page<Value>> {
        self.store.read(|tx| {
            Self::endpoint_in(tx, scope, endpoint)?;
            let p = tx.list_webhook_deliveries(endpoint, f, page, limit)?;
            let mut items = Vec::with_capacity(p.items.len());
            for d in &p.items {
                let ev = tx.event_by_id(d.event_id)?;
                items.push(d.to_json(ev.as_ref()));
            }
            Ok(Page {
                items,
                total: p.total,
                page: p.page,
                limit: p.limit,
            })
        })
    }

    /// A delivery of the request's branch.
    pub fn get_webhook_delivery(&self, scope: &Scope, id: Uuid) -> Result<Value> {
        self.store.read(|tx| {
            let d = tx
                .webhook_delivery(id)?
                .filter(|d| d.branch_id == scope.branch_id() && d.org_id == scope.org_id())
                .ok_or_else(|| Error::not_found("Webhook delivery", id))?;
            let ev = tx.event_by_id(d.event_id)?;
            Ok(d.to_json(ev.as_ref()))
        })
    }
}
