//! Fan-out of outbox events to deliveries, delivery attempts, the retry schedule and manual
//! retries. The HTTP call itself goes through a [`WebhookTransport`]; no transaction is open
//! while it runs.

use super::batches::{Made, Mode};
use super::{request, Delivery, DeliveryStatus, Endpoint, Outcome, WebhookTransport};
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Code, Error, Result, StoreError};
use crate::event::Event;
use crate::ids::{EventId, OrgId, WorkId};
use crate::store::{Store, Tx};
use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, Handler, WorkReport};
use chrono::Duration;
use serde_json::json;
use uuid::Uuid;

/// Turns one outbox event into deliveries (id = the event's id).
pub const FANOUT_KIND: &str = "webhook.fanout";
/// One delivery's next attempt (id = the delivery's id).
pub const DELIVERY_KIND: &str = "webhook.delivery";

/// What the webhook handlers count in a [`WorkReport`]: deliveries made by fan-outs, attempts
/// that delivered, attempts that failed.
pub const FANNED_OUT: &str = "webhook.fanned_out";
pub const DELIVERED: &str = "webhook.delivered";
pub const FAILED_ATTEMPTS: &str = "webhook.failed_attempts";
/// What the fan-outs of one transaction look up once: organization times and each branch's
/// endpoints (read in that transaction, so as current as reading them per event).
#[derive(Default)]
struct FanOutCache {
    org_now: std::collections::HashMap<OrgId, Timestamp>,
    endpoints: std::collections::HashMap<crate::ids::BranchId, Vec<Endpoint>>,
}

fn lease_lost(id: WorkId) -> Error {
    StoreError::LeaseLost(id).into()
}

fn org_now(tx: &mut dyn Tx, server_now: Timestamp, org: OrgId) -> Result<Timestamp> {
    let offset = tx.org(org)?.map(|o| o.clock_offset_us).unwrap_or(0);
    Ok(server_now + Duration::microseconds(offset))
}
/// Enqueues the fan-out of `e` (id = the event's id, due at its creation) when a live, enabled
/// endpoint of its branch subscribes to its type; part of [`crate::event::record`].
pub(crate) fn enqueue_fan_out(tx: &mut dyn Tx, e: &Event) -> Result<()> {
    let wanted = tx
        .list_webhook_endpoints(e.branch_id)?
        .iter()
        .any(|x| x.enabled && x.deleted_at.is_none() && x.org_id == e.org_id && x.subscribes_to(e.event_type));
    if wanted {
        tx.insert_work(&DueWork::new(WorkId(e.id.0), e.org_id, FANOUT_KIND, e.created_at, json!({})))?;
    }
    Ok(())
}

/// The webhook kinds of due work: the fan-out of events (batched: one transaction for the
/// events of a claim) and delivery attempts (each alone: a slow receiver holds up only itself).
pub(crate) fn work_handlers<S: Store>() -> Vec<Handler<Engine<S>>> {
    vec![
        Handler {
            kind: FANOUT_KIND,
            batched: true,
            ready: |_| true,
            run: |b, items, report| b.fan_out_batch(items, report),
        },
        Handler {
            kind: DELIVERY_KIND,
            batched: false,
            ready: |b| b.webhook_transport().is_some(),
            run: |b, items, report| {
                let Some(t) = b.webhook_transport() else { return };
                for item in items {
                    match b.attempt(item, &*t, Mode::Scheduled) {
                        Ok(Some(true)) => report.add(DELIVERED, 1),
                        Ok(Some(false)) => report.add(FAILED_ATTEMPTS, 1),
                        Ok(None) => {}
                        Err(e) if is_lease_lost(&e) => {}
                        Err(_) => report.errors += 1,
                    }
                }
            },
        },
    ]
}

