//! Renewal: the due-work handlers that move a subscription from one cycle to the next, due in
//! the organization's time (so the sandbox clock drives them and any process may run them).
//!
//! - [`RENEWAL_KIND`] (one item per subscription and next cycle, due at the current period's
//!   end) and [`super::PREPARE_KIND`] (the next cycle's invoice, a lead time before it): each
//!   runs its step of [`super::period_end`] in one transaction that also completes the item.
//!   The store's `subscription_cycles_key` refuses a second invoice for the same cycle, so a
//!   step run twice or by two processes at once issues one (a renewal that lost that race runs
//!   again and finds the invoice).
//! - [`RENEW_CHARGE_KIND`] (attempt `k` of one invoice): charges the consumer's latest active
//!   tokenized card with consent through the gateway, with the attempt pattern of
//!   [`crate::payment`] (record, call with no transaction open, record the outcome). Approved:
//!   PAYMENT_SUCCEEDED, INVOICE_COMPLETED. Declined or no card: SUBSCRIPTION_CYCLE_RENEWAL_FAILED,
//!   and the next attempt follows the organization's `subscription_renewal_retry_days` (as they
//!   were at the first attempt; [`RENEWAL_RETRY_DAYS`] by default) after the first; after the last retry the
//!   subscription becomes INACTIVE (SUBSCRIPTION_INACTIVATED). The next attempt's item is
//!   written only once this one has failed, by whichever transaction records the failure: the
//!   outcome's, for a decline; or, when the outcome is never recorded (a crash between the
//!   gateway call and its recording), the attempt's own recovery item, which carries it and
//!   queues it as it fails the payment. So no retry is lost, and an approved renewal leaves no
//!   item behind to run days later for nothing.
//! - A claim's renewals run together ([`Engine::renew_batch`]), and there a renewal that owes
//!   its charge at once (with auto-renewal, to a consumer with a card) starts attempt 0 in its
//!   own transaction rather than queue it: the attempt is recorded with the invoice, the
//!   gateway is called once the batch has committed, and the outcomes are recorded together.
//!   Money and events are those of the charge item (the attempt's recovery item, carrying the
//!   next attempt, is written with the renewal), one transaction and one claim fewer per
//!   renewal.
//! - An INACTIVE subscription is not renewed: its renewal is queued again when it is activated
//!   (its overdue invoice paid).

use super::ops::{emit, subscription_event};
use super::period_end::{Step, PREPARE_KIND};
use super::{Subscription, SubscriptionStatus};
use crate::auth::{Actor, BranchAccess, Scope};
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Error, Result, StoreError};
use crate::event::EventType;
use crate::ids::{BranchId, InvoiceId, OrgId, SubscriptionId, WorkId};
use crate::invoice::InvoiceStatus;
use crate::org::Role;
use crate::payment::{org_now, PaymentMethod, PaymentStatus};
use crate::store::{Store, Tx};

use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, Handler, WorkReport};
use chrono::Duration;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Renew a subscription into its next cycle.
pub const RENEWAL_KIND: &str = "subscription.renewal";
/// Charge a renewal invoice (attempt `k`).
pub const RENEW_CHARGE_KIND: &str = "subscription.renewal_charge";

