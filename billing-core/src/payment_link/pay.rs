//! Paying a link ([`Checkout::pay`](super::checkout::Checkout::pay)): the checkout's one
//! operation. It reads and checks with nothing written, records the attempt
//! ([`super::attempt`]), calls the gateway with no transaction open, and records the outcome in
//! one transaction: on approval the consumer (new, or the branch's consumer with the same
//! contact), the saved card, the invoice (ACCEPTED with the chosen plan, `payment_link_id` set)
//! and its payments (the first paid, later installments scheduled), the link's count (COMPLETED
//! once used up) and the events; on a decline nothing but PAYMENT_LINK_PAY_ATTEMPT_FAILED.

use super::attempt::{count_payment, emit_attempt_failed, Recorded};
use super::checkout::{Customer, PayMethod, PayOutcome, PayRequest, PayStatus};
use super::LinkAttempt;
use super::{ContactInformationType, PaymentLink};
use crate::auth::{Actor, BranchAccess, Scope};
use crate::clock::Timestamp;
use crate::consumer::{Consumer, ConsumerType};
use crate::engine::Engine;
use crate::error::{Code, Error, FieldError, Result, StoreError};
use crate::event::EventType;
use crate::fields::Email;
use crate::ids::{ConsumerId, CouponId, InvoiceId, InvoiceItemId, WorkId};
use crate::invoice::events::emit_invoice_with;
use crate::invoice::installments::{self, InstallmentPlan};
use crate::invoice::ops::pending_payment;
use crate::invoice::{Invoice, InvoiceStatus};
use crate::money::Money;
use crate::org::Role;
use crate::payment::gateway::GatewayOutcome;
use crate::payment::{PaymentMethod, PaymentStatus, PaymentType, TokenizedCard};
use crate::store::{Store, Tx};
use uuid::Uuid;

/// Who pays a link.
#[derive(Debug, Clone)]
pub(super) enum Payer {
    /// The link's consumer.
    Consumer(ConsumerId),
    /// Details the payer gave: the branch's consumer with the same contact, or a new one.
    New(Customer),
}

impl Payer {
    /// The attempt's session: one payment in flight per link and payer.
    fn session_key(&self, kind: ContactInformationType) -> String {
        match self {
            Payer::Consumer(id) => format!("consumer:{id}"),
            Payer::New(c) => match (kind, &c.phone_number, &c.email) {
                (ContactInformationType::Phone, Some(p), _) => format!("phone:{p}"),
                (_, _, Some(e)) => format!("email:{}", e.normalized()),
                (_, Some(p), None) => format!("phone:{p}"),
                (_, None, None) => format!("name:{}", c.name.to_lowercase()),
            },
        }
    }
}

/// The payer: the link's consumer, or the details checkout collected (a name and the contact
/// the link asks for).
fn payer_of(l: &PaymentLink, req: &PayRequest) -> Result<Payer> {
    if let Some(c) = l.consumer_id {
        return Ok(Payer::Consumer(c));
    }
    let Some(c) = &req.customer else {
        return Err(Error::invalid(FieldError::body(
            "missing",
            "customer",
            "Field required: the link has no consumer",
        )));
    };
    let (field, given) = match l.contact_information_type {
        ContactInformationType::Phone => ("phone_number", c.phone_number.is_some()),
        ContactInformationType::Email => ("email", c.email.is_some()),
    };
    if !given {
        return Err(Error::invalid(FieldError::new(
            "missing",
            vec!["body".into(), "customer".into(), field.into()],
            "Field required by the payment link",
        )));
    }
    Ok(Payer::New(c.clone()))
}

/// The first installment's amount and every part (one part when paid in full).
fn parts_of(scope: &Scope, l: &PaymentLink, req: &PayRequest, now: Timestamp) -> Result<Vec<(Money, Timestamp)>> {
    let n = req.installments;
    if n == 1 {
        return Ok(vec![(l.amount, now)]);
    }
    if !l.offers_installments() {
        return Err(Error::rule(Code::PAYMENT_FLOW_NOT_ALLOWED, "The payment link does not offer installments"));
    }
    if matches!(req.method, PayMethod::Wallet(_)) {
        return Err(Error::rule(
            Code::PAYMENT_FLOW_NOT_ALLOWED,
            "Installments are paid by card: the later ones are charged to it",
        ));
    }
    let settings = &scope.org.settings;
    if !installments::available(settings, l.amount, n) {
        return Err(Error::rule(
            Code::INVALID_PARAMETERS,
            format!("{n} installments of {} {} are not available", l.amount, l.currency),
        ));
    }
    Ok(InstallmentPlan::new(l.amount, n, now, settings.installment_split_months.max(1)).parts)
}

