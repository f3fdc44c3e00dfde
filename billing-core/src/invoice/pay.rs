//! The payer's side of an invoice (`/pay/invoices/{id}`, no credentials: the invoice's id is
//! the capability): its page ([`Invoices::pay_page`], the same [`CheckoutPage`] a link
//! has), paying it ([`Invoices::pay`], the same request and answer as a link's
//! attempts) and declining it ([`Invoices::decline`]).
//!
//! Paying follows the gateway-attempt pattern of [`crate::payment::attempt`]: in one
//! transaction the invoice is accepted with the payer's plan (if it is not yet) and its next
//! payable payment becomes PROCESSING under the attempt (a second attempt meanwhile is
//! `DUPLICATE_PAYMENT`); the gateway is called with no transaction open; the outcome is
//! recorded in one transaction (PAYMENT_SUCCEEDED, INVOICE_COMPLETED when that was all, the
//! card kept as the consumer's token and the later installments queued on their dates
//! ([`crate::payment::installment`]) when the first one is paid; or
//! PAYMENT_FAILED, the payment staying payable). Acceptance is the payer's choice and stays
//! when the charge fails: the next attempt pays the same plan.

use super::events::{invoice_event, link_metadata};
use super::installments::{self, PaymentPlan};
use super::ops::Invoices;
use super::{accept::installment_total, Invoice, InvoiceStatus};
use crate::auth::{Actor, BranchAccess, Scope};
use crate::engine::Engine;
use crate::error::{Code, Error, FieldError, Result};
use crate::event::EventType;
use crate::ids::InvoiceId;
use crate::lane::Lane;
use crate::payment::limits;
use crate::payment::{Payment, PaymentMethod, PaymentStatus, TokenizedCard};
use crate::payment_link::checkout::{check_card_form, no_gateway, PayMethod, PayOutcome, PayRequest, PayStatus};
use crate::payment_link::page::{product_names, summary_of, CheckoutPage, PageState, Renewal};
use crate::store::{Store, Tx};
use crate::wire::Body;
use serde_json::Value;
use uuid::Uuid;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const PAGE: Lane = Lane::Read;
    /// Calls the gateway.
    pub const PAY: Lane = Lane::Io;
    pub const DECLINE: Lane = Lane::Write;
}

/// The longest decline reason kept.
pub const MAX_REASON: usize = 1000;

/// `POST /pay/invoices/{id}/decline`, parsed: an optional `reason` (an empty body declines
/// without one).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DeclineRequest {
    pub reason: Option<String>,
}

impl DeclineRequest {
    pub fn parse(v: &Value) -> Result<Self> {
        if v.is_null() {
            return Ok(DeclineRequest::default());
        }
        let mut b = Body::new(v);
        let reason = b.opt_text("reason", MAX_REASON);
        b.finish()?;
        Ok(DeclineRequest { reason })
    }
}

/// Why an invoice takes no payment now, as the refusal of an attempt (`None`: it may).
fn unpayable(inv: &Invoice, payments: &[Payment]) -> Option<Error> {
    let id = inv.id;
    Some(match inv.status {
        InvoiceStatus::Completed => Error::rule(Code::DUPLICATE_PAYMENT, format!("Invoice '{id}' is paid")),
        InvoiceStatus::Canceled => Error::rule(Code::INVOICE_FINALISED, format!("Invoice '{id}' is canceled")),
        InvoiceStatus::Created | InvoiceStatus::Sent | InvoiceStatus::Accepted => {
            if payments.iter().any(|p| p.status == PaymentStatus::Processing) {
                Error::rule(Code::DUPLICATE_PAYMENT, format!("A payment of invoice '{id}' is in progress"))
            } else if !payments.iter().any(|p| p.status.is_payable()) {
                Error::rule(Code::DUPLICATE_PAYMENT, format!("Invoice '{id}' has nothing left to pay"))
            } else {
                return None;
            }
        }
        s => Error::rule(Code::INVOICE_INVALID_STATUS, format!("Invoice '{id}' is {s}: it takes no payment")),
    })
}

/// The payment an attempt charges: the payable one with the lowest number.
fn next_payable(payments: &[Payment]) -> Option<&Payment> {
    payments.iter().filter(|p| p.status.is_payable()).min_by_key(|p| p.number)
}

