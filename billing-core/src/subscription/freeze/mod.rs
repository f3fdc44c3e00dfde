//! Freeze periods' operations and due work: creating, moving and ending freezes, the
//! transitions at their start and end, and what they do to renewals. The rules (what a freeze
//! does to the period boundaries, overlaps, the grace of "now") are
//! [`billing_model::subscription::freeze`]'s.

pub use billing_model::subscription::freeze::*;

mod ops;

pub use ops::{lane, Freezes};

use super::ops::{schedule_renewal, subscription_event};
use super::{Subscription, SubscriptionStatus};
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Error, Result, StoreError};
use crate::event::EventType;
use crate::ids::SubscriptionId;
use crate::ids::{BranchId, FreezeId, WorkId};
use crate::payment::org_now;
use crate::store::{Store, Tx};
use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, Handler};
use chrono::Duration;
use serde::{Deserialize, Serialize};

/// Start a freeze (the subscription becomes FROZEN).
pub const FREEZE_START_KIND: &str = "subscription.freeze_start";
/// End a freeze (the subscription is ACTIVE again, its period extended).
pub const FREEZE_END_KIND: &str = "subscription.freeze_end";

/// Report keys.
pub const FROZE: &str = "subscription.froze";
pub const UNFROZE: &str = "subscription.unfroze";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct FreezePayload {
    branch_id: BranchId,
    subscription_id: SubscriptionId,
    freeze_id: FreezeId,
}

fn item_id(f: FreezeId, kind: &str) -> WorkId {
    let bit: u128 = if kind == FREEZE_START_KIND { 0b011 } else { 0b101 };
    WorkId(uuid::Uuid::from_u128(f.0.as_u128() ^ bit))
}

/// Queues (or moves) the freeze's item of `kind` to `due`.
fn queue(tx: &mut dyn Tx, f: &Freeze, kind: &'static str, due: Timestamp) -> Result<()> {
    let id = item_id(f.id, kind);
    let payload = serde_json::to_value(FreezePayload {
        branch_id: f.branch_id,
        subscription_id: f.subscription_id,
        freeze_id: f.id,
    })
    .expect("plain data serializes");
    match tx.work(id)? {
        // Taking the lease of a runner holding it makes that runner's transaction roll back.
        Some(w) => {
            tx.reschedule_work(id, w.leased_until, due, &payload)?;
        }
        None => tx.insert_work(&DueWork::new(id, f.org_id, kind, due, payload))?,
    }
    Ok(())
}

/// Removes the freeze's item of `kind`, if queued.
fn unqueue(tx: &mut dyn Tx, f: &Freeze, kind: &'static str) -> Result<()> {
    let id = item_id(f.id, kind);
    if let Some(w) = tx.work(id)? {
        tx.complete_work(id, w.leased_until)?;
    }
    Ok(())
}

fn emit_freeze(tx: &mut dyn Tx, url: &str, t: EventType, s: &Subscription, f: &Freeze, now: Timestamp) -> Result<()> {
    let mut ev = subscription_event(url, t, s, None, now);
    ev.payload["data"]["freeze"] = serde_json::to_value(f.view()).expect("serializable");
    crate::event::record(tx, &ev)
}

/// The freeze comes into force: FROZEN (an ACTIVE subscription), SUBSCRIPTION_FREEZE_NOW.
fn begin(tx: &mut dyn Tx, url: &str, s: &mut Subscription, f: &mut Freeze, now: Timestamp) -> Result<()> {
    f.state = FreezeState::InForce;
    f.invoice_id = s.latest_invoice_id.or(f.invoice_id);
    f.updated_at = Some(now);
    if s.status == SubscriptionStatus::Active {
        s.status = SubscriptionStatus::Frozen;
    }
    s.updated_at = Some(now);
    tx.update_freeze(f)?;
    tx.update_subscription(s)?;
    unqueue(tx, f, FREEZE_START_KIND)?;
    emit_freeze(tx, url, EventType::SubscriptionFreezeNow, s, f, now)
}

