//! Later installments charged on their due date: each scheduled installment of an invoice paid
//! by card through a payment link is an item of the due-work queue (its id is the payment's, so
//! there is never a second), due on the payment's date in the organization's time, so the
//! sandbox clock drives it and any process may run it.
//!
//! Exactly once: the item is completed in the very transaction that starts the charge (the
//! payment PROCESSING under a recorded attempt, [`Engine::record_charge`]); from there the
//! attempt's own recovery applies (a charge nobody recorded is voided and its payment FAILED).
//! Approved: PAYMENT_SUCCEEDED (and INVOICE_COMPLETED with the last). Declined, or no card to
//! charge: PAYMENT_FAILED, and the payment stays payable (the payer can still pay it from the
//! invoice's page); the consumer is told so (INSTALLMENT_FAILED notifications with the page's
//! address, recorded in the same transaction, when the consumer has an e-mail or a phone). A
//! reminder is queued with each scheduled installment ([`crate::notification::reminder`]).

use super::{Payment, PaymentMethod, PaymentStatus};
use crate::auth::{Actor, BranchAccess, Scope};
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Error, Result, StoreError};
use crate::event::EventType;
use crate::ids::{BranchId, PaymentId, WorkId};
use crate::invoice::Invoice;
use crate::org::Role;
use crate::store::{Store, StoreResult, Tx};
use crate::work::{DueWork, Handler};
use serde_json::json;

pub(crate) const INSTALLMENT_KIND: &str = "payment.installment";
/// Report keys.
pub const INSTALLMENTS_CHARGED: &str = "installments charged";
pub const INSTALLMENTS_FAILED: &str = "installments failed";

/// Queues the charge of a scheduled installment on its date; in the transaction that makes it.
pub(crate) fn schedule(tx: &mut dyn Tx, p: &Payment) -> StoreResult<()> {
    let payload = json!({"branch_id": p.branch_id});
    tx.insert_work(&DueWork::new(WorkId(p.id.0), p.org_id, INSTALLMENT_KIND, p.scheduled_on, payload))?;
    // The consumer is reminded some days before.
    crate::notification::reminder::schedule(tx, p)
}

pub(crate) fn work_handlers<S: Store>() -> Vec<Handler<Engine<S>>> {
    vec![Handler {
        kind: INSTALLMENT_KIND,
        batched: false,
        ready: |_| true,
        run: |b, items, report| {
            for item in items {
                match b.charge_due_installment(item) {
                    Ok(Some(true)) => report.add(INSTALLMENTS_CHARGED, 1),
                    Ok(Some(false)) => report.add(INSTALLMENTS_FAILED, 1),
                    Ok(None) => {}
                    Err(e) if crate::work::ops::is_lease_lost(&e) => {}
                    Err(_) => report.errors += 1,
                }
            }
        },
    }]
}

fn lease_lost(item: &DueWork) -> Error {
    StoreError::LeaseLost(item.id).into()
}