impl<S: Store> Engine<S> {
    /// Step 3: the outcome, if the attempt is still the request's to record.
    fn record_link_outcome(&self, tx: &mut dyn Tx, p: &Paid<'_>, o: &GatewayOutcome) -> Result<PayOutcome> {
        let (a, now) = (p.attempt, p.now);
        let mut l = tx
            .payment_link(a.branch_id, a.link_id)?
            .ok_or_else(|| Error::not_found("Payment link", a.link_id))?;
        let mut out = PayOutcome {
            status: PayStatus::Failed,
            message: o.message.clone(),
            reference: p.rec.reference.clone(),
            link_id: Some(l.id),
            login_method: Some(l.contact_information_type),
            invoice_id: None,
            payment_id: None,
            consent_id: None,
            consumer_id: None,
            redirect_url: String::new(),
        };
        if !tx.delete_link_attempt(a.id)? {
            // Its item gave it up meanwhile (and voids whatever was charged).
            out.status = PayStatus::FailedInternalError;
            out.message = "The payment took too long and was canceled; nothing was charged".into();
            return Ok(out);
        }
        if !o.approved {
            if o.is_unclear() {
                // Money may have moved: the item voids the charge, starting now, taken over
                // whoever holds it (its handler may, waiting to see whether this request is
                // alive); a new item if it is gone.
                let next = Recorded {
                    abandoned: true,
                    ..p.rec.clone()
                };
                let moved = match tx.work(WorkId(a.id))? {
                    Some(w) => tx.reschedule_work(w.id, w.leased_until, now, &next.to_value())?,
                    None => false,
                };
                if !moved {
                    tx.insert_work(&crate::work::DueWork::new(
                        WorkId::new(),
                        a.org_id,
                        super::LINK_CHARGE_KIND,
                        now,
                        next.to_value(),
                    ))?;
                }
                out.status = PayStatus::FailedInternalError;
            } else {
                tx.end_work(WorkId(a.id))?;
            }
            emit_attempt_failed(tx, self.public_url(), &l, a.id, out.status.as_str(), o, now)?;
            crate::payment::limits::record_failure(tx, &crate::payment::limits::link_target(l.id), &p.req.client, now)?;
            return Ok(out);
        }
        // Ended whoever holds it (its handler may, waiting to see whether this request is alive).
        tx.end_work(WorkId(a.id))?;
        let consumer = self.payer_consumer(tx, p, &l)?;
        if let (Some(token), PayMethod::Card(card)) = (&p.token, &p.req.method) {
            let saved = TokenizedCard {
                id: Uuid::now_v7(),
                org_id: l.org_id,
                consumer_id: consumer,
                network: card.network().into(),
                last_four: card.number[card.number.len().saturating_sub(4)..].to_string(),
                expiry_month: card.expiry_month,
                expiry_year: card.expiry_year,
                gateway_token: token.clone(),
                is_active: true,
                consent: true,
                created_at: now,
            };
            tx.insert_card(&saved)?;
            out.consent_id = Some(saved.id);
        }
        let method = match &p.req.method {
            PayMethod::Card(card) => PaymentMethod::parse(card.network())
                .filter(|m| m.is_gateway())
                .unwrap_or(PaymentMethod::PgwCardUnspecified),
            PayMethod::Wallet(_) => PaymentMethod::PgwCardUnspecified,
        };
        // Counted before the invoice is paid: paying it adds to the collected amount in place.
        count_payment(&mut l, now);
        tx.update_payment_link_row(&l)?;
        // The invoice bills the link as priced for this payer (chosen quantities); a link of
        // recurring products makes the subscription whose first invoice it is.
        let (inv, payment) = if p.link.is_recurring() {
            self.subscription_of_link(tx, p, consumer, method, &o.code, &o.message)?
        } else {
            self.invoice_of_link(tx, p, p.link, consumer, method, &o.code, &o.message)?
        };
        out.status = PayStatus::Paid;
        out.invoice_id = Some(inv);
        out.payment_id = Some(payment);
        out.consumer_id = Some(consumer);
        Ok(out)
    }

