//! Invoice and payment operations on [`Billing`]. Each is one transaction with its events;
//! gateway calls (refunds, charges) happen between a read and the write that records them, so
//! that a retried transaction never calls the gateway twice.

use super::events::{emit_invoice, emit_payment};
use super::gateway::{self, GatewayOutcome};
use super::installments::{self, InstallmentPlan, PaymentPlan};
use super::totals::{InvoiceTotals, ItemInput};
use super::*;
use crate::auth::Scope;
use crate::consumer::{CommunicationMethod, Consumer};
use crate::coupon::{Coupon, Discount};
use crate::engine::Billing;
use crate::error::{Code, Error};
use crate::event::EventType;
use crate::ids::NotificationId;
use crate::list::Page;
use crate::notification::{Channel, Notification};
use crate::product::{Product, ProductType};
use crate::store::{Store, Tx};

fn coupon_for(tx: &mut dyn Tx, scope: &Scope, id: CouponId, currency: Currency, loc: Vec<LocPart>) -> Result<Coupon> {
    let c = tx.coupon(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Coupon", id))?;
    if !c.is_active {
        return Err(Error::invalid(FieldError::new(
            "value_error",
            loc,
            format!("Value error, coupon '{id}' is not active"),
        )));
    }
    if let Discount::Fixed(m) = c.discount {
        if m.currency() != currency {
            return Err(Error::invalid(FieldError::new(
                "value_error",
                loc,
                format!("Value error, coupon '{id}' is in {}, the invoice in {currency}", m.currency()),
            )));
        }
    }
    Ok(c)
}

/// The channel an invoice notification goes out on: the consumer's first preferred method it
/// has an address for, else e-mail, else SMS.
fn channel_of(c: &Consumer) -> Option<(Channel, String)> {
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

fn is_finalised(inv: &Invoice, payments: &[Payment]) -> bool {
    inv.is_finalised(payments)
}

impl<S: Store> Billing<S> {
    fn load_invoice(&self, tx: &mut dyn Tx, scope: &Scope, id: InvoiceId) -> Result<(Invoice, Vec<Payment>)> {
        let inv = tx.invoice(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Invoice", id))?;
        let payments = tx.invoice_payments(id)?;
        Ok((inv, payments))
    }

    /// Sets `used_in_finalized_invoice` on the products and coupons a finalised invoice uses.
    fn freeze_catalog(&self, tx: &mut dyn Tx, scope: &Scope, inv: &Invoice) -> Result<()> {
        let mut products: Vec<ProductId> = inv.items.iter().map(|i| i.product_id).collect();
        products.dedup();
        for pid in products {
            if let Some(mut p) = tx.product(scope.branch_id(), pid)? {
                if !p.used_in_finalized_invoice {
                    p.used_in_finalized_invoice = true;
                    tx.update_product(&p, scope.org.settings.default_currency)?;
                }
            }
        }
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

    /// Creates an invoice: CREATED, or SENT when `notify_consumer` and the consumer has a
    /// channel (the notification is recorded). One INITIAL payment of the total.
    pub fn create_invoice(&self, scope: &Scope, req: InvoiceCreate) -> Result<Invoice> {
        self.store.write(|tx| self.create_invoice_in(tx, scope, &req))
    }

    /// Runs `op` (an invoice operation) and answers InvoiceDetailed read in the same
    /// transaction, so the response shows exactly what the operation committed.
    fn with_detailed_view(&self, scope: &Scope, mut op: impl FnMut(&mut dyn Tx) -> Result<Invoice>) -> Result<Value> {
        self.store.write(|tx| {
            let inv = op(tx)?;
            let payments = tx.invoice_payments(inv.id)?;
            self.view_json(tx, scope, &inv, &payments, true, true)
        })
    }
    /// [`Self::create_invoice`], answering InvoiceDetailed read in the same transaction.
    pub fn create_invoice_detailed(&self, scope: &Scope, req: InvoiceCreate) -> Result<Value> {
        self.with_detailed_view(scope, |tx| self.create_invoice_in(tx, scope, &req))
    }

    fn create_invoice_in(&self, tx: &mut dyn Tx, scope: &Scope, req: &InvoiceCreate) -> Result<Invoice> {
        let now = self.now(scope);
        let settings = &scope.org.settings;
        let consumer = tx
            .consumer(scope.branch_id(), req.consumer_id)?
            .filter(|c| !c.is_deleted)
            .ok_or_else(|| Error::not_found("Consumer", req.consumer_id))?;
        let mut products: Vec<Product> = Vec::with_capacity(req.items.len());
        let mut item_coupons: Vec<Vec<Coupon>> = Vec::with_capacity(req.items.len());
        for (i, it) in req.items.iter().enumerate() {
            let p = tx
                .product(scope.branch_id(), it.product_id)?
                .ok_or_else(|| Error::not_found("Product", it.product_id))?;
            if !p.is_active {
                return Err(item_problem(
                    "value_error",
                    i,
                    "product_id",
                    format!("Value error, product '{}' is not active", p.id),
                ));
            }
            if p.active_price(req.currency).is_none() {
                return Err(item_problem(
                    "value_error",
                    i,
                    "product_id",
                    format!("Value error, product '{}' has no active price in {}", p.id, req.currency),
                ));
            }
            let mut cs = vec![];
            for (k, cid) in it.coupons.iter().enumerate() {
                cs.push(coupon_for(
                    tx,
                    scope,
                    *cid,
                    req.currency,
                    vec!["body".into(), "items".into(), i.into(), "coupons".into(), k.into()],
                )?);
            }
            products.push(p);
            item_coupons.push(cs);
        }
        let mut inv_coupons = vec![];
        for (k, cid) in req.coupons.iter().enumerate() {
            inv_coupons.push(coupon_for(tx, scope, *cid, req.currency, vec!["body".into(), "coupons".into(), k.into()])?);
        }
        let inputs: Vec<ItemInput> = req
            .items
            .iter()
            .zip(&products)
            .zip(&item_coupons)
            .map(|((it, p), cs)| {
                let price = p.active_price(req.currency).expect("checked");
                ItemInput {
                    unit_price: price.amount,
                    quantity: it.quantity,
                    vat_mode: price.vat_mode,
                    coupons: cs.iter().collect(),
                }
            })
            .collect();
        let inv_refs: Vec<&Coupon> = inv_coupons.iter().collect();
        // Quantities multiply prices: keep every amount within what money accepts anywhere
        // (checked before computing, and again after VAT is added).
        let max = crate::money::MAX_AMOUNT;
        let gross: Decimal = inputs.iter().map(|i| i.unit_price.amount() * Decimal::from(i.quantity)).sum();
        let totals = (gross <= max).then(|| InvoiceTotals::compute(req.currency, &inputs, &inv_refs, settings.vat_rate));
        let Some(totals) = totals.filter(|t| t.total_amount.amount() <= max) else {
            return Err(Error::invalid(FieldError::new(
                "less_than_equal",
                vec!["body".into(), "items".into()],
                format!("The invoice total should be less than or equal to {max}"),
            )));
        };
        let items = req
            .items
            .iter()
            .zip(&products)
            .zip(&totals.items)
            .map(|((it, p), a)| {
                let price = p.active_price(req.currency).expect("checked");
                InvoiceItem {
                    id: InvoiceItemId::new(),
                    product_id: p.id,
                    price_id: Some(price.id),
                    quantity: it.quantity,
                    unit_price: price.amount,
                    vat_mode: price.vat_mode,
                    one_time: p.product_type == ProductType::OneOff,
                    coupon_ids: it.coupons.clone(),
                    original_amount: a.original_amount,
                    discounted_amount: a.discounted_amount,
                    coupons: a.coupons.clone(),
                    vat_amount: a.vat.vat,
                    excluding_vat: a.vat.excluding_vat,
                    created_at: now,
                }
            })
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
        let notify = if req.notify_consumer { channel_of(&consumer) } else { None };
        if notify.is_some() {
            inv.status = InvoiceStatus::Sent;
        }
        tx.insert_invoice(&inv)?;
        // Each coupon the invoice uses (on its items or on the whole) counts one redemption.
        let mut redeemed: Vec<CouponId> = item_coupons.iter().flatten().chain(inv_coupons.iter()).map(|c| c.id).collect();
        redeemed.sort();
        redeemed.dedup();
        for c in redeemed {
            tx.redeem_coupon(c)?;
        }
        let payment = Payment {
            id: PaymentId::new(),
            org_id: inv.org_id,
            branch_id: inv.branch_id,
            invoice_id: inv.id,
            number: 1,
            amount: inv.total_amount,
            payment_type: PaymentType::Initial,
            method: None,
            status: PaymentStatus::Pending,
            scheduled_on: inv.scheduled_on,
            payed_at: None,
            refunded_at: None,
            refund_reason: None,
            refund_note: None,
            note: None,
            transaction_id: None,
            latest_pgw_message: None,
            created_at: now,
            updated_at: None,
        };
        tx.insert_payment(&payment)?;
        let created = Invoice {
            status: InvoiceStatus::Created,
            ..inv.clone()
        };
        emit_invoice(tx, self.public_url(), EventType::InvoiceCreated, &created, now)?;
        if let Some((channel, recipient)) = notify {
            self.notify_invoice(tx, scope, &inv, &consumer, channel, recipient, now)?;
            emit_invoice(tx, self.public_url(), EventType::InvoiceSent, &inv, now)?;
        }
        Ok(inv)
    }

    #[allow(clippy::too_many_arguments)]
    fn notify_invoice(&self, tx: &mut dyn Tx, scope: &Scope, inv: &Invoice, c: &Consumer, channel: Channel, recipient: String, now: Timestamp) -> Result<()> {
        tx.insert_notification(&Notification {
            id: NotificationId::new(),
            org_id: scope.org_id(),
            branch_id: Some(scope.branch_id()),
            channel,
            recipient,
            template: "INVOICE_SENT".into(),
            language: c.preferred_language,
            payload: json!({
                "invoice_id": inv.id,
                "org_invoice_number": inv.org_invoice_number,
                "organization": scope.org.name,
                "consumer_name": c.name,
                "total_amount": inv.total_amount,
                "currency": inv.currency,
                "url": inv.url(self.public_url()),
            }),
            created_at: now,
            sent_at: None,
        })?;
        Ok(())
    }

    pub fn get_invoice(&self, scope: &Scope, id: InvoiceId) -> Result<(Invoice, Vec<Payment>)> {
        self.store.read(|tx| self.load_invoice(tx, scope, id))
    }

    fn view_json(&self, tx: &mut dyn Tx, scope: &Scope, inv: &Invoice, payments: &[Payment], detailed: bool, include_payments: bool) -> Result<Value> {
        let consumer = tx.consumer(scope.branch_id(), inv.consumer_id)?;
        let mut products = vec![];
        if detailed {
            for it in &inv.items {
                if !products.iter().any(|p: &Product| p.id == it.product_id) {
                    if let Some(p) = tx.product(scope.branch_id(), it.product_id)? {
                        products.push(p);
                    }
                }
            }
        }
        let view = InvoiceView {
            invoice: inv,
            payments,
            consumer: consumer.as_ref(),
            products: &products,
            branch_name: &scope.branch.name,
            public_url: self.public_url(),
            settings: &scope.org.settings,
        };
        Ok(if detailed { view.detailed() } else { view.list_item(include_payments) })
    }

    /// InvoiceDetailed of an invoice of the request's branch.
    pub fn invoice_detailed(&self, scope: &Scope, id: InvoiceId) -> Result<Value> {
        self.store.read(|tx| {
            let (inv, payments) = self.load_invoice(tx, scope, id)?;
            self.view_json(tx, scope, &inv, &payments, true, true)
        })
    }

    /// A page of InvoiceListItems.
    pub fn list_invoices(&self, scope: &Scope, req: &InvoiceListRequest) -> Result<Page<Value>> {
        self.store.read(|tx| {
            let page = tx.list_invoices(scope.branch_id(), &req.query, &req.filter)?;
            let mut out = Vec::with_capacity(page.items.len());
            for inv in &page.items {
                let payments = tx.invoice_payments(inv.id)?;
                out.push(self.view_json(tx, scope, inv, &payments, false, req.include_payments)?);
            }
            Ok(Page {
                items: out,
                total: page.total,
                page: page.page,
                limit: page.limit,
            })
        })
    }

    /// The payer chose how to pay: in full, or in 2, 3 or 4 installments. The invoice becomes
    /// ACCEPTED; with installments its single payment is replaced by one INSTALLMENT payment per
    /// part (`exclude_coupons_if_installments` recomputes the total without coupons first).
    pub fn accept_invoice(&self, scope: &Scope, id: InvoiceId, plan: PaymentPlan) -> Result<(Invoice, Vec<Payment>)> {
        let now = self.now(scope);
        let settings = &scope.org.settings;
        self.store.write(|tx| {
            let (mut inv, mut payments) = self.load_invoice(tx, scope, id)?;
            if is_finalised(&inv, &payments) {
                return Err(Error::rule(Code::INVOICE_FINALISED, format!("Invoice '{id}' is finalised")));
            }
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
                if inv.exclude_coupons_if_installments && (!inv.coupons.is_empty() || inv.items.iter().any(|i| !i.coupons.is_empty())) {
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
                    let t = InvoiceTotals::compute(inv.currency, &inputs, &[], settings.vat_rate);
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
                    .map(|(k, (amount, due))| Payment {
                        id: PaymentId::new(),
                        org_id: inv.org_id,
                        branch_id: inv.branch_id,
                        invoice_id: inv.id,
                        number: k as u32 + 1,
                        amount: *amount,
                        payment_type: PaymentType::Installment,
                        method: None,
                        status: PaymentStatus::Pending,
                        scheduled_on: *due,
                        payed_at: None,
                        refunded_at: None,
                        refund_reason: None,
                        refund_note: None,
                        note: None,
                        transaction_id: None,
                        latest_pgw_message: None,
                        created_at: now,
                        updated_at: None,
                    })
                    .collect();
                for p in &payments {
                    tx.insert_payment(p)?;
                }
                inv.installments = Some(n);
            }
            inv.status = InvoiceStatus::Accepted;
            inv.updated_at = Some(now);
            tx.update_invoice(&inv)?;
            emit_invoice(tx, self.public_url(), EventType::InvoiceAccepted, &inv, now)?;
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
            .filter(|n| installments::available(&scope.org.settings, inv.total_amount, *n))
            .collect()
    }

    /// Cancels an invoice that is not finalised; its unpaid payments become CANCELED.
    pub fn void_invoice(&self, scope: &Scope, id: InvoiceId) -> Result<Invoice> {
        self.store.write(|tx| self.void_invoice_in(tx, scope, id))
    }

    /// [`Self::void_invoice`], answering InvoiceDetailed read in the same transaction.
    pub fn void_invoice_detailed(&self, scope: &Scope, id: InvoiceId) -> Result<Value> {
        self.with_detailed_view(scope, |tx| self.void_invoice_in(tx, scope, id))
    }

    fn void_invoice_in(&self, tx: &mut dyn Tx, scope: &Scope, id: InvoiceId) -> Result<Invoice> {
        let now = self.now(scope);
        let (mut inv, payments) = self.load_invoice(tx, scope, id)?;
        if is_finalised(&inv, &payments) {
            return Err(Error::rule(Code::INVOICE_FINALISED, format!("Invoice '{id}' is finalised")));
        }
        inv.status = InvoiceStatus::Canceled;
        inv.updated_at = Some(now);
        tx.update_invoice(&inv)?;
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

    /// (Re)sends the invoice to its consumer; CREATED becomes SENT.
    pub fn send_invoice(&self, scope: &Scope, id: InvoiceId) -> Result<Invoice> {
        self.store.write(|tx| self.send_invoice_in(tx, scope, id))
    }

    /// [`Self::send_invoice`], answering InvoiceDetailed read in the same transaction.
    pub fn send_invoice_detailed(&self, scope: &Scope, id: InvoiceId) -> Result<Value> {
        self.with_detailed_view(scope, |tx| self.send_invoice_in(tx, scope, id))
    }

    fn send_invoice_in(&self, tx: &mut dyn Tx, scope: &Scope, id: InvoiceId) -> Result<Invoice> {
        let now = self.now(scope);
        let (mut inv, payments) = self.load_invoice(tx, scope, id)?;
        if is_finalised(&inv, &payments) {
            return Err(Error::rule(Code::INVOICE_FINALISED, format!("Invoice '{id}' is finalised")));
        }
        let consumer = tx
            .consumer(scope.branch_id(), inv.consumer_id)?
            .ok_or_else(|| Error::not_found("Consumer", inv.consumer_id))?;
        let (channel, recipient) =
            channel_of(&consumer).ok_or_else(|| Error::rule(Code::INVALID_PARAMETERS, "The consumer has no e-mail address or phone number"))?;
        if inv.status == InvoiceStatus::Created {
            inv.status = InvoiceStatus::Sent;
        }
        inv.updated_at = Some(now);
        tx.update_invoice(&inv)?;
        self.notify_invoice(tx, scope, &inv, &consumer, channel, recipient, now)?;
        emit_invoice(tx, self.public_url(), EventType::InvoiceSent, &inv, now)?;
        Ok(inv)
    }

    /// Changes the description or scheduled date of an invoice that is not finalised.
    pub fn update_invoice_inplace(&self, scope: &Scope, id: InvoiceId, u: InvoiceInPlaceUpdate) -> Result<Invoice> {
        self.store.write(|tx| self.update_invoice_inplace_in(tx, scope, id, &u))
    }

    /// [`Self::update_invoice_inplace`], answering InvoiceDetailed read in the same transaction.
    pub fn update_invoice_inplace_detailed(&self, scope: &Scope, id: InvoiceId, u: InvoiceInPlaceUpdate) -> Result<Value> {
        self.with_detailed_view(scope, |tx| self.update_invoice_inplace_in(tx, scope, id, &u))
    }

    fn update_invoice_inplace_in(&self, tx: &mut dyn Tx, scope: &Scope, id: InvoiceId, u: &InvoiceInPlaceUpdate) -> Result<Invoice> {
        let now = self.now(scope);
        let (mut inv, payments) = self.load_invoice(tx, scope, id)?;
        if is_finalised(&inv, &payments) {
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

    // --- payments ------------------------------------------------------------------------

    pub fn get_payment(&self, scope: &Scope, id: PaymentId) -> Result<Payment> {
        self.store
            .read(|tx| Ok(tx.payment(scope.branch_id(), id)?))?
            .ok_or_else(|| Error::not_found("Payment", id))
    }

    pub fn list_payments(&self, scope: &Scope, q: &ListQuery<PaymentSort>, f: &PaymentFilter) -> Result<Page<Payment>> {
        self.store.read(|tx| Ok(tx.list_payments(scope.branch_id(), q, f)?))
    }

    /// Records `paid` as paid in one transaction `txn`, with its events: PAYMENT_SUCCEEDED (or
    /// PAYMENT_MARKED_AS_PAID) per payment, then INVOICE_COMPLETED when the invoice is now fully
    /// paid. The products and coupons of the invoice are frozen.
    #[allow(clippy::too_many_arguments)]
    fn record_paid(
        &self,
        tx: &mut dyn Tx,
        scope: &Scope,
        inv: &mut Invoice,
        all: &[Payment],
        paid: Vec<Payment>,
        event: EventType,
        now: Timestamp,
    ) -> Result<Vec<Payment>> {
        for p in &paid {
            tx.update_payment(p)?;
            inv.paid_amount = Money::new(inv.paid_amount.amount() + p.amount.amount(), inv.currency);
            emit_payment(tx, self.public_url(), event, inv, p, now)?;
        }
        let all_paid = all.iter().all(|p| p.status.is_paid() || paid.iter().any(|q| q.id == p.id));
        if all_paid && inv.status != InvoiceStatus::Completed {
            inv.status = InvoiceStatus::Completed;
        }
        inv.updated_at = Some(now);
        tx.update_invoice(inv)?;
        if all_paid {
            emit_invoice(tx, self.public_url(), EventType::InvoiceCompleted, inv, now)?;
        }
        self.freeze_catalog(tx, scope, inv)?;
        Ok(paid)
    }

    /// Marks an unpaid payment as paid with a manual method (spec: Mark-paid rules).
    pub fn mark_payment_paid(&self, scope: &Scope, id: PaymentId, req: MarkPaid) -> Result<Payment> {
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
    /// are only recorded. The invoice does not change.
    pub fn refund_payment(&self, scope: &Scope, id: PaymentId, req: RefundRequest) -> Result<Payment> {
        let now = self.now(scope);
        let check = |tx: &mut dyn Tx| -> Result<Vec<Payment>> {
            let p = tx.payment(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Payment", id))?;
            match p.status {
                PaymentStatus::Refunded => return Err(Error::rule(Code::PAYMENT_REFUNDED_ALREADY, format!("Payment '{id}' is already refunded"))),
                PaymentStatus::Succeeded | PaymentStatus::Settled => {}
                s => return Err(Error::rule(Code::INVALID_STATUS, format!("Payment '{id}' is {s}, not paid"))),
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
        let gw = gateway::for_org(&scope.org);
        for p in targets.iter().filter(|p| p.method.is_some_and(PaymentMethod::is_gateway)) {
            let o: GatewayOutcome = gw.refund(&p.transaction_id.map(|t| t.to_string()).unwrap_or_default(), p.amount);
            if !o.approved {
                return Err(Error::rule(Code::PAYMENT_REFUNDED_FAILED, format!("{} {}", o.code, o.message)));
            }
        }
        self.store.write(|tx| {
            let related = check(tx)?;
            let inv = tx
                .invoice(scope.branch_id(), related[0].invoice_id)?
                .ok_or_else(|| Error::not_found("Invoice", related[0].invoice_id))?;
            let mut asked = None;
            for mut p in related {
                p.status = PaymentStatus::Refunded;
                p.refunded_at = Some(now);
                p.refund_reason = Some(req.reason);
                p.refund_note = req.note.clone();
                p.updated_at = Some(now);
                tx.update_payment(&p)?;
                emit_payment(tx, self.public_url(), EventType::PaymentRefunded, &inv, &p, now)?;
                if p.id == id {
                    asked = Some(p);
                }
            }
            Ok(asked.expect("the asked payment is among the related ones"))
        })
    }

    /// Saves a card for a consumer as a gateway token (network, last four digits, expiry; never
    /// the number). In sandbox the token carries the test number's outcome.
    /// The payer pays some unpaid payments of an invoice by card in one gateway transaction (the
    /// hosted page's building block). Approved: each payment SUCCEEDED with the card's network
    /// and one shared transaction, one PAYMENT_SUCCEEDED per payment, then INVOICE_COMPLETED
    /// when the invoice is now fully paid. Declined: each payment FAILED with PAYMENT_FAILED
    /// only, and the call answers 400 INVALID_PARAMETERS with the gateway's code. A card form
    /// error is a 422 and charges nothing. Installment invoices must be ACCEPTED first.
    pub fn pay_by_card(&self, scope: &Scope, invoice: InvoiceId, payment_ids: &[PaymentId], card: &gateway::CardDetails) -> Result<Vec<Payment>> {
        use chrono::Datelike;
        let now = self.now(scope);
        if let Err(field) = card.check(now.year(), now.month()) {
            return Err(Error::invalid(FieldError::body(
                "value_error",
                field,
                "Value error, the card field is not valid",
            )));
        }
        let check = |tx: &mut dyn Tx| -> Result<(Invoice, Vec<Payment>, Vec<Payment>)> {
            let (inv, all) = self.load_invoice(tx, scope, invoice)?;
            if inv.status == InvoiceStatus::Canceled {
                return Err(Error::rule(Code::INVOICE_FINALISED, format!("Invoice '{invoice}' is canceled")));
            }
            if payment_ids.is_empty() {
                return Err(Error::invalid(FieldError::body("too_short", "payment_ids", "List should have at least 1 item")));
            }
            let mut chosen = vec![];
            for id in payment_ids {
                let p = all.iter().find(|p| p.id == *id).ok_or_else(|| Error::not_found("Payment", id))?;
                if !p.status.is_unpaid() {
                    return Err(Error::rule(Code::PAYMENT_FINALIZED, format!("Payment '{id}' is {}", p.status)));
                }
                if !chosen.iter().any(|c: &Payment| c.id == p.id) {
                    chosen.push(p.clone());
                }
            }
            if inv.installments.is_some() && inv.status != InvoiceStatus::Accepted {
                return Err(Error::rule(
                    Code::INVOICE_INVALID_STATUS,
                    format!("Installment invoice '{invoice}' is {}, not ACCEPTED", inv.status),
                ));
            }
            Ok((inv, all, chosen))
        };
        let (inv, _, chosen) = self.store.read(|tx| check(tx))?;
        let total = Money::new(chosen.iter().map(|p| p.amount.amount()).sum(), inv.currency);
        let outcome = gateway::for_org(&scope.org).charge_card(card, total);
        let method = PaymentMethod::parse(card.network()).unwrap_or(PaymentMethod::PgwCardUnspecified);
        let txn = Uuid::now_v7();
        let message = format!("{} {}", outcome.code, outcome.message);
        let paid = self.store.write(|tx| {
            let (mut inv, all, chosen) = check(tx)?;
            let mut out = Vec::with_capacity(chosen.len());
            for mut p in chosen {
                p.method = Some(method);
                p.latest_pgw_message = Some(message.clone());
                p.updated_at = Some(now);
                if outcome.approved {
                    p.status = PaymentStatus::Succeeded;
                    p.payed_at = Some(now);
                    p.transaction_id = Some(txn);
                } else {
                    p.status = PaymentStatus::Failed;
                    tx.update_payment(&p)?;
                    emit_payment(tx, self.public_url(), EventType::PaymentFailed, &inv, &p, now)?;
                }
                out.push(p);
            }
            if outcome.approved {
                self.record_paid(tx, scope, &mut inv, &all, out.clone(), EventType::PaymentSucceeded, now)?;
            }
            Ok(out)
        })?;
        if !outcome.approved {
            return Err(Error::rule(Code::INVALID_PARAMETERS, format!("The charge failed: {message}")));
        }
        Ok(paid)
    }

    pub fn save_card(&self, scope: &Scope, consumer: ConsumerId, number: &str, expiry_month: u32, expiry_year: u32, consent: bool) -> Result<TokenizedCard> {
        let now = self.now(scope);
        let digits: String = number.chars().filter(char::is_ascii_digit).collect();
        if digits.len() < 12 {
            return Err(Error::invalid(FieldError::body("value_error", "number", "Value error, not a card number")));
        }
        let network = match digits.as_bytes()[0] {
            b'4' if digits.starts_with("420132") => "MADA",
            b'4' => "VISA",
            b'5' | b'2' => "MASTERCARD",
            b'3' => "AMEX",
            _ => "CARD",
        };
        let card = TokenizedCard {
            id: Uuid::now_v7(),
            org_id: scope.org_id(),
            consumer_id: consumer,
            network: network.into(),
            last_four: digits[digits.len() - 4..].to_string(),
            expiry_month,
            expiry_year,
            gateway_token: gateway::sandbox_token(&digits),
            is_active: true,
            consent,
            created_at: now,
        };
        self.store.write(|tx| {
            tx.consumer(scope.branch_id(), consumer)?
                .filter(|c| !c.is_deleted)
                .ok_or_else(|| Error::not_found("Consumer", consumer))?;
            tx.insert_card(&card)?;
            Ok(card.clone())
        })
    }

    /// Charges an unpaid payment to the consumer's latest active tokenized card.
    pub fn auto_charge_on_demand(&self, scope: &Scope, id: PaymentId) -> Result<(PaymentId, InvoiceId)> {
        if !scope.org.settings.auto_charge_on_demand {
            return Err(Error::rule(
                Code::FEATURE_DISABLED,
                "Auto-charge on demand is not enabled for this organization",
            ));
        }
        let now = self.now(scope);
        let check = |tx: &mut dyn Tx| -> Result<(Payment, TokenizedCard)> {
            let p = tx.payment(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Payment", id))?;
            let inv = tx
                .invoice(scope.branch_id(), p.invoice_id)?
                .ok_or_else(|| Error::not_found("Invoice", p.invoice_id))?;
            tx.consumer(scope.branch_id(), inv.consumer_id)?
                .filter(|c| !c.is_deleted)
                .ok_or_else(|| Error::not_found("Consumer", inv.consumer_id))?;
            if p.status.is_paid() {
                return Err(Error::rule(Code::PAYMENT_FINALIZED, format!("Payment '{id}' is already paid")));
            }
            if !p.status.is_unpaid() {
                return Err(Error::rule(Code::INVALID_STATUS, format!("Payment '{id}' is {}", p.status)));
            }
            if inv.installments.is_some() && inv.status != InvoiceStatus::Accepted {
                return Err(Error::rule(
                    Code::INVOICE_INVALID_STATUS,
                    format!("Installment invoice '{}' is {}, not ACCEPTED", inv.id, inv.status),
                ));
            }
            let card = tx
                .latest_active_card(inv.consumer_id)?
                .ok_or_else(|| Error::rule(Code::INVALID_PARAMETERS, "The consumer has no active tokenized card"))?;
            if !card.consent {
                return Err(Error::rule(Code::NOT_FOUND, "No consent to charge the consumer's card"));
            }
            Ok((p, card))
        };
        let (p, card) = self.store.read(|tx| check(tx))?;
        let outcome = gateway::for_org(&scope.org).charge_token(&card.gateway_token, p.amount);
        let method = PaymentMethod::parse(&card.network).unwrap_or(PaymentMethod::PgwCardUnspecified);
        let txn = Uuid::now_v7();
        let result = self.store.write(|tx| {
            let (mut p, _) = check(tx)?;
            let (mut inv, all) = self.load_invoice(tx, scope, p.invoice_id)?;
            p.method = Some(method);
            p.latest_pgw_message = Some(format!("{} {}", outcome.code, outcome.message));
            p.updated_at = Some(now);
            if outcome.approved {
                p.status = PaymentStatus::Succeeded;
                p.payed_at = Some(now);
                p.transaction_id = Some(txn);
                self.record_paid(tx, scope, &mut inv, &all, vec![p.clone()], EventType::PaymentSucceeded, now)?;
            } else {
                p.status = PaymentStatus::Failed;
                tx.update_payment(&p)?;
                emit_payment(tx, self.public_url(), EventType::PaymentFailed, &inv, &p, now)?;
            }
            Ok((p.id, p.invoice_id))
        })?;
        if !outcome.approved {
            return Err(Error::rule(
                Code::INVALID_PARAMETERS,
                format!("The charge failed: {} {}", outcome.code, outcome.message),
            ));
        }
        Ok(result)
    }
}