impl<S: Store> Engine<S> {
    /// The invoice of the public pages, with the scope its payer acts in: the invoice's branch,
    /// for the user who made it. 404 for an unknown one.
    fn public_invoice(&self, tx: &mut dyn Tx, id: InvoiceId) -> Result<(Invoice, Vec<Payment>, Scope)> {
        let missing = || Error::not_found("Invoice", id);
        let inv = tx.invoice_by_id(id)?.ok_or_else(missing)?;
        let org = tx.org(inv.org_id)?.ok_or_else(missing)?;
        let branch = tx.branch(inv.org_id, inv.branch_id)?.ok_or_else(missing)?;
        let payments = tx.invoice_payments(id)?;
        let actor = Actor {
            user_id: inv.user_id,
            role: crate::org::Role::BranchUser,
            access: BranchAccess::Only(vec![inv.branch_id]),
            api_key_id: None,
        };
        Ok((inv, payments, Scope { org, branch, actor }))
    }
}

impl<S: Store> Invoices<'_, S> {
    /// The pay page of invoice `id` (no credentials): its lines, coupons, VAT and totals, what
    /// is paid already, what the pay button charges, the installment plans the rules allow
    /// (before the invoice is accepted), and whether it takes a payment now and may be
    /// declined. A paid, voided, declined or expired invoice is a page too (its state says
    /// why it takes no payment).
    pub fn pay_page(&self, id: InvoiceId) -> Result<CheckoutPage> {
        self.store.read(|tx| {
            let (inv, payments, scope) = self.public_invoice(tx, id)?;
            let lines: Vec<_> = inv.items.iter().collect();
            let names = product_names(tx, inv.branch_id, &lines)?;
            let (items, coupons) = summary_of(&lines, &inv.coupons, &names);
            // A subscription's invoice paid by card keeps the card for the renewals.
            let renews = match inv.subscription_id {
                Some(sid) => tx
                    .subscription(inv.branch_id, sid.into())?
                    .filter(|s| !s.status.is_terminal() && s.payment_methods.auto_renewal())
                    .map(|s| Renewal {
                        interval: s.recurring_interval,
                        count: s.recurring_interval_count.max(1),
                        amount: s.amount,
                    }),
                None => None,
            };
            let state = match inv.status {
                InvoiceStatus::Created | InvoiceStatus::Sent | InvoiceStatus::Accepted => {
                    let in_flight = payments.iter().any(|p| p.status == PaymentStatus::Processing);
                    if next_payable(&payments).is_none() && !in_flight {
                        // Nothing left to pay (a manual payment or a refund since).
                        PageState::Invoice(InvoiceStatus::Completed)
                    } else if !self.takes_payments(&scope.org) {
                        PageState::NoGateway
                    } else {
                        PageState::Payable
                    }
                }
                s => PageState::Invoice(s),
            };
            let payable = state == PageState::Payable;
            let open = matches!(inv.status, InvoiceStatus::Created | InvoiceStatus::Sent);
            let settings = &scope.org.settings;
            let offered = open && inv.payment_methods.installment && inv.items.iter().all(|i| i.one_time);
            let pay_now = match inv.status {
                InvoiceStatus::Accepted => next_payable(&payments)
                    .or_else(|| payments.iter().find(|p| p.status == PaymentStatus::Processing))
                    .map_or(inv.total_amount, |p| p.amount),
                _ => inv.total_amount,
            };
            Ok(CheckoutPage {
                path: format!("/pay/invoices/{}", inv.id),
                name: scope.org.name.clone(),
                description: inv.description.clone(),
                currency: inv.currency,
                items,
                coupons,
                subtotal: inv.original_amount,
                vat: inv.total_vat_amount,
                vat_included: inv.items.iter().all(|i| i.vat_mode != crate::product::VatMode::Exclusive),
                total: inv.total_amount,
                paid: inv.paid_amount,
                pay_now,
                invoice_number: Some(inv.org_invoice_number),
                declinable: payable
                    && matches!(inv.status, InvoiceStatus::Created | InvoiceStatus::Sent | InvoiceStatus::Accepted)
                    && !inv.is_finalised(&payments),
                state,
                deactivate_message: None,
                collect_contact: None,
                installments: installments::options(settings, installment_total(&inv, settings), payable && offered),
                wallet: true,
                renews,
                confirmation_message: None,
            })
        })
    }

    /// Pays invoice `id` from its page (no credentials): accepts it with the chosen plan if it
    /// is not accepted yet, and charges its next payable payment through the gateway. Refusals
    /// write nothing: an unknown invoice (404), a form error or a `customer` (422: the invoice
    /// has its consumer), an organization with no gateway (400 PAYMENT_FLOW_NOT_ALLOWED),
    /// installments by wallet or a plan other than the accepted one (400
    /// PAYMENT_FLOW_NOT_ALLOWED), plans the rules do not allow (400), a paid invoice or one
    /// with a payment in flight (422 DUPLICATE_PAYMENT), a voided one (400 INVOICE_FINALISED),
    /// a declined, draft or expired one (400 INVOICE_INVALID_STATUS), a client whose attempts
    /// on the invoice failed too often (429 RATE_LIMITED). A gateway decline is an outcome
    /// (`failed`), not an error.
    pub fn pay(&self, id: InvoiceId, req: &PayRequest) -> Result<PayOutcome> {
        self.call_out("the payment gateway", || ())?;
        if req.customer.is_some() {
            return Err(Error::invalid(FieldError::body(
                "extra_forbidden",
                "customer",
                "Extra inputs are not permitted: the invoice has its consumer",
            )));
        }
        if !req.items.is_empty() {
            return Err(Error::invalid(FieldError::body(
                "extra_forbidden",
                "items",
                "Extra inputs are not permitted: an invoice's quantities are fixed",
            )));
        }
        let (inv, payments, scope) = self.store.read(|tx| self.public_invoice(tx, id))?;
        let now = self.now(&scope);
        if let Some(e) = unpayable(&inv, &payments) {
            return Err(e);
        }
        if !self.takes_payments(&scope.org) {
            return Err(no_gateway());
        }
        check_card_form(&req.method, now)?;
        let n = req.installments;
        if n > 1 && matches!(req.method, PayMethod::Wallet(_)) {
            return Err(Error::rule(
                Code::PAYMENT_FLOW_NOT_ALLOWED,
                "Installments are paid by card: the later ones are charged to it",
            ));
        }
        let method = match &req.method {
            PayMethod::Card(card) => PaymentMethod::parse(card.network())
                .filter(|m| m.is_gateway())
                .unwrap_or(PaymentMethod::PgwCardUnspecified),
            PayMethod::Wallet(_) => PaymentMethod::PgwCardUnspecified,
        };
        let mut later_due = false;
        let charge = self.record_charge(scope.org_id(), now, |tx| {
            let (mut inv, mut payments) = self.load_invoice(tx, &scope, id)?;
            if let Some(e) = unpayable(&inv, &payments) {
                return Err(e);
            }
            limits::check(tx, &limits::invoice_target(id), &req.client, self.failed_attempts_allowed(), now)?;
            if inv.status == InvoiceStatus::Accepted {
                if n != 1 && inv.installments != Some(n) {
                    return Err(Error::rule(
                        Code::PAYMENT_FLOW_NOT_ALLOWED,
                        format!("Invoice '{id}' is accepted with its plan already: pay its next payment"),
                    ));
                }
            } else {
                let plan = if n == 1 { PaymentPlan::Full } else { PaymentPlan::Installments(n) };
                payments = self.accept_in(tx, &scope, &mut inv, payments, plan, now)?;
            }
            let mut next = next_payable(&payments)
                .cloned()
                .ok_or_else(|| unpayable(&inv, &payments).unwrap_or_else(|| Error::code(Code::DUPLICATE_PAYMENT)))?;
            later_due = payments.iter().any(|p| p.number > next.number && p.status.is_payable());
            next.method = Some(method);
            Ok((inv, vec![next]))
        })?;
        let gw = self.gateway_for(&scope.org);
        let reference = charge.reference();
        let outcome = self.call_out("the payment gateway", || match &req.method {
            PayMethod::Card(card) => gw.charge_card(&reference, card, charge.total()),
            PayMethod::Wallet(phone) => gw.charge_wallet(&reference, phone.as_str(), charge.total()),
        })?;
        // The card is kept for the later installments, or for a subscription's renewals.
        let keep_card = later_due || inv.subscription_id.is_some();
        let token = match &req.method {
            PayMethod::Card(card) if outcome.approved && keep_card => self.call_out("the payment gateway", || gw.card_token(&reference, card))?,
            _ => None,
        };
        let mut consent = None;
        let paid = self.record_charge_outcome_and(&scope, &charge, &outcome, |tx, inv, recorded| {
            consent = None;
            if !outcome.approved {
                limits::record_failure(tx, &limits::invoice_target(id), &req.client, now)?;
            }
            // The first installment paid: the later ones are charged on their dates (once: a
            // later one paid early from the page has its item already).
            if outcome.approved && later_due && recorded.iter().any(|p| p.number == 1) {
                for later in tx.invoice_payments(inv.id)?.iter().filter(|p| p.number > 1 && p.status.is_payable()) {
                    crate::payment::installment::schedule(tx, later)?;
                }
            }
            // The later installments (or the subscription's renewals) are charged to this card.
            if let (Some(token), PayMethod::Card(card)) = (&token, &req.method) {
                let saved = TokenizedCard {
                    id: Uuid::now_v7(),
                    org_id: inv.org_id,
                    consumer_id: inv.consumer_id,
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
                consent = Some(saved.id);
            }
            Ok(())
        })?;
        let status = if outcome.approved {
            PayStatus::Paid
        } else if outcome.is_unclear() {
            PayStatus::FailedInternalError
        } else {
            PayStatus::Failed
        };
        let out = PayOutcome {
            status,
            message: outcome.message.clone(),
            reference,
            link_id: None,
            login_method: None,
            invoice_id: Some(id),
            payment_id: paid.first().map(|p| p.id),
            consent_id: consent,
            consumer_id: Some(charge.invoice.consumer_id),
            redirect_url: String::new(),
        };
        Ok(out.with_invoice_redirect(id, self.public_url(), req.language))
    }

    /// The payer declines invoice `id` from its page (no credentials), with an optional
    /// reason: the invoice becomes REJECTED, its unpaid payments CANCELED (PAYMENT_CANCELED
    /// each), and INVOICE_REJECTED is emitted with the reason as `data.reason`; it takes no
    /// payment afterwards. Refused once anything is paid or when the invoice is closed (400
    /// INVOICE_FINALISED), while a payment is in flight or when it is declined already, draft
    /// or expired (400 INVOICE_INVALID_STATUS).
    pub fn decline(&self, id: InvoiceId, req: &DeclineRequest) -> Result<Invoice> {
        self.store.write(|tx| {
            let (mut inv, payments, scope) = self.public_invoice(tx, id)?;
            let now = self.now(&scope);
            if inv.is_finalised(&payments) {
                return Err(Error::rule(
                    Code::INVOICE_FINALISED,
                    format!("Invoice '{id}' is paid in part or closed: it cannot be declined"),
                ));
            }
            super::ops::check_no_charge_in_flight(&inv, &payments)?;
            if !matches!(inv.status, InvoiceStatus::Created | InvoiceStatus::Sent | InvoiceStatus::Accepted) {
                return Err(Error::rule(Code::INVOICE_INVALID_STATUS, format!("Invoice '{id}' is {}", inv.status)));
            }
            inv.status = InvoiceStatus::Rejected;
            inv.updated_at = Some(now);
            tx.update_invoice_row(&inv)?;
            for mut p in payments.into_iter().filter(|p| p.status.is_unpaid()) {
                p.status = PaymentStatus::Canceled;
                p.updated_at = Some(now);
                tx.update_payment(&p)?;
                super::events::emit_payment(tx, self.public_url(), EventType::PaymentCanceled, &inv, &p, now)?;
            }
            let metadata = link_metadata(tx, &inv)?;
            let mut e = invoice_event(self.public_url(), EventType::InvoiceRejected, &inv, &metadata, now);
            e.payload["data"]["reason"] = req.reason.clone().map_or(Value::Null, Value::String);
            crate::event::record(tx, &e)?;
            Ok(inv)
        })
    }
}
