//! Gateway attempts: money moves exactly once, even when the process dies mid-call.
//!
//! A charge or a refund through the gateway runs in three steps (see [`crate::Lane::Io`]):
//!
//! 1. **Record the attempt** in a transaction: the payments it charges become PROCESSING under
//!    the attempt's id (so a second attempt on them is refused while this one is in flight), and
//!    a due-work item of kind [`CHARGE_KIND`] / [`REFUND_KIND`] is written, due
//!    [`ATTEMPT_TIMEOUT`] later. A refund's item has the id of the refund's first payment, so a
//!    second refund of the same payments is refused by the item's unique id.
//! 2. **Call the gateway** with no transaction open, passing the attempt's reference (the
//!    gateway's idempotency key: the same reference never moves money twice).
//! 3. **Record the outcome** in a transaction, only if the attempt still holds its payments, and
//!    delete the item.
//!
//! When step 3 never happens (a crash, a gateway that never answered), the item falls due and
//! its handler finishes the attempt in the caller's place: a charge is first marked FAILED (so a
//! late answer can no longer record it) and then voided at the gateway by its reference, until
//! the gateway confirms; a refund is asked again under the same reference and its outcome
//! recorded.
//!
//! A charge's item falls due in the organization's time, which a sandbox test clock moves in
//! jumps: an advance of a day passes the time-out of a charge that started a millisecond ago.
//! So the handler also waits until the attempt has had [`Engine::work_lease`] of server time
//! (the longest an outside call may take, with a margin) since it was recorded: before that, the
//! attempt may be alive, and the handler leaves the item held by its claim (a clock advance
//! waits for held items); step 3 ends the item whoever holds it. Only a process that is really
//! gone, for real time, has its charge voided.

use super::gateway::GatewayOutcome;
use super::{Payment, PaymentMethod, PaymentStatus, RefundReason};
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Code, Error, Result, StoreError};
use crate::event::EventType;
use crate::ids::{BranchId, InvoiceId, OrgId, PaymentId, WorkId};
use crate::invoice::events::emit_payment;
use crate::invoice::Invoice;
use crate::store::{Store, Tx};
use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, Handler};
use chrono::Duration;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A charge whose outcome was not recorded in time: void it (id = the attempt's id).
pub const CHARGE_KIND: &str = "payment.charge";
/// A refund whose outcome was not recorded in time: ask again (id = its first payment's id).
pub const REFUND_KIND: &str = "payment.refund";
/// How long an attempt may stay unrecorded before its item takes it over (organization time).
pub const ATTEMPT_TIMEOUT: Duration = Duration::minutes(15);
/// How long after a failed void the next one is tried.
pub const VOID_RETRY: Duration = Duration::minutes(5);

/// What the attempt handlers count in a [`WorkReport`].
pub const CHARGES_ABANDONED: &str = "payment.charges_abandoned";
pub const REFUNDS_RECOVERED: &str = "payment.refunds_recovered";

/// The payload of an attempt's work item: what its handler needs without a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Recorded {
    branch_id: BranchId,
    invoice_id: InvoiceId,
    payment_ids: Vec<PaymentId>,
    /// The gateway reference of the attempt (the refund of payment `p` uses `<reference>:<p>`).
    reference: String,
    /// A charge: already marked FAILED, only the void is left.
    #[serde(default)]
    abandoned: bool,
    /// A refund: its reason and note.
    #[serde(default)]
    refund: Option<(String, Option<String>)>,
    /// A charge: the server time (not the organization's) at which it was recorded (absent in
    /// items recorded before this was kept: their time-out alone counts).
    #[serde(default)]
    started: Option<Timestamp>,
    /// A charge: work to queue if it is given up unrecorded, in the transaction that marks it
    /// FAILED (a renewal's next attempt: see [`Engine::record_charge_in`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    then: Option<FollowUp>,
}

/// Work that follows a charge given up unrecorded, queued (unless an item of its id is) due at
/// `due_at` or at once if that has passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct FollowUp {
    id: WorkId,
    kind: String,
    due_at: Timestamp,
    payload: serde_json::Value,
}

