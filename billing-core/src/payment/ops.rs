//! Payment operations: reading, marking paid by hand, and refunds. A refund through the gateway
//! calls it with no transaction open (see [`crate::Lane::Io`]).

use super::{MarkPaid, Payment, PaymentFilter, PaymentMethod, PaymentSort, PaymentStatus, RefundRequest};
use crate::auth::Scope;
use crate::error::{Code, Error, Result};
use crate::event::EventType;
use crate::ids::PaymentId;
use crate::invoice::InvoiceStatus;
use crate::lane::Lane;
use crate::list::{ListQuery, Page};
use crate::money::Money;
use crate::store::{Store, Tx};
use rust_decimal::Decimal;
use uuid::Uuid;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const GET: Lane = Lane::Read;
    pub const LIST: Lane = Lane::Read;
    pub const MARK_PAID: Lane = Lane::Write;
    pub const REFUND: Lane = Lane::Io;
}

crate::service!(
    /// Payments: get, list, mark-paid, refund; the payer's card charge, saved cards and
    /// auto-charge on demand (in `charge.rs`).
    Payments
);

impl<S: Store> Payments<'_, S> {
    pub fn get(&self, scope: &Scope, id: PaymentId) -> Result<Payment> {
        self.read_found("Payment", id, |tx| tx.payment(scope.branch_id(), id))
    }

    pub fn list(&self, scope: &Scope, q: &ListQuery<PaymentSort>, f: &PaymentFilter) -> Result<Page<Payment>> {
        self.store.read(|tx| Ok(tx.list_payments(scope.branch_id(), q, f)?))
    }

    /// Marks an unpaid payment as paid with a manual method (spec: Mark-paid rules), in one
    /// transaction with its events: PAYMENT_MARKED_AS_PAID, then INVOICE_COMPLETED when the
    /// invoice is now fully paid. The products and coupons of the invoice are frozen.
    pub fn mark_paid(&self, scope: &Scope, id: PaymentId, req: MarkPaid) -> Result<Payment> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut p = tx.payment(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Payment", id))?;
            match p.status {
                PaymentStatus::Pending | PaymentStatus::UnderReview | PaymentStatus::Failed => {}
                PaymentStatus::Processing | PaymentStatus::FailedInitiation => {
                    return Err(Error::rule(Code::INVALID_STATUS, format!("Payment '{id}' is {}", p.status)));
                }
                s => return Err(Error::rule(Code::PAYMENT_FINALIZED, format!("Payment '{id}' is {s}"))),
            }
            if !req.method.is_manual() {
                return Err(Error::rule(
                    Code::PAYMENT_FLOW_NOT_ALLOWED,
                    format!("{} is not a manual payment method (CASH, BANK_TRANSFER, CARD, QURRAH)", req.method),
                ));
            }
            let (mut inv, all) = self.load_invoice(tx, scope, p.invoice_id)?;
            if inv.status == InvoiceStatus::Canceled {
                return Err(Error::rule(Code::INVOICE_FINALISED, format!("Invoice '{}' is canceled", inv.id)));
            }
            if inv.installments.is_some() && inv.status != InvoiceStatus::Accepted {
                return Err(Error::rule(
                    Code::INVOICE_INVALID_STATUS,
                    format!("Installment invoice '{}' is {}, not ACCEPTED", inv.id, inv.status),
                ));
            }
            p.status = PaymentStatus::Succeeded;
            p.method = Some(req.method);
            p.payed_at = Some(now);
            p.note = req.note.clone();
            p.transaction_id = Some(Uuid::now_v7());
            p.updated_at = Some(now);
            let out = self.record_paid(tx, scope, &mut inv, &all, vec![p], EventType::PaymentMarkedAsPaid, now)?;
            Ok(out.into_iter().next().expect("one payment"))
        })
    }

    /// Full refund of a paid payment (and, when allowed, of the payments paid in the same
    /// transaction). Card and wallet payments are refunded through the gateway; manual ones
    /// are only recorded. The invoice's status does not change; its paid amount goes down by
    /// what was refunded.
    pub fn refund(&self, scope: &Scope, id: PaymentId, req: RefundRequest) -> Result<Payment> {
        let now = self.now(scope);
        let check = |tx: &mut dyn Tx| -> Result<Vec<Payment>> {
            let p = tx.payment(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Payment", id))?;
            match p.status {
                PaymentStatus::Refunded => return Err(Error::rule(Code::PAYMENT_REFUNDED_ALREADY, format!("Payment '{id}' is already refunded"))),
                PaymentStatus::Succeeded | PaymentStatus::Settled => {}
                s => return Err(Error::rule(Code::INVALID_STATUS, format!("Payment '{id}' is {s}, not paid"))),
            }
            if p.amount.is_zero() {
                return Err(Error::rule(Code::INVALID_PARAMETERS, format!("Payment '{id}' of 0 has nothing to refund")));
            }
            let related: Vec<Payment> = match p.transaction_id {
                Some(t) => tx
                    .invoice_payments(p.invoice_id)?
                    .into_iter()
                    .filter(|q| q.transaction_id == Some(t) && matches!(q.status, PaymentStatus::Succeeded | PaymentStatus::Settled))
                    .collect(),
                None => vec![p.clone()],
            };
            if related.len() > 1 && !req.allow_multiple {
                let total: Decimal = related.iter().map(|q| q.amount.amount()).sum();
                return Err(Error::MultiplePayments {
                    payment_ids: related.iter().map(|q| q.id.to_string()).collect(),
                    total_amount: Money::new(total, p.amount.currency()).to_string(),
                });
            }
            Ok(related)
        };
        let targets = self.store.read(|tx| check(tx))?;
        if targets.iter().any(|p| p.method.is_some_and(PaymentMethod::is_gateway)) {
            let refunded = self.refund_through_gateway(scope, &targets, req.reason, req.note.clone(), |tx| check(tx))?;
            return refunded
                .into_iter()
                .find(|p| p.id == id)
                .ok_or_else(|| Error::rule(Code::INVALID_STATUS, format!("Payment '{id}' changed while it was refunded")));
        }
        // Paid by hand: there is nothing to call, the refund is only recorded.
        self.store.write(|tx| {
            let related = check(tx)?;
            let mut inv = tx
                .invoice(scope.branch_id(), related[0].invoice_id)?
                .ok_or_else(|| Error::not_found("Invoice", related[0].invoice_id))?;
            let mut asked = None;
            for p in related {
                let p = self.record_refunded(tx, &mut inv, p, Some(req.reason), req.note.clone(), now)?;
                if p.id == id {
                    asked = Some(p);
                }
            }
            Ok(asked.expect("the asked payment is among the related ones"))
        })
    }
}