    /// The paying consumer: the link's, the branch's live consumer with the contact given, or
    /// a new one.
    fn payer_consumer(&self, tx: &mut dyn Tx, p: &Paid<'_>, l: &PaymentLink) -> Result<ConsumerId> {
        let c = match p.payer {
            Payer::Consumer(id) => return Ok(*id),
            Payer::New(c) => c,
        };
        let email = c.email.as_ref().map(Email::normalized);
        let phone = c.phone_number.as_ref().map(|p| p.as_str().to_string());
        if let Some(found) = tx.consumer_conflict(l.branch_id, phone.as_deref(), email.as_deref(), ConsumerId::new())? {
            return Ok(found.id);
        }
        let consumer = Consumer {
            id: ConsumerId::new(),
            org_id: l.org_id,
            branch_id: l.branch_id,
            name: c.name.clone(),
            phone_number: c.phone_number.clone(),
            email: c.email.clone(),
            external_id: None,
            iban: None,
            alias: None,
            comment: None,
            preferred_language: p.req.language,
            communication_methods: vec![],
            consumer_type: ConsumerType::Individual,
            address: None,
            vat_number: None,
            commercial_registration: None,
            external_metadata: Default::default(),
            is_deleted: false,
            created_at: p.now,
            updated_at: None,
        };
        tx.insert_consumer(&consumer)?;
        Ok(consumer.id)
    }

    /// The invoice a paid link makes: its lines as the link priced them, ACCEPTED with the
    /// plan, the first payment paid (PAYMENT_SUCCEEDED, INVOICE_COMPLETED when that is all), the
    /// later installments scheduled. Returns the invoice's and the paid payment's ids.
    #[allow(clippy::too_many_arguments)]
    fn invoice_of_link(
        &self,
        tx: &mut dyn Tx,
        p: &Paid<'_>,
        l: &PaymentLink,
        consumer: ConsumerId,
        method: PaymentMethod,
        code: &str,
        message: &str,
    ) -> Result<(InvoiceId, crate::ids::PaymentId)> {
        let now = p.now;
        let n = p.parts.len();
        let mut inv = Invoice {
            id: InvoiceId::new(),
            org_id: l.org_id,
            branch_id: l.branch_id,
            user_id: l.user_id,
            consumer_id: consumer,
            org_invoice_number: tx.next_invoice_number(l.org_id)?,
            description: Some(l.description.clone().unwrap_or_else(|| l.name.clone())),
            currency: l.currency,
            status: InvoiceStatus::Accepted,
            payment_methods: l.payment_methods,
            coupon_ids: l.coupon_ids.clone(),
            exclude_coupons_if_installments: false,
            notify_consumer: false,
            scheduled_on: now,
            original_amount: l.original_amount,
            item_level_discounted_amount: l.item_level_discounted_amount,
            total_vat_amount: l.total_vat_amount,
            total_price_excluding_vat: l.total_price_excluding_vat,
            total_amount: l.amount,
            paid_amount: Money::zero(l.currency),
            coupons: l.coupons.clone(),
            installments: (n > 1).then_some(n as u8),
            payment_link_id: Some(l.id.0),
            subscription_id: None,
            items: l
                .items
                .iter()
                .map(|i| crate::invoice::InvoiceItem {
                    id: InvoiceItemId::new(),
                    created_at: now,
                    ..i.line.clone()
                })
                .collect(),
            created_at: now,
            updated_at: None,
        };
        let kind = if n > 1 { PaymentType::Installment } else { PaymentType::Initial };
        let mut payments: Vec<_> = p
            .parts
            .iter()
            .enumerate()
            .map(|(k, (amount, due))| pending_payment(&inv, k as u32 + 1, *amount, kind, *due, now))
            .collect();
        payments[0].method = Some(method);
        tx.insert_invoice(&inv)?;
        redeem_link_coupons(tx, l)?;
        for pay in &payments {
            tx.insert_payment(pay)?;
        }
        // The later installments are charged to the saved card on their dates.
        for later in &payments[1..] {
            crate::payment::installment::schedule(tx, later)?;
        }
        let created = Invoice {
            status: InvoiceStatus::Created,
            ..inv.clone()
        };
        // The events' metadata is the link's (set when the link is made, never changed).
        let metadata = serde_json::Value::Object(l.custom_metadata.clone());
        emit_invoice_with(tx, self.public_url(), EventType::InvoiceCreated, &created, &metadata, now)?;
        emit_invoice_with(tx, self.public_url(), EventType::InvoiceAccepted, &inv, &metadata, now)?;
        let first_id = self.settle_first_payment(tx, p, &mut inv, &payments, code, message)?;
        Ok((inv.id, first_id))
    }