impl Recorded {
    fn of(item: &DueWork) -> Option<Self> {
        serde_json::from_value(item.payload.clone()).ok()
    }
    fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("plain data serializes")
    }
}

/// The payment-attempt kinds of due work.
pub(crate) fn work_handlers<S: Store>() -> Vec<Handler<Engine<S>>> {
    vec![
        Handler {
            kind: CHARGE_KIND,
            batched: false,
            ready: |_| true,
            run: |b, items, report| {
                for item in items {
                    match b.finish_abandoned_charge(item) {
                        Ok(true) => report.add(CHARGES_ABANDONED, 1),
                        Ok(false) => {}
                        Err(e) if is_lease_lost(&e) => {}
                        Err(_) => report.errors += 1,
                    }
                }
            },
        },
        Handler {
            kind: REFUND_KIND,
            batched: false,
            ready: |_| true,
            run: |b, items, report| {
                for item in items {
                    match b.finish_abandoned_refund(item) {
                        Ok(n) => report.add(REFUNDS_RECOVERED, n),
                        Err(e) if is_lease_lost(&e) => {}
                        Err(_) => report.errors += 1,
                    }
                }
            },
        },
    ]
}

/// A charge recorded by step 1, ready for the gateway.
pub(crate) struct Charge {
    pub id: Uuid,
    pub invoice: Invoice,
    pub payments: Vec<Payment>,
}

impl Charge {
    pub fn total(&self) -> crate::money::Money {
        crate::money::Money::new(self.payments.iter().map(|p| p.amount.amount()).sum(), self.invoice.currency)
    }
    pub fn reference(&self) -> String {
        self.id.to_string()
    }
}

/// The org's time inside a transaction of a handler (which has no scope).
pub(crate) fn org_now(tx: &mut dyn Tx, org: OrgId, server_now: Timestamp) -> Result<Timestamp> {
    let offset = tx.org(org)?.map(|o| o.clock_offset_us).unwrap_or(0);
    Ok(server_now + Duration::microseconds(offset))
}

fn attempt_lost(id: Uuid) -> Error {
    Error::rule(
        Code::INVALID_STATUS,
        format!("The payment attempt {id} took too long and was canceled; nothing was charged"),
    )
}

impl<S: Store> Engine<S> {
    /// Step 1 of a charge: in one transaction, `select` picks the payments (refusing what cannot
    /// be charged, and setting each one's method), and they become PROCESSING under a new
    /// attempt, with its work item.
    pub(crate) fn record_charge(&self, org: OrgId, now: Timestamp, select: impl FnMut(&mut dyn Tx) -> Result<(Invoice, Vec<Payment>)>) -> Result<Charge> {
        self.record_charge_then(org, now, None, select)
    }

    /// [`Self::record_charge`], with the work that follows the charge if it is given up
    /// unrecorded (see [`Self::record_charge_in`]).
    pub(crate) fn record_charge_then(
        &self,
        org: OrgId,
        now: Timestamp,
        then: Option<&DueWork>,
        mut select: impl FnMut(&mut dyn Tx) -> Result<(Invoice, Vec<Payment>)>,
    ) -> Result<Charge> {
        // Refuse before anything is written: the gateway call below would be refused anyway.
        self.call_out("the payment gateway", || ())?;
        let id = Uuid::now_v7();
        self.store.write(|tx| self.record_charge_in(tx, org, now, id, then, &mut select))
    }

