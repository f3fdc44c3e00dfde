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
//!   is `failed` and never retried by itself; [`crate::Billing::retry_webhook_delivery`] sends it
//!   again on request.
//! - The HTTP call is the caller's [`WebhookTransport`]; the rules here are synchronous.

mod deliver;
mod sign;
mod store;

pub use deliver::{Outcome, WebhookTransport, WorkReport, DELIVERY_KIND, FANOUT_KIND, WEBHOOK_KINDS};
pub use sign::{signature, signature_header, verify, verify_at, VerifyError, USER_AGENT};
pub use store::WebhookTx;

use crate::auth::Scope;
use crate::clock::{format_rfc3339, parse_datetime, Timestamp};
use crate::engine::Billing;
use crate::error::{Error, FieldError, Result};
use crate::event::EventType;
use crate::ids::{BranchId, EventId, OrgId};
use crate::list::{Page, Query, QueryParams, DEFAULT_LIMIT, MAX_LIMIT};
use crate::store::Store;
use crate::wire::{enum_item, Body};
use crate::wire_enum;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
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

    /// The endpoint as the API shows it; the secret only when `with_secret` (create, rotate).
    pub fn to_json(&self, with_secret: bool) -> Value {
        let types: Vec<&str> = match &self.event_types {
            Some(ts) => ts.iter().map(|t| t.as_str()).collect(),
            None => EventType::ALL.iter().map(|t| t.as_str()).collect(),
        };
        let mut v = json!({
            "id": self.id,
            "url": self.url,
            "event_types": types,
            "all_event_types": self.event_types.is_none(),
            "description": self.description,
            "enabled": self.enabled,
            "branch_id": self.branch_id,
            "created_at": format_rfc3339(&self.created_at),
            "updated_at": self.updated_at.as_ref().map(format_rfc3339),
        });
        if with_secret {
            v["secret_key"] = json!(self.secret_key);
        }
        v
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

impl Delivery {
    /// The delivery as the API shows it, with its event.
    pub fn to_json(&self, event: Option<&crate::event::Event>) -> Value {
        json!({
            "id": self.id,
            "endpoint_id": self.endpoint_id,
            "event_id": self.event_id,
            "event_type": self.event_type,
            "event": event.map(|e| json!({
                "id": e.id,
                "event_type": e.event_type,
                "entity_type": e.entity_type,
                "entity_id": e.entity_id,
                "created_at": format_rfc3339(&e.created_at),
                "payload": e.payload,
            })),
            "status": self.status,
            "attempt_count": self.attempts.len(),
            "next_attempt_at": self.next_attempt_at.as_ref().map(format_rfc3339),
            "attempts": self.attempts,
            "created_at": format_rfc3339(&self.created_at),
            "updated_at": format_rfc3339(&self.updated_at),
        })
    }
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

/// `status`, `event_type`, `created_from`/`created_to` (date-times or dates), `page`, `limit`.
pub fn parse_delivery_list(params: &QueryParams) -> Result<(DeliveryFilter, u32, u32)> {
    let mut q = Query::new(params);
    let mut f = DeliveryFilter::default();
    if let Some(s) = q.str("status") {
        f.status = DeliveryStatus::parse(s.trim());
        if f.status.is_none() {
            q.fail("enum", "status", format!("Input should be {}", DeliveryStatus::expected()));
        }
    }
    if let Some(s) = q.str("event_type") {
        f.event_type = EventType::parse(s.trim());
        if f.event_type.is_none() {
            q.fail("enum", "event_type", format!("Input should be {}", EventType::expected()));
        }
    }
    for name in ["created_from", "created_to"] {
        if let Some(s) = q.str(name) {
            match parse_datetime(s.trim()) {
                Some(t) if name == "created_from" => f.from = Some(t),
                Some(t) => f.to = Some(t),
                None => q.fail("datetime_parsing", name, "Input should be a valid datetime"),
            }
        }
    }
    let mut page = 1;
    let mut limit = DEFAULT_LIMIT;
    if let Some(p) = q.str("page") {
        match p.trim().parse::<u32>() {
            Ok(n) if n > 0 => page = n,
            _ => q.fail("greater_than", "page", "Input should be an integer greater than 0"),
        }
    }
    if let Some(l) = q.str("limit").or_else(|| q.str("size")) {
        match l.trim().parse::<i64>() {
            Ok(n) if n > 0 => limit = n.min(i64::from(MAX_LIMIT)) as u32,
            _ => q.fail("greater_than", "limit", "Input should be an integer greater than 0"),
        }
    }
    q.finish()?;
    Ok((f, page, limit))
}

/// `page` and `limit` (≤ 100) of a list without sorting options.
pub fn parse_page(params: &QueryParams) -> Result<(u32, u32)> {
    let mut q = Query::new(params);
    let l = q.list((), |_| None, "");
    q.finish()?;
    Ok((l.page, l.limit))
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

/// Only absolute http(s) URLs with a host, no whitespace or control characters.
pub fn check_url(s: &str) -> std::result::Result<String, &'static str> {
    let s = s.trim();
    if s.len() > 2048 {
        return Err("the URL is longer than 2048 characters");
    }
    let rest = if let Some(r) = s.strip_prefix("https://") {
        r
    } else if let Some(r) = s.strip_prefix("http://") {
        r
    } else {
        return Err("the URL must start with http:// or https://");
    };
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the URL must not contain spaces or control characters");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = if let Some(h) = host_port.strip_prefix('[') {
        let (h, p) = h.split_once(']').ok_or("the URL has a malformed host")?;
        (h, p.strip_prefix(':'))
    } else {
        match host_port.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    if host.is_empty() || !host.chars().all(|c| c.is_ascii_alphanumeric() || "-._:".contains(c)) {
        return Err("the URL has no valid host");
    }
    if let Some(p) = port {
        if p.is_empty() || p.parse::<u16>().is_err() {
            return Err("the URL has an invalid port");
        }
    }
    Ok(s.to_string())
}

impl EndpointFields {
    pub fn parse(v: &Value, create: bool) -> Result<Self> {
        let mut b = Body::new(v);
        let url = if create { b.req_str("url") } else { b.opt_str("url") };
        let url = match url.map(|u| check_url(&u)) {
            Some(Ok(u)) => Some(u),
            Some(Err(msg)) => {
                b.fail("url_parsing", "url", format!("Input should be a valid URL, {msg}"));
                None
            }
            None => None,
        };
        let event_types = match b.raw("event_types") {
            None => None,
            Some(Value::String(s)) if s.eq_ignore_ascii_case("all") || s == "*" => Some(None),
            Some(Value::Array(items)) if items.iter().any(|i| i.as_str().is_some_and(|s| s.eq_ignore_ascii_case("all") || s == "*")) => Some(None),
            Some(Value::Array(items)) if items.is_empty() => {
                b.fail("too_short", "event_types", "List should have at least 1 item (or be \"all\")");
                None
            }
            Some(_) => b
                .opt_list("event_types", |v, loc, p| enum_item(v, loc, p, EventType::parse, &EventType::expected()))
                .map(|mut ts| {
                    let mut seen = std::collections::HashSet::new();
                    ts.retain(|t| seen.insert(*t));
                    Some(ts)
                }),
        };
        let description = b.opt_str("description").map(|d| d.trim().to_string());
        if description.as_ref().is_some_and(|d| d.chars().count() > 1000) {
            b.fail("string_too_long", "description", "String should have at most 1000 characters");
        }
        let enabled = b.opt_bool("enabled");
        b.finish()?;
        Ok(EndpointFields {
            url,
            event_types,
            description,
            enabled,
        })
    }
}

fn new_secret() -> String {
    let mut b = [0u8; 32];
    rand::rng().fill_bytes(&mut b);
    format!("whsec_{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>())
}

fn missing_url() -> Error {
    Error::invalid(FieldError::body("missing", "url", "Field required"))
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

impl<S: Store> Billing<S> {
    pub fn create_webhook_endpoint(&self, scope: &Scope, f: EndpointFields) -> Result<Endpoint> {
        require_webhook_admin(scope)?;
        let now = self.now(scope);
        let e = Endpoint {
            id: Uuid::now_v7(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            url: f.url.ok_or_else(missing_url)?,
            event_types: f.event_types.unwrap_or(None),
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
        let items = all.into_iter().skip(((page.max(1) - 1) * limit) as usize).take(limit as usize).collect();
        Ok(Page { items, total, page, limit })
    }

    pub fn update_webhook_endpoint(&self, scope: &Scope, id: Uuid, f: EndpointFields) -> Result<Endpoint> {
        require_webhook_admin(scope)?;
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