/// The freeze in force ends at `at`: the current period ends `at − start` later (the cycles
/// re-anchored there), a FROZEN
/// subscription is ACTIVE again (its renewal queued at the moved period end),
/// SUBSCRIPTION_UNFREEZE_NOW.
fn finish(tx: &mut dyn Tx, url: &str, s: &mut Subscription, f: &mut Freeze, at: Timestamp, now: Timestamp) -> Result<()> {
    let at = at.max(f.start);
    f.state = FreezeState::Ended;
    f.end = Some(at);
    f.updated_at = Some(now);
    if !s.status.is_terminal() {
        // The current period ends later by the frozen time; the cycles after it follow the
        // calendar from there.
        s.current_period_end += at - f.start;
        s.period_anchor = s.current_period_end;
        s.anchor_cycle = s.current_cycle_number + 1;
    }
    if s.status == SubscriptionStatus::Frozen {
        s.status = SubscriptionStatus::Active;
    }
    s.updated_at = Some(now);
    tx.update_freeze(f)?;
    tx.update_subscription(s)?;
    unqueue(tx, f, FREEZE_END_KIND)?;
    emit_freeze(tx, url, EventType::SubscriptionUnfreezeNow, s, f, now)?;
    if s.status == SubscriptionStatus::Active {
        requeue_renewal(tx, s)?;
    }
    Ok(())
}

/// Applies the subscription's freeze transitions due by `now`, oldest first (a start, then an
/// end, as their items would). Nothing for a subscription that is over.
pub(crate) fn catch_up(tx: &mut dyn Tx, url: &str, s: &mut Subscription, now: Timestamp) -> Result<bool> {
    if s.status.is_terminal() {
        return Ok(false);
    }
    let mut changed = false;
    for mut f in tx.subscription_freezes(s.id)? {
        if f.state == FreezeState::Scheduled && f.start <= now {
            begin(tx, url, s, &mut f, now)?;
            changed = true;
        }
        if f.state == FreezeState::InForce {
            if let Some(end) = f.end.filter(|e| *e <= now) {
                finish(tx, url, s, &mut f, end, now)?;
                changed = true;
            }
        }
    }
    Ok(changed)
}

/// The activation hook: a subscription made ACTIVE (its overdue invoice paid) while a freeze
/// is in force — one that came into force while it was INACTIVE — is FROZEN at once
/// (SUBSCRIPTION_FREEZE_NOW): ACTIVE, its period end inside the freeze would never renew, and
/// nothing would say it is frozen. The caller writes `s`.
pub(crate) fn on_activated(tx: &mut dyn Tx, url: &str, s: &mut Subscription, now: Timestamp) -> Result<()> {
    if s.status != SubscriptionStatus::Active {
        return Ok(());
    }
    if let Some(f) = tx.subscription_freezes(s.id)?.into_iter().find(|f| f.state == FreezeState::InForce) {
        s.status = SubscriptionStatus::Frozen;
        emit_freeze(tx, url, EventType::SubscriptionFreezeNow, s, &f, now)?;
    }
    Ok(())
}

/// The renewal hook: whether the renewal due at `s.current_period_end` must not happen (now).
/// Only an ACTIVE or FROZEN subscription renews, and not at a boundary inside a freeze: that
/// boundary moves when the freeze ends, which queues the renewal again. (A FROZEN subscription
/// whose boundary came before its freeze, renewed late, still renews at that boundary.)
pub(crate) fn holds_renewal(tx: &mut dyn Tx, s: &Subscription) -> Result<bool> {
    if !matches!(s.status, SubscriptionStatus::Active | SubscriptionStatus::Frozen) {
        return Ok(true);
    }
    let boundary = s.current_period_end;
    Ok(tx
        .subscription_freezes(s.id)?
        .iter()
        .any(|f| f.state != FreezeState::Ended && f.covers(boundary)))
}

/// Whether a freeze not ended starts before the current period's end, or at it (the renewal
/// there is held, [`holds_renewal`]): it will move that end, so the next cycle's invoice must
/// not be prepared for the old one.
pub(crate) fn moves_period_end(tx: &mut dyn Tx, s: &Subscription) -> Result<bool> {
    Ok(tx
        .subscription_freezes(s.id)?
        .iter()
        .any(|f| f.state != FreezeState::Ended && f.start <= s.current_period_end))
}

/// Queues the renewal (and, with a lead time, the preparation of the next invoice) at the
/// current period's end, with the organization's lead time.
fn requeue_renewal(tx: &mut dyn Tx, s: &Subscription) -> Result<()> {
    let lead = match tx.org(s.org_id)? {
        Some(org) => org.settings.invoice_lead(),
        None => Duration::zero(),
    };
    schedule_renewal(tx, s, lead)
}