    /// [`Self::record_charge`] in the caller's transaction, as attempt `id` (the caller makes
    /// sure no transaction is open when it calls the gateway). `then` (of organization `org`)
    /// is queued by the attempt's item if the charge is given up unrecorded (a crash, a gateway
    /// that never answered), in the transaction that marks it FAILED; when an outcome is
    /// recorded instead, queuing what follows it is the caller's part. So a renewal's next
    /// attempt is written only once an attempt has failed, by whichever of the two records the
    /// failure (they exclude each other: both require the payments PROCESSING under this
    /// attempt).
    pub(crate) fn record_charge_in(
        &self,
        tx: &mut dyn Tx,
        org: OrgId,
        now: Timestamp,
        id: Uuid,
        then: Option<&DueWork>,
        select: &mut impl FnMut(&mut dyn Tx) -> Result<(Invoice, Vec<Payment>)>,
    ) -> Result<Charge> {
        {
            let (invoice, chosen) = select(tx)?;
            if chosen.iter().all(|p| p.amount.is_zero()) {
                return Err(Error::rule(Code::INVALID_PARAMETERS, "Nothing to charge: the amount is 0"));
            }
            let mut payments = Vec::with_capacity(chosen.len());
            for mut p in chosen {
                if p.status == PaymentStatus::Processing {
                    return Err(Error::rule(Code::INVALID_STATUS, format!("Payment '{}' is being processed", p.id)));
                }
                p.status = PaymentStatus::Processing;
                p.transaction_id = Some(id);
                p.latest_pgw_message = Some("PROCESSING".into());
                p.updated_at = Some(now);
                tx.update_payment(&p)?;
                payments.push(p);
            }
            let recorded = Recorded {
                branch_id: invoice.branch_id,
                invoice_id: invoice.id,
                payment_ids: payments.iter().map(|p| p.id).collect(),
                reference: id.to_string(),
                abandoned: false,
                refund: None,
                started: Some(self.clock().now()),
                then: then.map(|w| FollowUp {
                    id: w.id,
                    kind: w.kind.clone(),
                    due_at: w.due_at,
                    payload: w.payload.clone(),
                }),
            };
            tx.insert_work(&DueWork::new(WorkId(id), org, CHARGE_KIND, now + ATTEMPT_TIMEOUT, recorded.to_value()))?;
            Ok(Charge { id, invoice, payments })
        }
    }

    /// Step 3 of a charge: records the gateway's answer, if the attempt still holds its
    /// payments. Approved: SUCCEEDED with PAYMENT_SUCCEEDED each (and INVOICE_COMPLETED when the
    /// invoice is now paid); declined: FAILED with PAYMENT_FAILED each.
    pub(crate) fn record_charge_outcome(&self, scope: &crate::auth::Scope, charge: &Charge, outcome: &GatewayOutcome) -> Result<Vec<Payment>> {
        self.record_charge_outcome_and(scope, charge, outcome, |_, _, _| Ok(()))
    }

    /// [`Self::record_charge_outcome`], then `also` in the same transaction (with the invoice
    /// and the payments as recorded). An unclear answer (an error or time-out: money may have
    /// moved) is recorded FAILED too, and the attempt's item is left to void the charge at once.
    pub(crate) fn record_charge_outcome_and(
        &self,
        scope: &crate::auth::Scope,
        charge: &Charge,
        outcome: &GatewayOutcome,
        mut also: impl FnMut(&mut dyn Tx, &Invoice, &[Payment]) -> Result<()>,
    ) -> Result<Vec<Payment>> {
        let now = self.now(scope);
        self.store.write(|tx| self.record_charge_outcome_in(tx, scope, charge, outcome, now, &mut also))
    }

