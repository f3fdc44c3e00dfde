//! The auto-renewal charge of a renewal's invoice and its retries ([`RENEW_CHARGE_KIND`]):
//! see [`super::renewal`] for the rules.

use super::renewal::{lease_lost, CHARGED, CHARGE_FAILED, RENEW_CHARGE_KIND};
use super::Subscription;
use crate::auth::Scope;
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::ids::{BranchId, InvoiceId, OrgId, SubscriptionId, WorkId};
use crate::invoice::InvoiceStatus;
use crate::payment::{PaymentMethod, PaymentStatus};
use crate::store::{Store, Tx};
use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, WorkReport};
use chrono::Duration;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ChargePayload {
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
pub(super) struct RecordedCharge {
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
pub(super) fn queue_charge_of(
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

impl<S: Store> Engine<S> {
    /// The first charge of a renewal that owes it at once (`d`), in the renewal's transaction:
    /// recorded as attempt 0 (its payment PROCESSING, the attempt's recovery item written,
    /// carrying the next attempt), as a charge item would start it; `None` when the consumer has
    /// no card with consent, and then attempt 0 is queued (its item records the failure and
    /// the retries follow).
    pub(super) fn start_first_charge(
        &self,
        tx: &mut dyn Tx,
        scope: &Scope,
        sub: (OrgId, BranchId, SubscriptionId),
        d: DueCharge,
    ) -> Result<Option<RecordedCharge>> {
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

    /// Runs the charge items of one claim together, with the attempt pattern of one charge but
    /// each step for all of them at once: one read finds what each charges, one
    /// [`Store::write_each`] records every attempt (each completing its item, its recovery
    /// item carrying the next attempt), the gateway is called for each with no
    /// transaction open (side by side, like separate items), and one more `write_each`
    /// records every outcome (with SUBSCRIPTION_CYCLE_RENEWAL_FAILED and the next attempt in
    /// the same transaction for a decline). An item that is not a plain charge (nothing owed, no card, the check
    /// after the last retry), or whose reading failed, runs alone as before.
    pub(super) fn charge_renewal_batch(&self, items: &[&DueWork], report: &mut WorkReport) {
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
    pub(super) fn charge_recorded(&self, charges: Vec<RecordedCharge>, report: &mut WorkReport) {
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
