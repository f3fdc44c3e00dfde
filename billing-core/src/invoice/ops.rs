//! Invoice operations ([`Invoices`]). Each is one transaction with its events and
//! notifications; amounts come from [`crate::pricing`].

use super::events::{emit_invoice, emit_payment};
use super::*;
use crate::auth::Scope;
use crate::clock::Timestamp;
use crate::consumer::{CommunicationMethod, Consumer};
use crate::engine::Engine;
use crate::error::{Code, Error, Result};
use crate::event::EventType;
use crate::ids::{ConsumerId, PaymentId};
use crate::ids::{InvoiceId, InvoiceItemId};
use crate::lane::Lane;
use crate::list::Page;
use crate::money::Money;
use crate::notification::Channel;
use crate::payment::{Payment, PaymentStatus, PaymentType};
use crate::pricing;
use crate::product::Product;
use crate::store::{Store, Tx};
use serde_json::json;
use std::collections::HashMap;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const CREATE: Lane = Lane::Write;
    pub const GET: Lane = Lane::Read;
    pub const LIST: Lane = Lane::Read;
    pub const UPDATE: Lane = Lane::Write;
    pub const VOID: Lane = Lane::Write;
    pub const SEND: Lane = Lane::Write;
    /// [`Invoices::accept`] (in `accept.rs`).
    pub const ACCEPT: Lane = Lane::Write;
}

/// has an address for, else e-mail, else SMS.
pub(crate) fn channel_of(c: &Consumer) -> Option<(Channel, String)> {
    let email = c.email.as_ref().map(|e| e.as_str().to_string());
    let phone = c.phone_number.as_ref().map(|p| p.as_str().to_string());
    for m in &c.communication_methods {
        match m {
            CommunicationMethod::Email if email.is_some() => return Some((Channel::Email, email.clone().expect("checked"))),
            CommunicationMethod::Sms if phone.is_some() => return Some((Channel::Sms, phone.clone().expect("checked"))),
            CommunicationMethod::WhatsApp if phone.is_some() => return Some((Channel::WhatsApp, phone.clone().expect("checked"))),
            _ => {}
        }
    }
    email.map(|e| (Channel::Email, e)).or(phone.map(|p| (Channel::Sms, p)))
}

/// An invoice whose payment is being charged at the gateway cannot be voided or re-planned until
/// the charge's outcome is recorded (its payments would be replaced under the charge).
pub(super) fn check_no_charge_in_flight(inv: &Invoice, payments: &[Payment]) -> Result<()> {
    if payments.iter().any(|p| p.status == PaymentStatus::Processing) {
        return Err(Error::rule(
            Code::INVOICE_INVALID_STATUS,
            format!("A payment of invoice '{}' is being processed", inv.id),
        ));
    }
    Ok(())
}

/// A new unpaid payment of `inv`: the `number`-th, of `amount`, due at `due`.
pub(crate) fn pending_payment(inv: &Invoice, number: u32, amount: Money, payment_type: PaymentType, due: Timestamp, now: Timestamp) -> Payment {
    Payment {
        id: PaymentId::new(),
        org_id: inv.org_id,
        branch_id: inv.branch_id,
        invoice_id: inv.id,
        number,
        amount,
        payment_type,
        method: None,
        status: PaymentStatus::Pending,
        scheduled_on: due,
        payed_at: None,
        refunded_at: None,
        refund_reason: None,
        refund_note: None,
        note: None,
        transaction_id: None,
        latest_pgw_message: None,
        created_at: now,
        updated_at: None,
    }
}