    /// [`Self::record_charge_outcome_and`] in the caller's transaction.
    pub(crate) fn record_charge_outcome_in(
        &self,
        tx: &mut dyn Tx,
        scope: &crate::auth::Scope,
        charge: &Charge,
        outcome: &GatewayOutcome,
        now: Timestamp,
        also: &mut impl FnMut(&mut dyn Tx, &Invoice, &[Payment]) -> Result<()>,
    ) -> Result<Vec<Payment>> {
        let message = format!("{} {}", outcome.code, outcome.message);
        {
            let (mut inv, all) = self.load_invoice(tx, scope, charge.invoice.id)?;
            let mut mine = Vec::with_capacity(charge.payments.len());
            for p in &charge.payments {
                let current = all.iter().find(|q| q.id == p.id).cloned().ok_or_else(|| attempt_lost(charge.id))?;
                if current.status != PaymentStatus::Processing || current.transaction_id != Some(charge.id) {
                    return Err(attempt_lost(charge.id));
                }
                mine.push(current);
            }
            if outcome.is_unclear() {
                // Money may have moved: the item voids the charge, starting now.
                let rec = Recorded {
                    branch_id: inv.branch_id,
                    invoice_id: inv.id,
                    payment_ids: mine.iter().map(|p| p.id).collect(),
                    reference: charge.reference(),
                    abandoned: true,
                    refund: None,
                    started: None,
                    then: None,
                };
                // Taken over whoever holds it (its handler may hold it, waiting to see whether
                // this attempt is alive); a new item if it is gone.
                let moved = match tx.work(WorkId(charge.id))? {
                    Some(w) => tx.reschedule_work(w.id, w.leased_until, now, &rec.to_value())?,
                    None => false,
                };
                if !moved {
                    tx.insert_work(&DueWork::new(WorkId::new(), inv.org_id, CHARGE_KIND, now, rec.to_value()))?;
                }
            } else {
                // Ended whoever holds it: its handler may hold it at this moment, waiting to
                // see whether this attempt is alive (the payments decide who records, and they
                // are this attempt's).
                tx.drop_work(WorkId(charge.id))?;
            }
            let mut out = Vec::with_capacity(mine.len());
            for mut p in mine {
                p.latest_pgw_message = Some(message.clone());
                p.updated_at = Some(now);
                if outcome.approved {
                    p.status = PaymentStatus::Succeeded;
                    p.payed_at = Some(now);
                } else {
                    p.status = PaymentStatus::Failed;
                    p.transaction_id = None;
                    tx.update_payment(&p)?;
                    emit_payment(tx, self.public_url(), EventType::PaymentFailed, &inv, &p, now)?;
                }
                out.push(p);
            }
            if outcome.approved {
                self.record_paid(tx, scope, &mut inv, &all, out.clone(), EventType::PaymentSucceeded, now)?;
            }
            also(tx, &inv, &out)?;
            Ok(out)
        }
    }

    /// The handler of a charge nobody recorded: marks its payments FAILED (if they are still
    /// PROCESSING under it), then voids it at the gateway; the item stays until the gateway
    /// confirms the void. Returns whether this run abandoned the charge.
    fn finish_abandoned_charge(&self, item: &DueWork) -> Result<bool> {
        let Some(mut rec) = Recorded::of(item) else {
            // Not ours to understand: drop it rather than claim it forever.
            self.store.write_leased(|tx| Ok(tx.complete_work(item.id, item.leased_until)?))?;
            return Ok(false);
        };
        let server_now = self.clock().now();
        let mut abandoned = false;
        // The claim's lease, until the first step below gives it back (a later run, after a
        // failed void, still holds it).
        let mut lease = item.leased_until;
        if !rec.abandoned && rec.started.is_some_and(|t| server_now < t + self.work_lease()) {
            // The organization's clock passed the time-out, but the attempt may still be alive
            // (a sandbox clock jumped): the item stays held by this claim, its outcome ends it.
            return Ok(false);
        }
        if !rec.abandoned {
            let attempt = item.id.0;
            let marked = self.store.write(|tx| {
                let now = org_now(tx, item.org_id, server_now)?;
                let Some(inv) = tx.invoice(rec.branch_id, rec.invoice_id)? else {
                    return Ok(false);
                };
                let mut any = false;
                for id in &rec.payment_ids {
                    let Some(mut p) = tx.payment(rec.branch_id, *id)? else { continue };
                    if p.status != PaymentStatus::Processing || p.transaction_id != Some(attempt) {
                        continue;
                    }
                    p.status = PaymentStatus::Failed;
                    p.transaction_id = None;
                    p.latest_pgw_message = Some("No answer from the gateway in time: the charge was canceled".into());
                    p.updated_at = Some(now);
                    tx.update_payment(&p)?;
                    emit_payment(tx, self.public_url(), EventType::PaymentFailed, &inv, &p, now)?;
                    any = true;
                }
                if let Some(f) = rec.then.as_ref().filter(|_| any) {
                    tx.queue_work_if_absent(&DueWork::new(f.id, item.org_id, &f.kind, f.due_at.max(now), f.payload.clone()))?;
                }
                let mut next = rec.clone();
                next.abandoned = true;
                if !tx.reschedule_work(item.id, item.leased_until, now, &next.to_value())? {
                    return Err(StoreError::LeaseLost(item.id).into());
                }
                Ok(any)
            })?;
            if !marked {
                // The outcome was recorded after all: nothing to void.
                self.store.write_leased(|tx| Ok(tx.complete_work(item.id, None)?))?;
                return Ok(false);
            }
            abandoned = true;
            rec.abandoned = true;
            lease = None;
        }
        self.void_abandoned(item, lease, &rec.reference, &rec.to_value())?;
        Ok(abandoned)
    }

