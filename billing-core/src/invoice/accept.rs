//! The payer's choice of how to pay an invoice: in full, or in 2, 3 or 4 installments.

use super::events::emit_invoice;
use super::installments::{self, InstallmentPlan, PaymentPlan};
use super::ops::{check_no_charge_in_flight, pending_payment, Invoices};
use super::{Invoice, InvoiceStatus};
use crate::auth::Scope;
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Code, Error, Result};
use crate::event::EventType;
use crate::ids::InvoiceId;
use crate::money::Money;
use crate::payment::{Payment, PaymentType};
use crate::pricing::{InvoiceTotals, ItemInput};
use crate::store::{Store, Tx};

impl<S: Store> Invoices<'_, S> {
    /// The payer chose how to pay: in full, or in 2, 3 or 4 installments. The invoice becomes
    /// ACCEPTED; with installments its single payment is replaced by one INSTALLMENT payment per
    /// part (`exclude_coupons_if_installments` recomputes the total without coupons first).
    pub fn accept(&self, scope: &Scope, id: InvoiceId, plan: PaymentPlan) -> Result<(Invoice, Vec<Payment>)> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let (mut inv, payments) = self.load_invoice(tx, scope, id)?;
            let payments = self.accept_in(tx, scope, &mut inv, payments, plan, now)?;
            Ok((inv, payments))
        })
    }

    /// The installment options of an invoice that are available now (2, 3, 4).
    pub fn installment_options(&self, scope: &Scope, inv: &Invoice) -> Vec<u8> {
        if !inv.payment_methods.installment || inv.items.iter().any(|i| !i.one_time) {
            return vec![];
        }
        installments::INSTALLMENT_OPTIONS
            .iter()
            .copied()
            .filter(|n| installments::available(&scope.org.settings, installment_total(inv, &scope.org.settings), *n))
            .collect()
    }
}

impl<S: Store> Engine<S> {
    /// [`Invoices::accept`] inside a transaction, on the invoice and payments just read:
    /// returns the invoice's payments after it (the invoice is updated in place).
    pub(crate) fn accept_in(
        &self,
        tx: &mut dyn Tx,
        scope: &Scope,
        inv: &mut Invoice,
        mut payments: Vec<Payment>,
        plan: PaymentPlan,
        now: Timestamp,
    ) -> Result<Vec<Payment>> {
        let settings = &scope.org.settings;
        let id = inv.id;
        if inv.is_finalised(&payments) {
            return Err(Error::rule(Code::INVOICE_FINALISED, format!("Invoice '{id}' is finalised")));
        }
        check_no_charge_in_flight(inv, &payments)?;
        if !matches!(inv.status, InvoiceStatus::Created | InvoiceStatus::Sent) {
            return Err(Error::rule(Code::INVOICE_INVALID_STATUS, format!("Invoice '{id}' is {}", inv.status)));
        }
        if let PaymentPlan::Installments(n) = plan {
            if !inv.payment_methods.installment {
                return Err(Error::rule(Code::PAYMENT_FLOW_NOT_ALLOWED, "The invoice does not allow installments"));
            }
            if inv.items.iter().any(|i| !i.one_time) {
                return Err(Error::rule(Code::PAYMENT_FLOW_NOT_ALLOWED, "Installments are for one-time products only"));
            }
            if let Some(t) = without_coupons(inv, settings) {
                for (item, a) in inv.items.iter_mut().zip(&t.items) {
                    item.original_amount = a.original_amount;
                    item.discounted_amount = a.discounted_amount;
                    item.coupons = vec![];
                    item.coupon_ids = vec![];
                    item.vat_amount = a.vat.vat;
                    item.excluding_vat = a.vat.excluding_vat;
                }
                inv.coupon_ids = vec![];
                inv.coupons = vec![];
                inv.original_amount = t.original_amount;
                inv.item_level_discounted_amount = t.item_level_discounted_amount;
                inv.total_vat_amount = t.total_vat_amount;
                inv.total_price_excluding_vat = t.total_price_excluding_vat;
                inv.total_amount = t.total_amount;
            }
            if !installments::available(settings, inv.total_amount, n) {
                return Err(Error::rule(
                    Code::INVALID_PARAMETERS,
                    format!("{n} installments of {} {} are not available", inv.total_amount, inv.currency),
                ));
            }
            for p in &payments {
                tx.delete_payment(p.id)?;
            }
            let plan = InstallmentPlan::new(inv.total_amount, n, now, settings.installment_split_months.max(1));
            payments = plan
                .parts
                .iter()
                .enumerate()
                .map(|(k, (amount, due))| pending_payment(inv, k as u32 + 1, *amount, PaymentType::Installment, *due, now))
                .collect();
            for p in &payments {
                tx.insert_payment(p)?;
            }
            inv.installments = Some(n);
        }
        inv.status = InvoiceStatus::Accepted;
        inv.updated_at = Some(now);
        tx.update_invoice(inv)?;
        emit_invoice(tx, self.public_url(), EventType::InvoiceAccepted, inv, now)?;
        Ok(payments)
    }
}

/// The totals of `inv` without its coupons, when paying it in installments drops them
/// (`exclude_coupons_if_installments` and some coupon applies); `None` otherwise.
fn without_coupons(inv: &Invoice, settings: &crate::org::OrgSettings) -> Option<InvoiceTotals> {
    let has_coupons = !inv.coupons.is_empty() || inv.items.iter().any(|i| !i.coupons.is_empty());
    if !(inv.exclude_coupons_if_installments && has_coupons) {
        return None;
    }
    let inputs: Vec<ItemInput> = inv
        .items
        .iter()
        .map(|i| ItemInput {
            unit_price: i.unit_price,
            quantity: i.quantity,
            vat_mode: i.vat_mode,
            coupons: vec![],
        })
        .collect();
    Some(InvoiceTotals::compute(inv.currency, &inputs, &[], settings.vat_rate))
}

/// What an invoice costs when paid in installments (its total, or its total without coupons
/// when installments drop them): the amount the installment plans split.
pub(crate) fn installment_total(inv: &Invoice, settings: &crate::org::OrgSettings) -> Money {
    without_coupons(inv, settings).map_or(inv.total_amount, |t| t.total_amount)
}