/// Report keys.
pub const RENEWED: &str = "subscription.renewed";
pub const ENDED: &str = "subscription.ended";
pub const CHARGED: &str = "subscription.charged";
pub const CHARGE_FAILED: &str = "subscription.charge_failed";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct RenewalPayload {
    branch_id: BranchId,
    subscription_id: SubscriptionId,
    cycle: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ChargePayload {
    branch_id: BranchId,
    subscription_id: SubscriptionId,
    invoice_id: InvoiceId,
    /// 0: the charge at renewal; 1..=3: the retries; 4: the check after the last retry.
    attempt: u32,
    /// When attempt 0 was due (the retries count from it).
    first_at: Timestamp,
    /// The retry schedule in force at attempt 0, in days after it.
    #[serde(default = "crate::org::subscription_settings::default_retry_days")]
    retry_days: Vec<u32>,
}

/// A renewal's first charge, owed at once, which the renewal left to its caller
/// ([`Engine::renew_at_period_end`] with `charge_now`): the invoice (its payments are those
/// it was issued with), when the retries count from, and the organization's time of the
/// renewal.
pub(crate) struct DueCharge {
    pub invoice: crate::invoice::Invoice,
    /// Its payments, as this transaction wrote or read them.
    pub payments: Vec<crate::payment::Payment>,
    pub first_at: Timestamp,
    pub now: Timestamp,
}

/// A renewal charge recorded (step 1 of [`crate::payment::attempt`]), to be sent to the
/// gateway: what it charges, with what, and the item's payload (for a decline's renewal
/// failure).
struct RecordedCharge {
    scope: Scope,
    p: ChargePayload,
    card: crate::payment::TokenizedCard,
    charge: crate::payment::attempt::Charge,
}

pub(crate) fn charge_work_id(invoice: InvoiceId, attempt: u32) -> WorkId {
    WorkId(uuid::Uuid::from_u128(invoice.0.as_u128() ^ (u128::from(attempt) << 1 | 1)))
}

/// Queues attempt `attempt` of charging `invoice`, with the retry schedule `retry_days`.
pub(crate) fn queue_charge(
    tx: &mut dyn Tx,
    s: &Subscription,
    invoice: InvoiceId,
    attempt: u32,
    first_at: Timestamp,
    due: Timestamp,
    retry_days: &[u32],
) -> Result<()> {
    queue_charge_of(tx, (s.org_id, s.branch_id, s.id), invoice, attempt, first_at, due, retry_days)
}

/// [`queue_charge`] for the subscription `(organization, branch, id)`.
fn queue_charge_of(
    tx: &mut dyn Tx,
    (org, branch, sid): (OrgId, BranchId, SubscriptionId),
    invoice: InvoiceId,
    attempt: u32,
    first_at: Timestamp,
    due: Timestamp,
    retry_days: &[u32],
) -> Result<()> {
    tx.queue_work_if_absent(&charge_work(org, (branch, sid), invoice, attempt, first_at, due, retry_days))?;
    Ok(())
}

/// The item of attempt `attempt` of charging `invoice` of subscription `(branch, id)`.
fn charge_work(
    org: OrgId,
    (branch, sid): (BranchId, SubscriptionId),
    invoice: InvoiceId,
    attempt: u32,
    first_at: Timestamp,
    due: Timestamp,
    retry_days: &[u32],
) -> DueWork {
    let p = ChargePayload {
        branch_id: branch,
        subscription_id: sid,
        invoice_id: invoice,
        attempt,
        first_at,
        retry_days: retry_days.to_vec(),
    };
    let payload = serde_json::to_value(&p).expect("plain data serializes");
    DueWork::new(charge_work_id(invoice, attempt), org, RENEW_CHARGE_KIND, due, payload)
}

/// The item of the attempt after `p`'s (started at `now`), on its retry schedule.
fn next_attempt(sub: (OrgId, BranchId, SubscriptionId), p: &ChargePayload, now: Timestamp) -> DueWork {
    let next = p.attempt + 1;
    let due = next_attempt_due(&p.retry_days, p.first_at, next, now);
    charge_work(sub.0, (sub.1, sub.2), p.invoice_id, next, p.first_at, due, &p.retry_days)
}

/// What a renewal charge charges: the invoice's payable payment, by `card`'s network. Its next
/// attempt is not queued with it: the charge's outcome queues it when declined, and the
/// attempt's item when the charge is given up unrecorded (see `Engine::record_charge_in`), so
/// an approved renewal leaves no item behind.
fn select_renewal_payment(
    inv: crate::invoice::Invoice,
    payments: &[crate::payment::Payment],
    card: &crate::payment::TokenizedCard,
) -> Result<(crate::invoice::Invoice, Vec<crate::payment::Payment>)> {
    let mut pay = payments
        .iter()
        .find(|x| x.status.is_payable())
        .cloned()
        .ok_or_else(|| Error::rule(crate::error::Code::PAYMENT_FINALIZED, format!("Invoice '{}' has nothing to charge", inv.id)))?;
    pay.method = Some(PaymentMethod::parse(&card.network).unwrap_or(PaymentMethod::PgwCardUnspecified));
    Ok((inv, vec![pay]))
}

/// Queues the attempt after `p`'s (started at `now`) on its retry schedule.
fn queue_next_attempt(tx: &mut dyn Tx, sub: (OrgId, BranchId, SubscriptionId), p: &ChargePayload, now: Timestamp) -> Result<()> {
    tx.queue_work_if_absent(&next_attempt(sub, p, now))?;
    Ok(())
}

/// After a declined renewal charge (attempt `p.attempt`, recorded at `now`), in the
/// transaction that records it: the next attempt, unless that was the last retry (the
/// subscription has just become INACTIVE, and the check after the last retry is only for an
/// attempt whose outcome was never recorded).
fn queue_retry_after_decline(tx: &mut dyn Tx, sub: (OrgId, BranchId, SubscriptionId), p: &ChargePayload, now: Timestamp) -> Result<()> {
    if (p.attempt as usize) < p.retry_days.len() {
        queue_next_attempt(tx, sub, p, now)?;
    }
    Ok(())
}

/// When attempt `next` (after attempt `next - 1` started at `now`) is due.
fn next_attempt_due(retry_days: &[u32], first_at: Timestamp, next: u32, now: Timestamp) -> Timestamp {
    match retry_days.get(next as usize - 1) {
        Some(days) => (first_at + Duration::days(i64::from(*days))).max(now),
        // The check after the last retry: once that attempt's outcome is surely recorded.
        None => now + crate::payment::ATTEMPT_TIMEOUT + Duration::minutes(1),
    }
}

pub(crate) fn work_handlers<S: Store>() -> Vec<Handler<Engine<S>>> {
    vec![
        Handler {
            kind: RENEWAL_KIND,
            // A claim's renewals run together: one transaction with a savepoint each (see
            // `Engine::renew_batch`).
            batched: true,
            ready: |_| true,
            run: |b, items, report| b.renew_batch(items, report),
        },
        Handler {
            kind: PREPARE_KIND,
            batched: false,
            ready: |_| true,
            run: |b, items, report| {
                for item in items {
                    match b.prepare(item) {
                        Ok(Some(label)) => report.add(label, 1),
                        Ok(None) => {}
                        Err(e) if is_lease_lost(&e) => {}
                        Err(_) => report.errors += 1,
                    }
                }
            },
        },
        Handler {
            kind: RENEW_CHARGE_KIND,
            // A claim's charges run together (see `Engine::charge_renewal_batch`).
            batched: true,
            ready: |_| true,
            run: |b, items, report| b.charge_renewal_batch(items, report),
        },
    ]
}

fn lease_lost(item: &DueWork) -> Error {
    StoreError::LeaseLost(item.id).into()
}

fn is_cycle_taken(e: &Error) -> bool {
    matches!(e, Error::Store(StoreError::UniqueViolation(name)) if name == crate::error::constraint::SUBSCRIPTION_CYCLES)
}

impl<S: Store> Engine<S> {
    /// The engine's scope in a branch of an organization (it acts as the organization's first
    /// admin), or `None` when the organization, branch or admin is gone.
    pub(crate) fn engine_scope(&self, tx: &mut dyn Tx, item: &DueWork, branch: BranchId) -> Result<Option<Scope>> {
        let Some(branch) = tx.branch(item.org_id, branch)? else { return Ok(None) };
        let Some(org) = tx.org(item.org_id)? else { return Ok(None) };
        let Some(admin) = tx.first_org_admin(org.id)? else { return Ok(None) };
        let actor = Actor {
            user_id: admin.id,
            role: Role::OrganizationAdmin,
            access: BranchAccess::Only(vec![branch.id]),
            api_key_id: None,
        };
        Ok(Some(Scope { org, branch, actor }))
    }

    fn drop_item(&self, item: &DueWork) -> Result<()> {
        self.store.write_leased(|tx| Ok(tx.complete_work(item.id, item.leased_until)?))?;
        Ok(())
    }

    /// Runs one renewal item ([`Engine::renew_at_period_end`]); returns what it did (a report
    /// key) or `None` for nothing.
    fn renew(&self, item: &DueWork) -> Result<Option<&'static str>> {
        self.run_step(item, |tx, scope, s, cycle, now| self.renew_at_period_end(tx, scope, s, cycle, now, None))
    }

    /// Runs one preparation item ([`Engine::prepare_next_invoice`]).
    fn prepare(&self, item: &DueWork) -> Result<Option<&'static str>> {
        self.run_step(item, |tx, scope, s, cycle, now| self.prepare_next_invoice(tx, scope, s, cycle, now))
    }

    /// Runs `step` for the subscription and cycle of `item` in one transaction that completes
    /// (or reschedules) the item. A step that lost the race for its cycle's invoice to another
    /// run (`subscription_cycles_key`) runs again and finds it.
    fn run_step(&self, item: &DueWork, step: impl Fn(&mut dyn Tx, &Scope, &mut Subscription, u32, Timestamp) -> Result<Step>) -> Result<Option<&'static str>> {
        let Ok(p) = serde_json::from_value::<RenewalPayload>(item.payload.clone()) else {
            self.drop_item(item)?;
            return Ok(None);
        };
        let Some(scope) = self.store.read(|tx| self.engine_scope(tx, item, p.branch_id))? else {
            self.drop_item(item)?;
            return Ok(None);
        };
        let server_now = self.clock().now();
        let mut tries = 0;
        loop {
            tries += 1;
            let done = self.store.write(|tx| self.step_in(tx, item, &p, &scope, server_now, &step));
            match done {
                Err(e) if is_cycle_taken(&e) && tries < 3 => continue,
                r => return r,
            }
        }
    }

    /// The transaction of one step item: runs `step` and completes (or reschedules) the item,
    /// refused when its lease was lost.
    fn step_in(
        &self,
        tx: &mut dyn Tx,
        item: &DueWork,
        p: &RenewalPayload,
        scope: &Scope,
        server_now: Timestamp,
        step: &impl Fn(&mut dyn Tx, &Scope, &mut Subscription, u32, Timestamp) -> Result<Step>,
    ) -> Result<Option<&'static str>> {
        let now = org_now(tx, item.org_id, server_now)?;
        let Some(mut s) = tx.subscription(p.branch_id, p.subscription_id)? else {
            return self.finish(tx, item, None);
        };
        match step(tx, scope, &mut s, p.cycle, now)? {
            Step::Early(at) => {
                if !tx.reschedule_work(item.id, item.leased_until, at, &item.payload)? {
                    return Err(lease_lost(item));
                }
                Ok(None)
            }
            Step::Done(what) => self.finish(tx, item, what),
        }
    }

    /// Runs the renewal items of one claim together: the engine scopes of their branches in
    /// one read, then every renewal in one [`Store::write_each`] (a store that batches commits
    /// them at once, each in a savepoint of its own, so one that fails leaves the others
    /// alone). What each item does and the rules it keeps are those of [`Self::renew`]; an item
    /// that lost its cycle's invoice to another run, or failed, runs again alone.
    fn renew_batch(&self, items: &[&DueWork], report: &mut WorkReport) {
        let count = |report: &mut WorkReport, r: Result<Option<&'static str>>| match r {
            Ok(Some(label)) => report.add(label, 1),
            Ok(None) => {}
            Err(e) if is_lease_lost(&e) => {}
            Err(_) => report.errors += 1,
        };
        let parsed: Vec<(&DueWork, Option<RenewalPayload>)> = items
            .iter()
            .map(|i| (*i, serde_json::from_value::<RenewalPayload>(i.payload.clone()).ok()))
            .collect();
        let mut scopes: HashMap<(OrgId, BranchId), Option<Scope>> = HashMap::new();
        let found = self.store.read(|tx| {
            for (item, p) in &parsed {
                if let Some(p) = p {
                    if let std::collections::hash_map::Entry::Vacant(e) = scopes.entry((item.org_id, p.branch_id)) {
                        e.insert(self.engine_scope(tx, item, p.branch_id)?);
                    }
                }
            }
            Ok(())
        });
        if found.is_err() {
            // Left to their leases, like an item whose run failed.
            report.errors += items.len();
            return;
        }
        let mut ready = Vec::with_capacity(parsed.len());
        for (item, p) in parsed {
            match p.and_then(|p| scopes.get(&(item.org_id, p.branch_id)).cloned().flatten().map(|s| (p, s))) {
                Some((p, scope)) => ready.push((item, p, scope)),
                // Unreadable, or its organization, branch or admin is gone: nothing to do.
                None => count(report, self.drop_item(item).map(|_| None)),
            }
        }
        let server_now = self.clock().now();
        // The first charge of each renewal starts in the renewal's own transaction, unless the
        // gateway cannot be called from here (then it is queued, as a renewal run alone does).
        let charge_now = self.call_out("the payment gateway", || ()).is_ok();
        let ids: Vec<SubscriptionId> = ready.iter().map(|(_, p, _)| p.subscription_id).collect();
        let results = self.store.write_each(&ready, |tx, ready_item| {
            if std::ptr::eq(ready_item, &ready[0]) {
                // Each run of the batch starts here.
                tx.prefetch_renewals(&ids)?;
            }
            let (item, p, scope) = ready_item;
            let due = std::cell::RefCell::new(None);
            let renew = |tx: &mut dyn Tx, scope: &Scope, s: &mut Subscription, cycle: u32, now: Timestamp| {
                self.renew_at_period_end(tx, scope, s, cycle, now, charge_now.then_some(&mut *due.borrow_mut()))
            };
            let label = self.step_in(tx, item, p, scope, server_now, &renew)?;
            let charge = match due.into_inner() {
                Some(d) => self.start_first_charge(tx, scope, (item.org_id, p.branch_id, p.subscription_id), d)?,
                None => None,
            };
            Ok((label, charge))
        });
        let mut charges = Vec::new();
        for ((item, _, _), r) in ready.iter().zip(results) {
            match r {
                Ok((label, charge)) => {
                    count(report, Ok(label));
                    charges.extend(charge);
                }
                Err(e) if !is_lease_lost(&e) => count(report, self.renew(item)),
                Err(e) => count(report, Err(e)),
            }
        }
        self.charge_recorded(charges, report);
    }

    /// The first charge of a renewal that owes it at once (`d`), in the renewal's transaction:
    /// recorded as attempt 0 (its payment PROCESSING, the attempt's recovery item written,
    /// carrying the next attempt), as a charge item would start it; `None` when the consumer has
    /// no card with consent, and then attempt 0 is queued (its item records the failure and
    /// the retries follow).
    fn start_first_charge(&self, tx: &mut dyn Tx, scope: &Scope, sub: (OrgId, BranchId, SubscriptionId), d: DueCharge) -> Result<Option<RecordedCharge>> {
        let retry_days = scope.org.settings.subscription_renewal_retry_days.clone();
        let Some(card) = tx.latest_active_card(d.invoice.consumer_id)?.filter(|c| c.consent) else {
            queue_charge_of(tx, sub, d.invoice.id, 0, d.first_at, d.first_at, &retry_days)?;
            return Ok(None);
        };
        let p = ChargePayload {
            branch_id: sub.1,
            subscription_id: sub.2,
            invoice_id: d.invoice.id,
            attempt: 0,
            first_at: d.first_at,
            retry_days,
        };
        let now = d.now;
        let mut invoice = Some((d.invoice, d.payments));
        let then = next_attempt(sub, &p, now);
        let charge = self.record_charge_in(tx, sub.0, now, uuid::Uuid::now_v7(), Some(&then), &mut |_: &mut dyn Tx| {
            let (inv, payments) = invoice.take().expect("selected once");
            select_renewal_payment(inv, &payments, &card)
        })?;
        Ok(Some(RecordedCharge {
            scope: scope.clone(),
            p,
            card,
            charge,
        }))
    }

    /// Completes `item` in the transaction (refused when its lease was lost) and answers `what`.
    fn finish(&self, tx: &mut dyn Tx, item: &DueWork, what: Option<&'static str>) -> Result<Option<&'static str>> {
        if !tx.complete_work(item.id, item.leased_until)? {
            return Err(lease_lost(item));
        }
        Ok(what)
    }

    /// Records a failed renewal charge of `invoice` (attempt `attempt`):
    /// SUBSCRIPTION_CYCLE_RENEWAL_FAILED, and after the last retry INACTIVE with
    /// SUBSCRIPTION_INACTIVATED. Nothing when the invoice is no longer the subscription's latest
    /// or the subscription is not ACTIVE.
    #[allow(clippy::too_many_arguments)]
    fn record_renewal_failure(
        &self,
        tx: &mut dyn Tx,
        branch: BranchId,
        sid: SubscriptionId,
        invoice: InvoiceId,
        attempt: u32,
        retries: usize,
        payment: Option<crate::ids::PaymentId>,
        now: Timestamp,
    ) -> Result<()> {
        let Some(mut s) = tx.subscription(branch, sid)? else { return Ok(()) };
        if s.latest_invoice_id != Some(invoice) || !s.status.collects() {
            return Ok(());
        }
        let was = s.status;
        s.renewal_failures = s.renewal_failures.max(attempt + 1);
        s.updated_at = Some(now);
        let last = attempt as usize >= retries;
        if last {
            s.status = SubscriptionStatus::Inactive;
        }
        tx.update_subscription_row(&s)?;
        let mut failed = subscription_event(self.public_url(), EventType::SubscriptionCycleRenewalFailed, &s, payment, now);
        if last {
            // The failure is reported with the status the subscription had when it failed.
            failed.payload["status"] = serde_json::json!(was);
        }
        crate::event::record(tx, &failed)?;
        crate::notification::queue::renewal_failed(tx, self.public_url(), &s, invoice, now)?;
        if last {
            emit(tx, self.public_url(), EventType::SubscriptionInactivated, &s, now)?;
        }
        Ok(())
    }

    /// Runs the charge items of one claim together, with the attempt pattern of one charge but
    /// each step for all of them at once: one read finds what each charges, one
    /// [`Store::write_each`] records every attempt (each completing its item, its recovery
    /// item carrying the next attempt), the gateway is called for each with no
    /// transaction open (side by side, like separate items), and one more `write_each`
    /// records every outcome (with SUBSCRIPTION_CYCLE_RENEWAL_FAILED and the next attempt in
    /// the same transaction for a decline). An item that is not a plain charge (nothing owed, no card, the check
    /// after the last retry), or whose reading failed, runs alone as before.
    fn charge_renewal_batch(&self, items: &[&DueWork], report: &mut WorkReport) {
        let alone = |report: &mut WorkReport, item: &DueWork| match self.charge_renewal(item) {
            Ok(Some(true)) => report.add(CHARGED, 1),
            Ok(Some(false)) => report.add(CHARGE_FAILED, 1),
            Ok(None) => {}
            Err(e) if is_lease_lost(&e) => {}
            Err(_) => report.errors += 1,
        };
        if items.len() < 2 || self.call_out("the payment gateway", || ()).is_err() {
            for item in items {
                alone(report, item);
            }
            return;
        }
        struct Plan<'a> {
            item: &'a DueWork,
            p: ChargePayload,
            scope: Scope,
            card: crate::payment::TokenizedCard,
            now: Timestamp,
            attempt: uuid::Uuid,
        }
        let mut scopes: HashMap<(OrgId, BranchId), Option<Scope>> = HashMap::new();
        let mut plans = Vec::with_capacity(items.len());
        let mut others = Vec::new();
        let read = self.store.read(|tx| {
            plans.clear();
            others.clear();
            for item in items {
                let Ok(p) = serde_json::from_value::<ChargePayload>(item.payload.clone()) else {
                    others.push(*item);
                    continue;
                };
                let key = (item.org_id, p.branch_id);
                if let std::collections::hash_map::Entry::Vacant(e) = scopes.entry(key) {
                    e.insert(self.engine_scope(tx, item, p.branch_id)?);
                }
                let Some(scope) = scopes[&key].clone() else {
                    others.push(*item);
                    continue;
                };
                let s = tx.subscription(p.branch_id, p.subscription_id)?;
                let inv = tx.invoice(p.branch_id, p.invoice_id)?;
                let (Some(s), Some(inv)) = (s, inv) else {
                    others.push(*item);
                    continue;
                };
                let owed =
                    s.status.collects() && s.latest_invoice_id == Some(inv.id) && !matches!(inv.status, InvoiceStatus::Completed | InvoiceStatus::Canceled);
                let card = tx.latest_active_card(inv.consumer_id)?.filter(|c| c.consent);
                match card {
                    Some(card) if owed && p.attempt as usize <= p.retry_days.len() => {
                        let now = self.now(&scope);
                        plans.push(Plan {
                            item,
                            p,
                            scope,
                            card,
                            now,
                            attempt: uuid::Uuid::now_v7(),
                        })
                    }
                    _ => others.push(*item),
                }
            }
            Ok(())
        });
        if read.is_err() {
            for item in items {
                alone(report, item);
            }
            return;
        }
        for item in others {
            alone(report, item);
        }
        // 1. Every attempt recorded, each with its item completed.
        let recorded = self.store.write_each(&plans, |tx, pl| {
            let p = &pl.p;
            let then = next_attempt((pl.item.org_id, p.branch_id, p.subscription_id), p, pl.now);
            self.record_charge_in(tx, pl.scope.org_id(), pl.now, pl.attempt, Some(&then), &mut |tx: &mut dyn Tx| {
                self.start_renewal_charge(tx, pl.item, &pl.scope, p, &pl.card)
            })
        });
        let mut charges = Vec::with_capacity(plans.len());
        for (pl, r) in plans.into_iter().zip(recorded) {
            match r {
                Ok(charge) => charges.push(RecordedCharge {
                    scope: pl.scope,
                    p: pl.p,
                    card: pl.card,
                    charge,
                }),
                Err(e) if is_lease_lost(&e) => {}
                Err(_) => report.errors += 1,
            }
        }
        self.charge_recorded(charges, report);
    }

    /// Steps 2 and 3 of recorded renewal charges, all at once: the gateway is called for each
    /// with no transaction open (side by side, like separate items), then one
    /// [`Store::write_each`] records every outcome (with SUBSCRIPTION_CYCLE_RENEWAL_FAILED and
    /// the next attempt in the same transaction for a decline). A charge whose gateway call
    /// failed is left to its attempt's item, which fails and voids it and queues the next
    /// attempt.
    fn charge_recorded(&self, charges: Vec<RecordedCharge>, report: &mut WorkReport) {
        if charges.is_empty() {
            return;
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let outcomes: Vec<(usize, Result<crate::payment::gateway::GatewayOutcome>)> = std::thread::scope(|t| {
            let runners: Vec<_> = (0..charges.len().min(crate::work::ops::WORK_PARALLELISM))
                .map(|_| {
                    t.spawn(|| {
                        let mut got = Vec::new();
                        loop {
                            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(rc) = charges.get(k) else { return got };
                            let gw = self.gateway_for(&rc.scope.org);
                            got.push((
                                k,
                                self.call_out("the payment gateway", || {
                                    gw.charge_token(&rc.charge.reference(), &rc.card.gateway_token, rc.charge.total())
                                }),
                            ));
                        }
                    })
                })
                .collect();
            runners.into_iter().flat_map(|r| r.join().unwrap_or_default()).collect()
        });
        let mut answered: Vec<(usize, crate::payment::gateway::GatewayOutcome)> = Vec::with_capacity(outcomes.len());
        for (k, o) in outcomes {
            match o {
                Ok(o) => answered.push((k, o)),
                // Left to the attempt's item, which fails and voids it.
                Err(_) => report.errors += 1,
            }
        }
        answered.sort_by_key(|(k, _)| *k);
        let invoices: Vec<InvoiceId> = answered.iter().map(|(k, _)| charges[*k].p.invoice_id).collect();
        let results = self.store.write_each(&answered, |tx, answer| {
            if std::ptr::eq(answer, &answered[0]) {
                // Each run of the batch starts here.
                tx.prefetch_invoices(&invoices)?;
            }
            let (k, outcome) = answer;
            let rc = &charges[*k];
            let p = &rc.p;
            let now = self.now(&rc.scope);
            let recorded = self.record_charge_outcome_in(
                tx,
                &rc.scope,
                &rc.charge,
                outcome,
                now,
                &mut |_: &mut dyn Tx, _: &crate::invoice::Invoice, _: &[crate::payment::Payment]| Ok(()),
            )?;
            if !outcome.approved {
                let payment = recorded.first().map(|x| x.id);
                queue_retry_after_decline(tx, (rc.scope.org_id(), p.branch_id, p.subscription_id), p, now)?;
                self.record_renewal_failure(tx, p.branch_id, p.subscription_id, p.invoice_id, p.attempt, p.retry_days.len(), payment, now)?;
            }
            Ok(outcome.approved)
        });
        for r in results {
            match r {
                Ok(true) => report.add(CHARGED, 1),
                Ok(false) => report.add(CHARGE_FAILED, 1),
                Err(_) => report.errors += 1,
            }
        }
    }

    /// What charge item `item` charges, in the transaction that records the attempt: done once,
    /// the item ends here; the invoice's payable payment, charged to `card`.
    fn start_renewal_charge(
        &self,
        tx: &mut dyn Tx,
        item: &DueWork,
        scope: &Scope,
        p: &ChargePayload,
        card: &crate::payment::TokenizedCard,
    ) -> Result<(crate::invoice::Invoice, Vec<crate::payment::Payment>)> {
        if !tx.complete_work(item.id, item.leased_until)? {
            return Err(lease_lost(item));
        }
        let (inv, all) = self.load_invoice(tx, scope, p.invoice_id)?;
        select_renewal_payment(inv, &all, card)
    }

    /// Runs one charge item: `Some(approved)` when a charge was made or failed, `None` when
    /// there was nothing to charge.
    fn charge_renewal(&self, item: &DueWork) -> Result<Option<bool>> {
        let Ok(p) = serde_json::from_value::<ChargePayload>(item.payload.clone()) else {
            self.drop_item(item)?;
            return Ok(None);
        };
        let found = self.store.read(|tx| {
            let Some(scope) = self.engine_scope(tx, item, p.branch_id)? else {
                return Ok(None);
            };
            let Some(s) = tx.subscription(p.branch_id, p.subscription_id)? else {
                return Ok(None);
            };
            let Some(inv) = tx.invoice(p.branch_id, p.invoice_id)? else { return Ok(None) };
            let card = tx.latest_active_card(inv.consumer_id)?.filter(|c| c.consent);
            Ok(Some((scope, s, inv, card)))
        })?;
        let Some((scope, s, inv, card)) = found else {
            self.drop_item(item)?;
            return Ok(None);
        };
        let owed = s.status.collects() && s.latest_invoice_id == Some(inv.id) && !matches!(inv.status, InvoiceStatus::Completed | InvoiceStatus::Canceled);
        if !owed {
            self.drop_item(item)?;
            return Ok(None);
        }
        let now = self.now(&scope);
        let retries = p.retry_days.len();
        let last_check = p.attempt as usize > retries;
        if last_check || card.is_none() {
            // No card (or the check after the last retry): the attempt fails without a charge.
            self.store.write(|tx| {
                if !tx.complete_work(item.id, item.leased_until)? {
                    return Err(lease_lost(item));
                }
                let s = tx
                    .subscription(p.branch_id, p.subscription_id)?
                    .ok_or_else(|| Error::not_found("Subscription", p.subscription_id))?;
                let unpaid = tx.invoice_payments(p.invoice_id)?.iter().any(|x| x.status.is_payable());
                if last_check {
                    if unpaid && s.renewal_failures as usize <= retries {
                        self.record_renewal_failure(tx, p.branch_id, p.subscription_id, p.invoice_id, p.attempt - 1, retries, None, now)?;
                    }
                    return Ok(());
                }
                queue_next_attempt(tx, (s.org_id, s.branch_id, s.id), &p, now)?;
                self.record_renewal_failure(tx, p.branch_id, p.subscription_id, p.invoice_id, p.attempt, retries, None, now)
            })?;
            return Ok(if last_check { None } else { Some(false) });
        }
        let card = card.expect("checked");
        // The next attempt is of the same subscription (a charge item is queued in the
        // subscription's organization, and a subscription is never deleted): no need to read it.
        let sub = (item.org_id, p.branch_id, p.subscription_id);
        let then = next_attempt(sub, &p, now);
        let charge = self.record_charge_then(scope.org_id(), now, Some(&then), |tx| self.start_renewal_charge(tx, item, &scope, &p, &card))?;
        let gw = self.gateway_for(&scope.org);
        let outcome = self.call_out("the payment gateway", || {
            gw.charge_token(&charge.reference(), &card.gateway_token, charge.total())
        })?;
        // A decline's retry and failure are recorded with it (a crash after it loses neither).
        let recorded = self.record_charge_outcome_and(&scope, &charge, &outcome, |tx, _, recorded| {
            if outcome.approved {
                return Ok(());
            }
            let now = self.now(&scope);
            queue_retry_after_decline(tx, sub, &p, now)?;
            let payment = recorded.first().map(|x| x.id);
            self.record_renewal_failure(tx, p.branch_id, p.subscription_id, p.invoice_id, p.attempt, retries, payment, now)
        })?;
        debug_assert!(recorded.iter().all(|x| x.status != PaymentStatus::Processing));
        Ok(Some(outcome.approved))
    }
}