impl<S: Store> Engine<S> {
    pub(crate) fn load_invoice(&self, tx: &mut dyn Tx, scope: &Scope, id: InvoiceId) -> Result<(Invoice, Vec<Payment>)> {
        let inv = tx.invoice(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Invoice", id))?;
        let payments = tx.invoice_payments(id)?;
        Ok((inv, payments))
    }

    /// What the detailed view of `inv` needs besides it, read in the caller's transaction: its
    /// payments, its consumer and the products of its items.
    fn detail_in(&self, tx: &mut dyn Tx, scope: &Scope, inv: Invoice) -> Result<InvoiceDetail> {
        let payments = tx.invoice_payments(inv.id)?;
        let consumer = tx.consumer(scope.branch_id(), inv.consumer_id)?;
        let mut products: Vec<Product> = vec![];
        for it in &inv.items {
            if !products.iter().any(|p| p.id == it.product_id) {
                if let Some(p) = tx.product(scope.branch_id(), it.product_id)? {
                    products.push(p);
                }
            }
        }
        Ok(InvoiceDetail {
            invoice: inv,
            payments,
            consumer,
            products,
        })
    }

    /// Runs `op` (an invoice operation) and reads the invoice's detail in the same transaction,
    /// so the answer shows exactly what the operation committed.
    fn write_detailed(&self, scope: &Scope, mut op: impl FnMut(&mut dyn Tx) -> Result<Invoice>) -> Result<InvoiceDetail> {
        self.store.write(|tx| {
            let inv = op(tx)?;
            self.detail_in(tx, scope, inv)
        })
    }

    fn create_invoice_in(&self, tx: &mut dyn Tx, scope: &Scope, req: &InvoiceCreate) -> Result<Invoice> {
        let now = self.now(scope);
        let consumer = tx
            .consumer(scope.branch_id(), req.consumer_id)?
            .filter(|c| !c.is_deleted)
            .ok_or_else(|| Error::not_found("Consumer", req.consumer_id))?;
        let loaded = pricing::load(tx, scope.branch_id(), &req.items, &req.coupons, req.currency)?;
        let priced = pricing::price(&req.items, &loaded, req.currency, scope.org.settings.vat_rate)?;
        let totals = &priced.totals;
        let items = priced
            .items
            .iter()
            .map(|line| InvoiceItem::from_priced(line, InvoiceItemId::new(), now))
            .collect();
        let number = tx.next_invoice_number(scope.org_id())?;
        let mut inv = Invoice {
            id: InvoiceId::new(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            user_id: scope.actor.user_id,
            consumer_id: consumer.id,
            org_invoice_number: number,
            description: req.description.clone(),
            currency: req.currency,
            status: InvoiceStatus::Created,
            payment_methods: req.payment_methods,
            coupon_ids: req.coupons.clone(),
            exclude_coupons_if_installments: req.exclude_coupons_if_installments,
            notify_consumer: req.notify_consumer,
            scheduled_on: req.scheduled_on.unwrap_or(now),
            original_amount: totals.original_amount,
            item_level_discounted_amount: totals.item_level_discounted_amount,
            total_vat_amount: totals.total_vat_amount,
            total_price_excluding_vat: totals.total_price_excluding_vat,
            total_amount: totals.total_amount,
            paid_amount: Money::zero(req.currency),
            coupons: totals.coupons.clone(),
            installments: None,
            payment_link_id: None,
            subscription_id: None,
            items,
            created_at: now,
            updated_at: None,
        };
        // A fully discounted invoice has nothing to pay: it is settled at once (its single
        // payment SUCCEEDED, the invoice COMPLETED), with no payment event since no money moves.
        let nothing_to_pay = inv.total_amount.is_zero();
        let notify = if req.notify_consumer && !nothing_to_pay {
            channel_of(&consumer)
        } else {
            None
        };
        if notify.is_some() {
            inv.status = InvoiceStatus::Sent;
        }
        let mut payment = pending_payment(&inv, 1, inv.total_amount, PaymentType::Initial, inv.scheduled_on, now);
        if nothing_to_pay {
            inv.status = InvoiceStatus::Completed;
            payment.status = PaymentStatus::Succeeded;
            payment.payed_at = Some(now);
            payment.note = Some("Nothing to pay".into());
        }
        tx.insert_invoice(&inv)?;
        // Each coupon the invoice uses (on its items or on the whole) counts one redemption.
        for c in &priced.redeemed {
            tx.redeem_coupon(*c)?;
        }
        tx.insert_payment(&payment)?;
        let created = Invoice {
            status: InvoiceStatus::Created,
            ..inv.clone()
        };
        emit_invoice(tx, self.public_url(), EventType::InvoiceCreated, &created, now)?;
        if nothing_to_pay {
            emit_invoice(tx, self.public_url(), EventType::InvoiceCompleted, &inv, now)?;
            self.freeze_catalog(tx, scope, &inv)?;
        }
        if notify.is_some() {
            self.notify_invoice(tx, scope, &inv, now)?;
            emit_invoice(tx, self.public_url(), EventType::InvoiceSent, &inv, now)?;
        }
        Ok(inv)
    }

    /// Records the consumer's INVOICE_SENT notifications (with the invoice's page, where it is
    /// paid) in the caller's transaction; see [`crate::notification::queue`].
    fn notify_invoice(&self, tx: &mut dyn Tx, scope: &Scope, inv: &Invoice, now: Timestamp) -> Result<()> {
        crate::notification::queue::about_invoice(tx, &scope.org, self.public_url(), inv, crate::notification::Kind::InvoiceSent, json!({}), now)?;
        Ok(())
    }

    pub(crate) fn void_invoice_in(&self, tx: &mut dyn Tx, scope: &Scope, id: InvoiceId) -> Result<Invoice> {
        let now = self.now(scope);
        let (mut inv, payments) = self.load_invoice(tx, scope, id)?;
        if inv.is_finalised(&payments) {
            return Err(Error::rule(Code::INVOICE_FINALISED, format!("Invoice '{id}' is finalised")));
        }
        check_no_charge_in_flight(&inv, &payments)?;
        inv.status = InvoiceStatus::Canceled;
        inv.updated_at = Some(now);
        tx.update_invoice_row(&inv)?;
        for mut p in payments.into_iter().filter(|p| p.status.is_unpaid()) {
            p.status = PaymentStatus::Canceled;
            p.updated_at = Some(now);
            tx.update_payment(&p)?;
            emit_payment(tx, self.public_url(), EventType::PaymentCanceled, &inv, &p, now)?;
        }
        emit_invoice(tx, self.public_url(), EventType::InvoiceCanceled, &inv, now)?;
        self.freeze_catalog(tx, scope, &inv)?;
        Ok(inv)
    }

    fn send_invoice_in(&self, tx: &mut dyn Tx, scope: &Scope, id: InvoiceId) -> Result<Invoice> {
        let now = self.now(scope);
        let (mut inv, payments) = self.load_invoice(tx, scope, id)?;
        if inv.is_finalised(&payments) {
            return Err(Error::rule(Code::INVOICE_FINALISED, format!("Invoice '{id}' is finalised")));
        }
        let consumer = tx
            .consumer(scope.branch_id(), inv.consumer_id)?
            .ok_or_else(|| Error::not_found("Consumer", inv.consumer_id))?;
        channel_of(&consumer).ok_or_else(|| Error::rule(Code::INVALID_PARAMETERS, "The consumer has no e-mail address or phone number"))?;
        if inv.status == InvoiceStatus::Created {
            inv.status = InvoiceStatus::Sent;
        }
        inv.updated_at = Some(now);
        tx.update_invoice_row(&inv)?;
        self.notify_invoice(tx, scope, &inv, now)?;
        emit_invoice(tx, self.public_url(), EventType::InvoiceSent, &inv, now)?;
        Ok(inv)
    }

    fn update_invoice_inplace_in(&self, tx: &mut dyn Tx, scope: &Scope, id: InvoiceId, u: &InvoiceInPlaceUpdate) -> Result<Invoice> {
        let now = self.now(scope);
        let (mut inv, payments) = self.load_invoice(tx, scope, id)?;
        if inv.is_finalised(&payments) {
            return Err(Error::rule(Code::INVOICE_FINALISED, format!("Invoice '{id}' is finalised")));
        }
        if let Some(d) = &u.description {
            inv.description = Some(d.clone());
        }
        if let Some(t) = u.scheduled_on {
            inv.scheduled_on = t;
            // A single payment follows the invoice's date.
            if inv.installments.is_none() {
                for mut p in payments.iter().filter(|p| p.status.is_unpaid()).cloned() {
                    p.scheduled_on = t;
                    p.updated_at = Some(now);
                    tx.update_payment(&p)?;
                }
            }
        }
        inv.updated_at = Some(now);
        tx.update_invoice(&inv)?;
        emit_invoice(tx, self.public_url(), EventType::InvoiceUpdated, &inv, now)?;
        Ok(inv)
    }
}

crate::service!(
    /// Invoices: create, get, list, update, void, send; the payer's plan (`accept`) and the
    /// payer's side of the pay page (`pay_page`, `pay`, `decline`, in `pay.rs`). Each write is
    /// one transaction with its events and notifications.
    Invoices
);

impl<S: Store> Invoices<'_, S> {
    /// Creates an invoice: CREATED, or SENT when `notify_consumer` and the consumer has a
    /// channel (the notification is recorded). One INITIAL payment of the total. Answers the
    /// invoice's detail read in the same transaction.
    pub fn create(&self, scope: &Scope, req: InvoiceCreate) -> Result<InvoiceDetail> {
        self.write_detailed(scope, |tx| self.create_invoice_in(tx, scope, &req))
    }

    /// An invoice of the request's branch, with its payments, consumer and products.
    pub fn get(&self, scope: &Scope, id: InvoiceId) -> Result<InvoiceDetail> {
        self.store.read(|tx| {
            let inv = tx.invoice(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Invoice", id))?;
            self.detail_in(tx, scope, inv)
        })
    }

    /// A page of invoices, each with its payments and consumer (no products: the list item
    /// does not show them). The page's payments and consumers are read in one go each.
    pub fn list(&self, scope: &Scope, req: &InvoiceListRequest) -> Result<Page<InvoiceDetail>> {
        self.store.read(|tx| {
            let page = tx.list_invoices(scope.branch_id(), &req.query, &req.filter)?;
            let ids: Vec<InvoiceId> = page.items.iter().map(|i| i.id).collect();
            let mut consumer_ids: Vec<ConsumerId> = page.items.iter().map(|i| i.consumer_id).collect();
            consumer_ids.sort();
            consumer_ids.dedup();
            let mut payments: HashMap<InvoiceId, Vec<Payment>> = HashMap::new();
            for p in tx.payments_of_invoices(&ids)? {
                payments.entry(p.invoice_id).or_default().push(p);
            }
            let consumers: HashMap<ConsumerId, Consumer> = tx.consumers_by_ids(scope.branch_id(), &consumer_ids)?.into_iter().map(|c| (c.id, c)).collect();
            let mut out = Vec::with_capacity(page.items.len());
            for inv in page.items {
                out.push(InvoiceDetail {
                    payments: payments.remove(&inv.id).unwrap_or_default(),
                    consumer: consumers.get(&inv.consumer_id).cloned(),
                    invoice: inv,
                    products: vec![],
                });
            }
            Ok(Page {
                items: out,
                total: page.total,
                page: page.page,
                limit: page.limit,
            })
        })
    }

    /// Cancels an invoice that is not finalised; its unpaid payments become CANCELED.
    pub fn void(&self, scope: &Scope, id: InvoiceId) -> Result<InvoiceDetail> {
        self.write_detailed(scope, |tx| self.void_invoice_in(tx, scope, id))
    }

    /// (Re)sends the invoice to its consumer; CREATED becomes SENT.
    pub fn send(&self, scope: &Scope, id: InvoiceId) -> Result<InvoiceDetail> {
        self.write_detailed(scope, |tx| self.send_invoice_in(tx, scope, id))
    }

    /// Changes the description or scheduled date of an invoice that is not finalised.
    pub fn update(&self, scope: &Scope, id: InvoiceId, u: InvoiceInPlaceUpdate) -> Result<InvoiceDetail> {
        self.write_detailed(scope, |tx| self.update_invoice_inplace_in(tx, scope, id, &u))
    }
}
