//! Settlement: what paying changes on the invoice (paid amount, completion, its events) and
//! on the catalog (a finalised invoice freezes the products and coupons it uses). Shared by
//! every way of paying ([`crate::payment`]).

use super::events::{emit_invoice_with, emit_payment, emit_payment_with, link_metadata};
use super::{Invoice, InvoiceStatus};
use crate::auth::Scope;
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::Result;
use crate::event::EventType;
use crate::ids::{CouponId, ProductId};
use crate::money::Money;
use crate::payment::{Payment, PaymentStatus, RefundReason};
use crate::store::{Store, Tx};

impl<S: Store> Engine<S> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_paid(
        &self,
        tx: &mut dyn Tx,
        scope: &Scope,
        inv: &mut Invoice,
        all: &[Payment],
        paid: Vec<Payment>,
        event: EventType,
        now: Timestamp,
    ) -> Result<Vec<Payment>> {
        // Every event below carries it: read once.
        let metadata = link_metadata(tx, inv)?;
        for p in &paid {
            tx.update_payment(p)?;
            inv.paid_amount = Money::new(inv.paid_amount.amount() + p.amount.amount(), inv.currency);
            emit_payment_with(tx, self.public_url(), event, inv, p, &metadata, now)?;
            // The consumer's receipt.
            let extra = serde_json::json!({"payment_id": p.id, "installment": p.number, "amount": p.amount});
            crate::notification::queue::about_invoice(tx, &scope.org, self.public_url(), inv, crate::notification::Kind::PaymentReceipt, extra, now)?;
        }
        if let Some(link) = inv.payment_link_id {
            // What the link's invoices are paid is the link's collected amount.
            let sum: rust_decimal::Decimal = paid.iter().map(|p| p.amount.amount()).sum();
            tx.add_payment_link_collected(inv.branch_id, link.into(), Money::new(sum, inv.currency))?;
        }
        let all_paid = all.iter().all(|p| p.status.is_paid() || paid.iter().any(|q| q.id == p.id));
        if all_paid && inv.status != InvoiceStatus::Completed {
            inv.status = InvoiceStatus::Completed;
        }
        inv.updated_at = Some(now);
        // Paying changes no item.
        tx.update_invoice_row(inv)?;
        if all_paid {
            emit_invoice_with(tx, self.public_url(), EventType::InvoiceCompleted, inv, &metadata, now)?;
        }
        // A subscription's invoice paid: its latest invoice counts as paid, the first one
        // activates it.
        crate::subscription::ops::on_invoice_paid(tx, self.public_url(), inv, all_paid, now)?;
        self.freeze_catalog(tx, scope, inv)?;
        Ok(paid)
    }

    /// Sets `used_in_finalized_invoice` on the products and coupons a finalised invoice uses.
    pub(crate) fn freeze_catalog(&self, tx: &mut dyn Tx, scope: &Scope, inv: &Invoice) -> Result<()> {
        let mut products: Vec<ProductId> = inv.items.iter().map(|i| i.product_id).collect();
        products.sort();
        products.dedup();
        tx.mark_products_used(scope.branch_id(), &products)?;
        let mut coupons: Vec<CouponId> = inv
            .coupon_ids
            .iter()
            .chain(inv.items.iter().flat_map(|i| i.coupon_ids.iter()))
            .copied()
            .collect();
        coupons.sort();
        coupons.dedup();
        for cid in coupons {
            if let Some(mut c) = tx.coupon(scope.branch_id(), cid)? {
                if !c.used_in_finalized_invoice {
                    c.used_in_finalized_invoice = true;
                    tx.update_coupon(&c)?;
                }
            }
        }
        Ok(())
    }

    /// Records `p` refunded (REFUNDED with when and why, PAYMENT_REFUNDED) and takes its amount
    /// off the invoice's paid amount; the invoice's status does not change.
    pub(crate) fn record_refunded(
        &self,
        tx: &mut dyn Tx,
        inv: &mut Invoice,
        mut p: Payment,
        reason: Option<RefundReason>,
        note: Option<String>,
        now: Timestamp,
    ) -> Result<Payment> {
        p.status = PaymentStatus::Refunded;
        p.refunded_at = Some(now);
        p.refund_reason = reason;
        p.refund_note = note;
        p.updated_at = Some(now);
        tx.update_payment(&p)?;
        inv.paid_amount = Money::new((inv.paid_amount.amount() - p.amount.amount()).max(rust_decimal::Decimal::ZERO), inv.currency);
        inv.updated_at = Some(now);
        tx.update_invoice_row(inv)?;
        emit_payment(tx, self.public_url(), EventType::PaymentRefunded, inv, &p, now)?;
        Ok(p)
    }
}