    /// The first payment of a paid link's invoice recorded as the attempt's charge:
    /// SUCCEEDED, PAYMENT_SUCCEEDED, INVOICE_COMPLETED when that is all. Returns its id.
    pub(super) fn settle_first_payment(
        &self,
        tx: &mut dyn Tx,
        p: &Paid<'_>,
        inv: &mut Invoice,
        payments: &[crate::payment::Payment],
        code: &str,
        message: &str,
    ) -> Result<crate::ids::PaymentId> {
        let now = p.now;
        let mut first = payments[0].clone();
        first.status = PaymentStatus::Succeeded;
        first.payed_at = Some(now);
        first.transaction_id = Some(p.attempt.id);
        first.latest_pgw_message = Some(format!("{code} {message}"));
        first.updated_at = Some(now);
        let first_id = first.id;
        self.record_paid(tx, p.scope, inv, payments, vec![first], EventType::PaymentSucceeded, now)?;
        Ok(first_id)
    }
}

impl<S: Store> super::checkout::Checkout<'_, S> {
    /// Pays the link with short id `short_id` (the public checkout: no credentials). Refusals
    /// write nothing: an unknown link (404), a form error (422 at the field; no attempt is
    /// made), an inactive, expired or completed link (400 INVALID_STATUS), a recurring link
    /// (400 PAYMENT_FLOW_NOT_ALLOWED: paid with subscriptions), installments the link or the
    /// amount does not allow, and a second payment of the same payer while one is in flight,
    /// or beyond `max_number_of_payments` with others in flight (422 DUPLICATE_PAYMENT), and
    /// a client whose attempts on the link failed too often (429 RATE_LIMITED). A gateway
    /// decline is an outcome (`failed`), not an error.
    pub fn pay(&self, short_id: &str, req: &PayRequest) -> Result<PayOutcome> {
        self.call_out("the payment gateway", || ())?;
        let well_formed = (1..=64).contains(&short_id.len()) && short_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !well_formed {
            return Err(Error::not_found("Payment link", "?"));
        }
        let (link, scope) = self.store.read(|tx| {
            let missing = || Error::not_found("Payment link", short_id);
            let l = tx.payment_link_by_short_id(short_id)?.ok_or_else(missing)?;
            let org = tx.org(l.org_id)?.ok_or_else(missing)?;
            let branch = tx.branch(l.org_id, l.branch_id)?.ok_or_else(missing)?;
            // The payer acts in the link's branch, for the user who made the link.
            let actor = Actor {
                user_id: l.user_id,
                role: Role::BranchUser,
                access: BranchAccess::Only(vec![l.branch_id]),
                api_key_id: None,
            };
            Ok((l, Scope { org, branch, actor }))
        })?;
        let now = self.now(&scope);
        link.check_payable(now)?;
        // What the stored link costs: a payment is refused if it changed meanwhile.
        let stored_amount = link.amount;
        let link = if req.items.is_empty() {
            link
        } else {
            self.store.read(|tx| super::ops::with_quantities(tx, &scope, &link, &req.items))?
        };
        if !self.takes_payments(&scope.org) {
            return Err(super::checkout::no_gateway());
        }
        if link.is_recurring() {
            super::subscribe::check_recurring(&link, &req.method)?;
        }
        let payer = payer_of(&link, req)?;
        super::checkout::check_card_form(&req.method, now)?;
        if link.amount.is_zero() {
            return Err(Error::rule(Code::INVALID_PARAMETERS, "Nothing to pay: the payment link's amount is 0"));
        }
        let parts = parts_of(&scope, &link, req, now)?;
        let attempt = LinkAttempt {
            id: Uuid::now_v7(),
            org_id: link.org_id,
            branch_id: link.branch_id,
            link_id: link.id,
            session_key: payer.session_key(link.contact_information_type),
            amount: parts[0].0,
            created_at: now,
        };
        let rec = Recorded {
            branch_id: link.branch_id,
            link_id: link.id,
            reference: attempt.id.to_string(),
            abandoned: false,
            started: Some(self.clock().now()),
        };
        self.store
            .write(|tx| {
                let l = tx
                    .payment_link(link.branch_id, link.id)?
                    .ok_or_else(|| Error::not_found("Payment link", short_id))?;
                l.check_payable(now)?;
                if l.amount != stored_amount {
                    return Err(Error::rule(Code::INVALID_STATUS, "The payment link changed: load it again"));
                }
                crate::payment::limits::check(tx, &crate::payment::limits::link_target(l.id), &req.client, self.failed_attempts_allowed(), now)?;
                let in_flight = tx.count_link_attempts(l.id)?;
                if l.max_number_of_payments
                    .is_some_and(|max| u64::from(l.payments_count) + in_flight >= u64::from(max))
                {
                    return Err(Error::rule(
                        Code::DUPLICATE_PAYMENT,
                        "Payments of this link are in progress up to the number it accepts",
                    ));
                }
                tx.insert_link_attempt(&attempt)?;
                tx.insert_work(&rec.item(&attempt))?;
                Ok(())
            })
            .map_err(|e| match e {
                Error::Store(StoreError::UniqueViolation(name)) if name == crate::error::constraint::PAYMENT_LINK_ATTEMPTS_SESSION => {
                    Error::rule(Code::DUPLICATE_PAYMENT, "A payment of this link by this payer is in progress")
                }
                e => e,
            })?;
        let gw = self.gateway_for(&scope.org);
        let reference = rec.reference.as_str();
        let outcome = self.call_out("the payment gateway", || match &req.method {
            PayMethod::Card(card) => gw.charge_card(reference, card, attempt.amount),
            PayMethod::Wallet(phone) => gw.charge_wallet(reference, phone.as_str(), attempt.amount),
        })?;
        let token = match &req.method {
            PayMethod::Card(card) if outcome.approved => self.call_out("the payment gateway", || gw.card_token(reference, card))?,
            _ => None,
        };
        let paid = Paid {
            link: &link,
            scope: &scope,
            req,
            payer: &payer,
            attempt: &attempt,
            rec: &rec,
            parts: &parts,
            token,
            now,
        };
        let out = self.store.write(|tx| self.record_link_outcome(tx, &paid, &outcome))?;
        Ok(out.with_redirect(&link, self.public_url(), req.language))
    }
}

/// Counts one redemption of each coupon a paid link uses (on its lines or on the whole).
pub(super) fn redeem_link_coupons(tx: &mut dyn Tx, l: &PaymentLink) -> Result<()> {
    let mut coupons: Vec<CouponId> = l
        .coupon_ids
        .iter()
        .chain(l.items.iter().flat_map(|i| i.line.coupon_ids.iter()))
        .copied()
        .collect();
    coupons.sort();
    coupons.dedup();
    for c in coupons {
        tx.redeem_coupon(c)?;
    }
    Ok(())
}

/// What recording a link payment's outcome needs.
pub(super) struct Paid<'a> {
    /// The link as the payer buys it (with the quantities chosen).
    pub(super) link: &'a PaymentLink,
    pub(super) scope: &'a Scope,
    pub(super) req: &'a PayRequest,
    pub(super) payer: &'a Payer,
    pub(super) attempt: &'a LinkAttempt,
    pub(super) rec: &'a Recorded,
    pub(super) parts: &'a [(Money, Timestamp)],
    pub(super) token: Option<String>,
    pub(super) now: Timestamp,
}