/// The subscription ended at `at` (canceled or out of cycles): a freeze in force ends then
/// (without moving anything), freezes not started are dropped, their items removed. No event
/// (SUBSCRIPTION_CANCELED says it).
pub(crate) fn on_subscription_ended(tx: &mut dyn Tx, s: &Subscription, at: Timestamp, now: Timestamp) -> Result<()> {
    for mut f in tx.subscription_freezes(s.id)? {
        match f.state {
            FreezeState::Ended => continue,
            FreezeState::Scheduled => f.deleted_at = Some(now),
            FreezeState::InForce => {
                f.state = FreezeState::Ended;
                f.end = Some(at.max(f.start));
            }
        }
        f.updated_at = Some(now);
        tx.update_freeze(&f)?;
        unqueue(tx, &f, FREEZE_START_KIND)?;
        unqueue(tx, &f, FREEZE_END_KIND)?;
    }
    Ok(())
}

/// What SubscriptionDetailed shows as `latest_freeze` ([`pick_latest`]); `None` without
/// freezes.
pub(crate) fn latest(tx: &mut dyn Tx, s: SubscriptionId) -> Result<Option<Freeze>> {
    let all = tx.subscription_freezes(s)?;
    Ok(pick_latest(&all).cloned())
}

pub(super) fn not_found(id: FreezeId) -> Error {
    Error::not_found("Freeze", id)
}

impl<S: Store> Engine<S> {
    /// Runs one freeze item: the transitions of the subscription's freezes that are due (the
    /// item's own among them); an item whose time has moved later waits for it.
    fn run_freeze_item(&self, item: &DueWork) -> Result<Option<&'static str>> {
        let Ok(p) = serde_json::from_value::<FreezePayload>(item.payload.clone()) else {
            return self.complete_alone(item);
        };
        let server_now = self.clock().now();
        let url = self.public_url();
        self.store.write(|tx| {
            let now = org_now(tx, item.org_id, server_now)?;
            let complete = |tx: &mut dyn Tx, what| {
                if !tx.complete_work(item.id, item.leased_until)? {
                    return Err(Error::from(StoreError::LeaseLost(item.id)));
                }
                Ok(what)
            };
            let (Some(f), Some(mut s)) = (tx.freeze(p.branch_id, p.freeze_id)?, tx.subscription(p.branch_id, p.subscription_id)?) else {
                return complete(tx, None);
            };
            if s.status.is_terminal() {
                let ended = s.ended_at.unwrap_or(now);
                on_subscription_ended(tx, &s, ended, now)?;
                return complete(tx, None);
            }
            let due = match (item.kind.as_str(), f.state) {
                _ if f.deleted_at.is_some() => None,
                (FREEZE_START_KIND, FreezeState::Scheduled) => Some(f.start),
                (FREEZE_END_KIND, FreezeState::Scheduled | FreezeState::InForce) => f.end,
                _ => None,
            };
            let Some(due) = due else { return complete(tx, None) };
            if due > now {
                if !tx.reschedule_work(item.id, item.leased_until, due, &item.payload)? {
                    return Err(StoreError::LeaseLost(item.id).into());
                }
                return Ok(None);
            }
            // The transitions complete this item (they remove their items) in this transaction;
            // it must still be ours.
            if tx.work(item.id)?.map(|w| w.leased_until) != Some(item.leased_until) {
                return Err(StoreError::LeaseLost(item.id).into());
            }
            catch_up(tx, url, &mut s, now)?;
            if tx.work(item.id)?.is_some() {
                complete(tx, None)?;
            }
            Ok(Some(if item.kind == FREEZE_START_KIND { FROZE } else { UNFROZE }))
        })
    }

    /// Completes an item outside any other work (a payload it cannot read).
    fn complete_alone(&self, item: &DueWork) -> Result<Option<&'static str>> {
        self.store.write_leased(|tx| Ok(tx.complete_work(item.id, item.leased_until)?))?;
        Ok(None)
    }
}

pub(crate) fn work_handlers<S: Store>() -> Vec<Handler<Engine<S>>> {
    let run: fn(&Engine<S>, &[&DueWork], &mut crate::work::WorkReport) = |b, items, report| {
        for item in items {
            match b.run_freeze_item(item) {
                Ok(Some(label)) => report.add(label, 1),
                Ok(None) => {}
                Err(e) if is_lease_lost(&e) => {}
                Err(_) => report.errors += 1,
            }
        }
    };
    vec![
        Handler {
            kind: FREEZE_START_KIND,
            batched: false,
            ready: |_| true,
            run,
        },
        Handler {
            kind: FREEZE_END_KIND,
            batched: false,
            ready: |_| true,
            run,
        },
    ]
}
