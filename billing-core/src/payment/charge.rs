//! Charges through the card and wallet gateway: the payer paying by card (the hosted page's
//! building block), saved cards, and auto-charge on demand. Each reads in one transaction,
//! calls the gateway with no transaction open, and records the outcome in another (see
//! [`crate::Lane::Io`]).

use super::gateway::{self, CardDetails};
use super::ops::Payments;
use super::{Payment, PaymentMethod, PaymentStatus, TokenizedCard};
use crate::auth::Scope;
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::{ConsumerId, InvoiceId, PaymentId};
use crate::invoice::InvoiceStatus;
use crate::lane::Lane;
use crate::store::Store;
use uuid::Uuid;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const PAY_BY_CARD: Lane = Lane::Io;
    pub const SAVE_CARD: Lane = Lane::Write;
    pub const AUTO_CHARGE: Lane = Lane::Io;
}

impl<S: Store> Payments<'_, S> {
    /// The payer pays some unpaid payments of an invoice by card in one gateway transaction (the
    /// hosted page's building block). Approved: each payment SUCCEEDED with the card's network
    /// and one shared transaction, one PAYMENT_SUCCEEDED per payment, then INVOICE_COMPLETED
    /// when the invoice is now fully paid. Declined: each payment FAILED with PAYMENT_FAILED
    /// only, and the call answers 400 INVALID_PARAMETERS with the gateway's code. A card form
    /// error is a 422 and charges nothing. Installment invoices must be ACCEPTED first.
    pub fn pay_by_card(&self, scope: &Scope, invoice: InvoiceId, payment_ids: &[PaymentId], card: &CardDetails) -> Result<Vec<Payment>> {
        use chrono::Datelike;
        let now = self.now(scope);
        if let Err(field) = card.check(now.year(), now.month()) {
            return Err(Error::invalid(FieldError::body(
                "value_error",
                field,
                "Value error, the card field is not valid",
            )));
        }
        let method = PaymentMethod::parse(card.network()).unwrap_or(PaymentMethod::PgwCardUnspecified);
        let charge = self.record_charge(scope.org_id(), now, |tx| {
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
                check_payable(p)?;
                if !chosen.iter().any(|c: &Payment| c.id == p.id) {
                    let mut p = p.clone();
                    p.method = Some(method);
                    chosen.push(p);
                }
            }
            if inv.installments.is_some() && inv.status != InvoiceStatus::Accepted {
                return Err(Error::rule(
                    Code::INVOICE_INVALID_STATUS,
                    format!("Installment invoice '{invoice}' is {}, not ACCEPTED", inv.status),
                ));
            }
            Ok((inv, chosen))
        })?;
        let gw = self.gateway_for(&scope.org);
        let outcome = self.call_out("the payment gateway", || gw.charge_card(&charge.reference(), card, charge.total()))?;
        let paid = self.record_charge_outcome(scope, &charge, &outcome)?;
        if !outcome.approved {
            return Err(Error::rule(
                Code::INVALID_PARAMETERS,
                format!("The charge failed: {} {}", outcome.code, outcome.message),
            ));
        }
        Ok(paid)
    }

    /// Saves a card for a consumer as a gateway token (network, last four digits, expiry; never
    /// the number). In sandbox the token carries the test number's outcome.
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
    pub fn auto_charge(&self, scope: &Scope, id: PaymentId) -> Result<(PaymentId, InvoiceId)> {
        if !scope.org.settings.auto_charge_on_demand {
            return Err(Error::rule(
                Code::FEATURE_DISABLED,
                "Auto-charge on demand is not enabled for this organization",
            ));
        }
        let now = self.now(scope);
        let mut card = None;
        let charge = self.record_charge(scope.org_id(), now, |tx| {
            let p = tx.payment(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Payment", id))?;
            let (inv, _) = self.load_invoice(tx, scope, p.invoice_id)?;
            tx.consumer(scope.branch_id(), inv.consumer_id)?
                .filter(|c| !c.is_deleted)
                .ok_or_else(|| Error::not_found("Consumer", inv.consumer_id))?;
            if p.status.is_paid() {
                return Err(Error::rule(Code::PAYMENT_FINALIZED, format!("Payment '{id}' is already paid")));
            }
            if !p.status.is_payable() {
                return Err(Error::rule(Code::INVALID_STATUS, format!("Payment '{id}' is {}", p.status)));
            }
            if inv.installments.is_some() && inv.status != InvoiceStatus::Accepted {
                return Err(Error::rule(
                    Code::INVOICE_INVALID_STATUS,
                    format!("Installment invoice '{}' is {}, not ACCEPTED", inv.id, inv.status),
                ));
            }
            let c = tx
                .latest_active_card(inv.consumer_id)?
                .ok_or_else(|| Error::rule(Code::INVALID_PARAMETERS, "The consumer has no active tokenized card"))?;
            if !c.consent {
                return Err(Error::rule(Code::NOT_FOUND, "No consent to charge the consumer's card"));
            }
            let mut p = p;
            p.method = Some(PaymentMethod::parse(&c.network).unwrap_or(PaymentMethod::PgwCardUnspecified));
            card = Some(c);
            Ok((inv, vec![p]))
        })?;
        let card = card.expect("chosen with the payment");
        let gw = self.gateway_for(&scope.org);
        let outcome = self.call_out("the payment gateway", || {
            gw.charge_token(&charge.reference(), &card.gateway_token, charge.total())
        })?;
        self.record_charge_outcome(scope, &charge, &outcome)?;
        if !outcome.approved {
            return Err(Error::rule(
                Code::INVALID_PARAMETERS,
                format!("The charge failed: {} {}", outcome.code, outcome.message),
            ));
        }
        Ok((id, charge.invoice.id))
    }
}

/// A payment the payer may pay now: not paid, and no other attempt in flight on it.
fn check_payable(p: &Payment) -> Result<()> {
    if p.status == PaymentStatus::Processing {
        return Err(Error::rule(Code::INVALID_STATUS, format!("Payment '{}' is being processed", p.id)));
    }
    if !p.status.is_payable() {
        return Err(Error::rule(Code::PAYMENT_FINALIZED, format!("Payment '{}' is {}", p.id, p.status)));
    }
    Ok(())
}