impl<S: Store> Engine<S> {
    /// Charges one due installment to the consumer's latest card with consent. `Some(approved)`
    /// when a charge was made or refused, `None` when there was nothing to charge any more.
    fn charge_due_installment(&self, item: &DueWork) -> Result<Option<bool>> {
        let id = PaymentId(item.id.0);
        let branch: Option<BranchId> = item.payload.get("branch_id").and_then(|v| serde_json::from_value(v.clone()).ok());
        // The engine acts for the organization in the payment's branch.
        let found = self.store.read(|tx| {
            let Some(branch) = branch.map(|b| tx.branch(item.org_id, b)).transpose()?.flatten() else {
                return Ok(None);
            };
            let Some(org) = tx.org(item.org_id)? else { return Ok(None) };
            let Some(admin) = tx.first_org_admin(org.id)? else { return Ok(None) };
            let Some(p) = tx.payment(branch.id, id)? else { return Ok(None) };
            let inv = tx.invoice(branch.id, p.invoice_id)?;
            let card = match &inv {
                Some(inv) => tx.latest_active_card(inv.consumer_id)?.filter(|c| c.consent),
                None => None,
            };
            let actor = Actor {
                user_id: admin.id,
                role: Role::OrganizationAdmin,
                access: BranchAccess::Only(vec![branch.id]),
                api_key_id: None,
            };
            Ok(Some((Scope { org, branch, actor }, p, inv, card)))
        })?;
        let done = |b: &Self| b.store.write_leased(|tx| Ok(tx.complete_work(item.id, item.leased_until)?));
        let Some((scope, p, inv, card)) = found else {
            done(self)?;
            return Ok(None);
        };
        let payable = inv.as_ref().is_some_and(|i| i.status == crate::invoice::InvoiceStatus::Accepted) && p.status.is_payable();
        if !payable {
            // Paid another way, canceled, or the invoice is no longer open: nothing to do.
            done(self)?;
            return Ok(None);
        }
        let now = self.now(&scope);
        let Some(card) = card else {
            // No card to charge: the payment fails, and stays payable from the invoice.
            self.store.write(|tx| {
                if !tx.complete_work(item.id, item.leased_until)? {
                    return Err(lease_lost(item));
                }
                let (inv, all) = self.load_invoice(tx, &scope, p.invoice_id)?;
                let mut p = all.into_iter().find(|q| q.id == id).ok_or_else(|| Error::not_found("Payment", id))?;
                p.status = PaymentStatus::Failed;
                p.latest_pgw_message = Some("NO CARD: the consumer has no saved card with consent".into());
                p.updated_at = Some(now);
                tx.update_payment(&p)?;
                crate::invoice::events::emit_payment(tx, self.public_url(), EventType::PaymentFailed, &inv, &p, now)?;
                self.notify_installment_failed(tx, &scope, &inv, &p, now)
            })?;
            return Ok(Some(false));
        };
        let charge = self.record_charge(scope.org_id(), now, |tx| {
            // Done once: the item ends in the transaction that starts the charge.
            if !tx.complete_work(item.id, item.leased_until)? {
                return Err(lease_lost(item));
            }
            let (inv, all) = self.load_invoice(tx, &scope, p.invoice_id)?;
            let mut p = all.iter().find(|q| q.id == id).cloned().ok_or_else(|| Error::not_found("Payment", id))?;
            if !p.status.is_payable() {
                // Paid or taken in between: the item stays, and its next run finds nothing to do.
                return Err(Error::rule(crate::error::Code::PAYMENT_FINALIZED, format!("Payment '{id}' is {}", p.status)));
            }
            p.method = Some(PaymentMethod::parse(&card.network).unwrap_or(PaymentMethod::PgwCardUnspecified));
            Ok((inv, vec![p]))
        })?;
        let gw = self.gateway_for(&scope.org);
        let outcome = self.call_out("the payment gateway", || {
            gw.charge_token(&charge.reference(), &card.gateway_token, charge.total())
        })?;
        self.record_charge_outcome_and(&scope, &charge, &outcome, |tx, inv, recorded| {
            if !outcome.approved {
                for p in recorded {
                    self.notify_installment_failed(tx, &scope, inv, p, now)?;
                }
            }
            Ok(())
        })?;
        Ok(Some(outcome.approved))
    }

    /// Records the consumer's INSTALLMENT_FAILED notifications (in its language, on its
    /// channels: see [`crate::notification::queue`]), with the invoice page's address to pay
    /// it from. Nothing when the consumer has neither e-mail nor phone.
    fn notify_installment_failed(&self, tx: &mut dyn Tx, scope: &Scope, inv: &Invoice, p: &Payment, now: Timestamp) -> Result<()> {
        let extra = json!({
            "payment_id": p.id,
            "installment": p.number,
            "amount": p.amount,
            "reason": p.latest_pgw_message,
        });
        crate::notification::queue::about_invoice(tx, &scope.org, self.public_url(), inv, crate::notification::Kind::InstallmentFailed, extra, now)?;
        Ok(())
    }
}