    /// The last step of recovering a charge nobody recorded (card or link), once its payer side
    /// is settled: void it at the gateway, then end the item (`lease`: the claim still held, or
    /// none once the first step gave it back), or keep it for another try when the gateway
    /// refuses the void. Nothing happens if the organization is gone.
    pub(crate) fn void_abandoned(&self, item: &DueWork, lease: Option<Timestamp>, reference: &str, payload: &serde_json::Value) -> Result<()> {
        let server_now = self.clock().now();
        let Some(org) = self.store.read(|tx| Ok(tx.org(item.org_id)?))? else {
            return Ok(());
        };
        let gw = self.gateway_for(&org);
        let voided = self.call_out("the payment gateway", || gw.void(reference))?;
        self.store.write_leased(|tx| {
            let now = org_now(tx, item.org_id, server_now)?;
            let kept = if voided.approved {
                tx.complete_work(item.id, lease)?
            } else {
                tx.reschedule_work(item.id, lease, now + VOID_RETRY, payload)?
            };
            if !kept {
                return Err(StoreError::LeaseLost(item.id).into());
            }
            Ok(())
        })
    }

    /// Refunds `targets` (payments paid together) through the gateway: records the attempt,
    /// asks the gateway to refund each with no transaction open, records the outcome. Payments
    /// the gateway refused stay paid; the answer says why.
    pub(crate) fn refund_through_gateway(
        &self,
        scope: &crate::auth::Scope,
        targets: &[Payment],
        reason: RefundReason,
        note: Option<String>,
        mut recheck: impl FnMut(&mut dyn Tx) -> Result<Vec<Payment>>,
    ) -> Result<Vec<Payment>> {
        self.call_out("the payment gateway", || ())?;
        let now = self.now(scope);
        let first = targets.iter().map(|p| p.id).min().expect("at least one payment to refund");
        let rec = Recorded {
            branch_id: scope.branch_id(),
            invoice_id: targets[0].invoice_id,
            payment_ids: targets.iter().map(|p| p.id).collect(),
            reference: format!("refund-{first}"),
            abandoned: false,
            refund: Some((reason.as_str().to_string(), note.clone())),
            started: None,
            then: None,
        };
        let item = WorkId(first.0);
        self.store
            .write(|tx| {
                recheck(tx)?;
                tx.insert_work(&DueWork::new(item, scope.org_id(), REFUND_KIND, now + ATTEMPT_TIMEOUT, rec.to_value()))?;
                Ok(())
            })
            .map_err(|e| match e {
                Error::Store(StoreError::UniqueViolation(_)) => Error::rule(Code::INVALID_STATUS, format!("A refund of payment '{first}' is in progress")),
                e => e,
            })?;
        let outcomes = self.ask_refunds(&scope.org, &rec, targets)?;
        let refunded = self.record_refunds(item, None, &rec, &outcomes, now)?;
        if let Some((_, o)) = outcomes.iter().find(|(_, o)| !o.approved) {
            return Err(Error::rule(Code::PAYMENT_REFUNDED_FAILED, format!("{} {}", o.code, o.message)));
        }
        Ok(refunded)
    }