impl<S: Store> Engine<S> {
    /// Runs fan-out items together, in one transaction (one commit for a batch of events
    /// rather than one each, and a few statements for the batch: see [`Self::fan_out_in`]).
    /// An item whose lease was lost is skipped. When the batch fails, its items run one by
    /// one, so that one bad item holds up only itself.
    fn fan_out_batch(&self, items: &[&DueWork], report: &mut WorkReport) {
        let server_now = self.clock().now();
        match self.store.write_leased(|tx| Self::fan_out_in(tx, items, server_now)) {
            Ok(n) => report.add(FANNED_OUT, n),
            Err(_) if items.len() == 1 => report.errors += 1,
            Err(_) => {
                for item in items {
                    match self.store.write_leased(|tx| Self::fan_out_in(tx, &[*item], server_now)) {
                        Ok(n) => report.add(FANNED_OUT, n),
                        Err(e) if is_lease_lost(&e) => {}
                        Err(_) => report.errors += 1,
                    }
                }
            }
        }
    }

    /// The fan-out of claimed items inside `tx`: completes those whose lease held (one
    /// statement), reads their events (one), each organization's time and each branch's
    /// endpoints (once per batch), and inserts the deliveries and their work items (one
    /// statement each). Returns how many deliveries it made.
    fn fan_out_in(tx: &mut dyn Tx, items: &[&DueWork], server_now: Timestamp) -> Result<usize> {
        let leases: Vec<(WorkId, Option<Timestamp>)> = items.iter().map(|i| (i.id, i.leased_until)).collect();
        let held: std::collections::HashSet<(WorkId, Option<Timestamp>)> = tx.complete_works(&leases)?.into_iter().collect();
        let ids: Vec<EventId> = leases.iter().filter(|l| held.contains(l)).map(|(id, _)| EventId(id.0)).collect();
        if ids.is_empty() {
            return Ok(0);
        }
        let mut events = tx.events_by_ids(&ids)?;
        // In the claim's order (earliest due first), so deliveries are made in event order.
        let order: std::collections::HashMap<EventId, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        events.sort_by_key(|e| order.get(&e.id).copied());
        let mut cache = FanOutCache::default();
        let mut deliveries = Vec::new();
        for ev in &events {
            use std::collections::hash_map::Entry;
            let now = match cache.org_now.entry(ev.org_id) {
                Entry::Occupied(o) => *o.get(),
                Entry::Vacant(v) => *v.insert(org_now(tx, server_now, ev.org_id)?),
            };
            let live = match cache.endpoints.entry(ev.branch_id) {
                Entry::Occupied(o) => o.into_mut(),
                Entry::Vacant(v) => v.insert(tx.list_webhook_endpoints(ev.branch_id)?),
            };
            let subscribed = live.iter().filter(|e| e.enabled && e.org_id == ev.org_id && e.subscribes_to(ev.event_type));
            deliveries.extend(subscribed.map(|e| Delivery {
                id: Uuid::now_v7(),
                org_id: ev.org_id,
                branch_id: ev.branch_id,
                endpoint_id: e.id,
                event_id: ev.id,
                event_type: ev.event_type,
                status: DeliveryStatus::Pending,
                next_attempt_at: Some(now),
                attempts: vec![],
                created_at: now,
                updated_at: now,
            }));
        }
        if deliveries.is_empty() {
            return Ok(0);
        }
        let work: Vec<DueWork> = deliveries
            .iter()
            .map(|d| DueWork::new(WorkId(d.id), d.org_id, DELIVERY_KIND, d.created_at, json!({})))
            .collect();
        tx.insert_webhook_deliveries(&deliveries)?;
        tx.insert_works(&work)?;
        Ok(deliveries.len())
    }

