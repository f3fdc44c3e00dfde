//! What the API answers of a payment: PaymentDto (as invoices embed it) and PaymentResponse
//! (the payments' own endpoints), borrowed from the payment; AutoChargeOnDemandResponse; and
//! PaymentMethodDto, the card and transfer methods a payment link offers.

use super::{Payment, PaymentMethod, PaymentStatus, PaymentType, RefundReason};
use crate::clock::Timestamp;
use crate::ids::{InvoiceId, PaymentId};
use crate::money::{Currency, Money};
use crate::org::PaymentMethods;
use crate::schema::{DateTime, Id, Integer, Number};
use schemars::JsonSchema;
use serde::Serialize;

/// PaymentDto: one payment of an invoice (its single payment, or one installment).
#[derive(Debug, Serialize, JsonSchema)]
pub struct PaymentDto<'a> {
    /// The payment's id.
    pub id: PaymentId,
    /// The amount, a decimal string with the currency's minor digits (`"115.00"`).
    #[schemars(with = "String")]
    pub amount: Money,
    /// The amount's currency.
    #[schemars(with = "Option<Currency>")]
    pub currency: Currency,
    /// When the payment is due (UTC).
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub scheduled_on: Timestamp,
    /// The payment's place in its invoice, from 1.
    #[schemars(with = "Number")]
    pub invoice_payment_number: u32,
    /// `INITIAL` (the invoice's single payment) or `INSTALLMENT`.
    pub r#type: PaymentType,
    /// How it was paid (a card network, a wallet, or a manual method); `null` until paid or
    /// attempted.
    pub payment_method: Option<PaymentMethod>,
    /// The payment's status.
    #[schemars(with = "Option<PaymentStatus>")]
    pub current_status: PaymentStatus,
    /// When it was paid; `null` if not paid.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub payed_at: Option<Timestamp>,
    /// When the gateway settled it; not tracked yet, always `null`.
    #[schemars(with = "Option<DateTime>")]
    pub settled_at: Option<()>,
    /// When it was refunded; `null` if not refunded.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub refunded_at: Option<Timestamp>,
    /// A receipt document; not produced yet, always `null`.
    pub pdf_link: Option<&'a str>,
    /// The account the money was paid to; not tracked yet, always `null`.
    #[schemars(with = "Option<Id>")]
    pub paid_to_account_id: Option<()>,
    /// The amount in the currency's smallest unit (halalas, cents).
    #[schemars(with = "Integer")]
    pub amount_in_smallest_unit: i64,
    /// The note given when it was marked as paid by hand.
    pub note: Option<&'a str>,
}

/// PaymentResponse: a payment, as the payments' endpoints answer it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PaymentResponse<'a> {
    /// The payment's id.
    pub id: PaymentId,
    /// The amount, a decimal string with the currency's minor digits (`"115.00"`).
    #[schemars(with = "String")]
    pub amount: Money,
    /// The amount's currency.
    #[schemars(with = "Option<Currency>")]
    pub currency: Currency,
    /// When the payment is due (UTC, RFC 3339).
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "String")]
    pub scheduled_on: Timestamp,
    /// `INITIAL` (the invoice's single payment) or `INSTALLMENT`.
    pub r#type: PaymentType,
    /// How it was paid (a card network, a wallet, or a manual method); `null` until paid or
    /// attempted.
    pub payment_method: Option<PaymentMethod>,
    /// The payment's status.
    #[schemars(with = "Option<PaymentStatus>")]
    pub current_status: PaymentStatus,
    /// When it was paid; `null` if not paid.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub payed_at: Option<Timestamp>,
    /// When it was refunded; `null` if not refunded.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub refunded_at: Option<Timestamp>,
    /// Why it was refunded; `null` if not refunded.
    pub refund_reason: Option<RefundReason>,
    /// The note given with the refund.
    pub refund_note: Option<&'a str>,
    /// The payment gateway's latest message about it (a decline's reason).
    pub latest_pgw_message: Option<&'a str>,
    /// The amount in the currency's smallest unit (halalas, cents).
    #[schemars(with = "Integer")]
    pub amount_in_smallest_unit: i64,
    /// The payment's place in its invoice, from 1.
    #[schemars(with = "Integer")]
    pub invoice_payment_number: u32,
    /// The note given when it was marked as paid by hand.
    pub note: Option<&'a str>,
    /// The invoice the payment belongs to.
    pub invoice_id: InvoiceId,
    /// When the payment was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the payment last changed; `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
}

/// AutoChargeOnDemandResponse: the payment charged to the consumer's saved card.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AutoChargeOnDemandResponse {
    /// The payment charged.
    pub payment_id: PaymentId,
    /// Its invoice.
    pub invoice_id: InvoiceId,
}

/// PaymentMethodDto: the methods a payment link offers its payers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PaymentMethodDto {
    /// mada debit cards.
    #[schemars(with = "Option<bool>")]
    pub mada: bool,
    /// Visa cards.
    #[schemars(with = "Option<bool>")]
    pub visa: bool,
    /// Mastercard cards.
    #[schemars(with = "Option<bool>")]
    pub mastercard: bool,
    /// American Express cards.
    #[schemars(with = "Option<bool>")]
    pub amex: bool,
    /// Bank transfer.
    #[schemars(with = "Option<bool>")]
    pub bank_transfer: bool,
    /// Paying in installments.
    #[schemars(with = "Option<bool>")]
    pub installment: bool,
}

impl From<&PaymentMethods> for PaymentMethodDto {
    fn from(m: &PaymentMethods) -> Self {
        PaymentMethodDto {
            mada: m.mada,
            visa: m.visa,
            mastercard: m.mastercard,
            amex: m.amex,
            bank_transfer: m.bank_transfer,
            installment: m.installment,
        }
    }
}

impl Payment {
    /// PaymentDto, borrowed from the payment.
    pub fn dto(&self) -> PaymentDto<'_> {
        PaymentDto {
            id: self.id,
            amount: self.amount,
            currency: self.amount.currency(),
            scheduled_on: self.scheduled_on,
            invoice_payment_number: self.number,
            r#type: self.payment_type,
            payment_method: self.method,
            current_status: self.status,
            payed_at: self.payed_at,
            settled_at: None,
            refunded_at: self.refunded_at,
            pdf_link: None,
            paid_to_account_id: None,
            amount_in_smallest_unit: self.amount.minor_units(),
            note: self.note.as_deref(),
        }
    }

    /// PaymentResponse, borrowed from the payment.
    pub fn response(&self) -> PaymentResponse<'_> {
        PaymentResponse {
            id: self.id,
            amount: self.amount,
            currency: self.amount.currency(),
            scheduled_on: self.scheduled_on,
            r#type: self.payment_type,
            payment_method: self.method,
            current_status: self.status,
            payed_at: self.payed_at,
            refunded_at: self.refunded_at,
            refund_reason: self.refund_reason,
            refund_note: self.refund_note.as_deref(),
            latest_pgw_message: self.latest_pgw_message.as_deref(),
            amount_in_smallest_unit: self.amount.minor_units(),
            invoice_payment_number: self.number,
            note: self.note.as_deref(),
            invoice_id: self.invoice_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}