    /// Asks the gateway to refund each gateway payment of `payments` (no transaction open).
    fn ask_refunds(&self, org: &crate::org::Organization, rec: &Recorded, payments: &[Payment]) -> Result<Vec<(PaymentId, GatewayOutcome)>> {
        let gw = self.gateway_for(org);
        let mut out = Vec::with_capacity(payments.len());
        for p in payments {
            let outcome = if p.method.is_some_and(PaymentMethod::is_gateway) {
                let transaction = p.transaction_id.map(|t| t.to_string()).unwrap_or_default();
                let reference = format!("{}:{}", rec.reference, p.id);
                self.call_out("the payment gateway", || gw.refund(&reference, &transaction, p.amount))?
            } else {
                GatewayOutcome::of("00", "APPROVED")
            };
            out.push((p.id, outcome));
        }
        Ok(out)
    }

    /// Records refund outcomes (REFUNDED with PAYMENT_REFUNDED for the approved ones still paid)
    /// and completes the attempt's item. `held` is the lease of the handler that runs it; the
    /// request that made the attempt holds none, and records whether or not the handler holds
    /// the item at this moment (the payments' status decides who records). Returns the
    /// refunded payments.
    fn record_refunds(
        &self,
        item: WorkId,
        held: Option<Timestamp>,
        rec: &Recorded,
        outcomes: &[(PaymentId, GatewayOutcome)],
        now: Timestamp,
    ) -> Result<Vec<Payment>> {
        let (reason, note) = rec.refund.clone().unwrap_or_default();
        let reason = RefundReason::parse(&reason);
        self.store.write(|tx| {
            if !tx.complete_work(item, held)? && held.is_some() {
                return Err(StoreError::LeaseLost(item).into());
            }
            let mut inv = tx
                .invoice(rec.branch_id, rec.invoice_id)?
                .ok_or_else(|| Error::not_found("Invoice", rec.invoice_id))?;
            let mut out = vec![];
            for (id, outcome) in outcomes {
                let Some(mut p) = tx.payment(rec.branch_id, *id)? else { continue };
                if !matches!(p.status, PaymentStatus::Succeeded | PaymentStatus::Settled) {
                    continue;
                }
                if p.method.is_some_and(PaymentMethod::is_gateway) {
                    p.latest_pgw_message = Some(format!("{} {}", outcome.code, outcome.message));
                }
                if outcome.approved {
                    out.push(self.record_refunded(tx, &mut inv, p, reason, note.clone(), now)?);
                } else {
                    p.updated_at = Some(now);
                    tx.update_payment(&p)?;
                }
            }
            Ok(out)
        })
    }

    /// The handler of a refund nobody recorded: asks the gateway again under the same
    /// references (it refunds at most once) for the payments still paid, and records the
    /// outcome. Returns how many were refunded.
    fn finish_abandoned_refund(&self, item: &DueWork) -> Result<usize> {
        let Some(rec) = Recorded::of(item) else {
            self.store.write_leased(|tx| Ok(tx.complete_work(item.id, item.leased_until)?))?;
            return Ok(0);
        };
        let server_now = self.clock().now();
        let (org, paid, now) = self.store.read(|tx| {
            let org = tx.org(item.org_id)?;
            let mut paid = vec![];
            for id in &rec.payment_ids {
                if let Some(p) = tx.payment(rec.branch_id, *id)? {
                    if matches!(p.status, PaymentStatus::Succeeded | PaymentStatus::Settled) {
                        paid.push(p);
                    }
                }
            }
            Ok((org, paid, org_now(tx, item.org_id, server_now)?))
        })?;
        let Some(org) = org else { return Ok(0) };
        let outcomes = self.ask_refunds(&org, &rec, &paid)?;
        Ok(self.record_refunds(item.id, item.leased_until, &rec, &outcomes, now)?.len())
    }
}
