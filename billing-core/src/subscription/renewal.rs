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
pub(crate) use super::renewal_charge::{queue_charge, DueCharge};
use super::{Subscription, SubscriptionStatus};
use crate::auth::{Actor, BranchAccess, Scope};
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Error, Result, StoreError};
use crate::event::EventType;
use crate::ids::{BranchId, InvoiceId, OrgId, SubscriptionId};
use crate::org::Role;
use crate::payment::org_now;
use crate::store::{Store, Tx};

use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, Handler, WorkReport};
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

pub(super) fn lease_lost(item: &DueWork) -> Error {
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

    pub(super) fn drop_item(&self, item: &DueWork) -> Result<()> {
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
    pub(super) fn record_renewal_failure(
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
}