    /// One attempt of a claimed delivery item. `Some(success)` when an attempt was made.
    fn attempt(&self, item: &DueWork, transport: &dyn WebhookTransport, mode: Mode) -> Result<Option<bool>> {
        let manual = matches!(mode, Mode::Manual { .. });
        let id = item.id.0;
        let found = self.delivery_context(id)?;
        let server_now = self.clock().now();
        let (d, endpoint, event) = match found {
            Some((d, Some(e), Some(ev))) if e.enabled && e.deleted_at.is_none() => (d, e, ev),
            Some((d, _, _)) => {
                // Deleted or disabled endpoint (or a vanished event): nothing is sent.
                self.store.write_leased(|tx| {
                    if !tx.complete_work(item.id, item.leased_until)? {
                        return Err(lease_lost(item.id));
                    }
                    let mut d = tx.webhook_delivery(d.id)?.unwrap_or_else(|| d.clone());
                    if matches!(d.status, DeliveryStatus::Pending | DeliveryStatus::Retrying) {
                        d.status = DeliveryStatus::Failed;
                        d.next_attempt_at = None;
                        d.updated_at = org_now(tx, server_now, d.org_id)?;
                        tx.update_webhook_delivery(&d)?;
                    }
                    Ok(())
                })?;
                if manual {
                    return Err(Error::rule(Code::INVALID_STATUS, "the webhook endpoint is disabled or deleted"));
                }
                return Ok(None);
            }
            None => {
                self.store.write_leased(|tx| Ok(tx.complete_work(item.id, item.leased_until)?))?;
                return Ok(None);
            }
        };
        if !manual && matches!(d.status, DeliveryStatus::Delivered | DeliveryStatus::Failed) {
            self.store.write_leased(|tx| Ok(tx.complete_work(item.id, item.leased_until)?))?;
            return Ok(None);
        }
        let unix = server_now.timestamp();
        let (body, headers) = request(&event, d.id, &endpoint.secret_key, unix);
        // An endpoint stored before the destination rule (or while private addresses were
        // allowed) is refused here by its URL; the transport checks the resolved address.
        let refused = (!self.allows_private_webhooks())
            .then(|| super::destination::refuse_url(&endpoint.url))
            .flatten();
        let outcome = match refused {
            Some(why) => Outcome {
                error: Some(format!("not sent: webhooks are sent only to public addresses ({why})")),
                ..Outcome::default()
            },
            None => transport.post(&endpoint.url, &headers, &body, transport.timeout()),
        };
        self.record_attempt(Made {
            item: item.clone(),
            delivery: d,
            outcome,
            mode,
            started: server_now,
            ended: self.clock().now(),
        })
    }

    /// The manual attempt of `billing.webhooks().retry_delivery`: claims the delivery's work
    /// item (making one if it has none) and attempts it now, with no transaction open.
    pub(crate) fn attempt_delivery_now(&self, scope: &crate::auth::Scope, id: Uuid) -> Result<()> {
        let transport = self
            .webhook_transport()
            .ok_or_else(|| Error::rule(Code::SERVICE_ERROR, "this process sends no webhooks (no transport)"))?;
        let server_now = self.clock().now();
        let lease_until = server_now + self.work_lease();
        let (item, prior_due) = self.store.write(|tx| {
            let d = tx
                .webhook_delivery(id)?
                .filter(|d| d.branch_id == scope.branch_id() && d.org_id == scope.org_id())
                .ok_or_else(|| Error::not_found("Webhook delivery", id))?;
            let prior = tx.work(WorkId(d.id))?;
            let prior_due = prior.as_ref().map(|w| w.due_at);
            if prior.is_none() {
                let now = org_now(tx, server_now, d.org_id)?;
                tx.insert_work(&DueWork::new(WorkId(d.id), d.org_id, DELIVERY_KIND, now, json!({})))?;
            }
            let item = tx
                .claim_work(WorkId(d.id), server_now, lease_until)?
                .ok_or_else(|| Error::rule(Code::INVALID_STATUS, "an attempt of this delivery is in progress"))?;
            Ok((item, prior_due))
        })?;
        self.attempt(&item, &*transport, Mode::Manual { prior_due })?;
        Ok(())
    }
}
