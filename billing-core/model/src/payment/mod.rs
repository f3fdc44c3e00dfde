//! Payments: how an invoice is paid (one INITIAL payment, or INSTALLMENT parts), by hand
//! (mark-paid) or through the card and wallet gateway, and refunds.
//!
//! - [`ops`]: get, list, mark-paid, refund.
//! - [`charge`]: card payments by the payer, saved cards, auto-charge on demand.
//! - [`gateway`]: the card and wallet processor ([`gateway::PaymentGateway`]) and its sandbox.
//! - [`limits`]: failed pay attempts per link or invoice and client (card testing).
//! - [`store`]: the [`PaymentTx`] slice of the store contract.
//! - [`wire`]: request parsing (and `request`, the requests' documents).
//! - [`view`]: PaymentDto, PaymentResponse, AutoChargeOnDemandResponse, PaymentMethodDto.

pub mod gateway;
pub mod store;
pub mod view;
pub mod wire;

pub use store::PaymentTx;
pub use view::{AutoChargeOnDemandResponse, PaymentDto, PaymentMethodDto, PaymentResponse};
pub use wire::parse_payment_list;

use crate::clock::Timestamp;
use crate::ids::{BranchId, ConsumerId, InvoiceId, OrgId, PaymentId};
use crate::money::Money;
use crate::wire_enum;
use uuid::Uuid;

wire_enum!(PaymentStatus {
    Pending = "PENDING",
    Processing = "PROCESSING",
    FailedInitiation = "FAILED_INITIATION",
    Succeeded = "SUCCEEDED",
    Failed = "FAILED",
    Canceled = "CANCELED",
    UnderReview = "UNDER_REVIEW",
    Expired = "EXPIRED",
    Settled = "SETTLED",
    Refunded = "REFUNDED",
});

wire_enum!(PaymentType { Initial = "INITIAL", Installment = "INSTALLMENT", SplitPrepaid = "SPLIT_PREPAID" });

wire_enum!(PaymentMethod {
    Mada = "MADA",
    Mastercard = "MASTERCARD",
    Visa = "VISA",
    ApplePay = "APPLE_PAY",
    SamsungPay = "SAMSUNG_PAY",
    Amex = "AMEX",
    Cash = "CASH",
    PgwCardUnspecified = "PGW_CARD_UNSPECIFIED",
    BankTransfer = "BANK_TRANSFER",
    Card = "CARD",
    Qurrah = "QURRAH",
});

wire_enum!(RefundReason { RequestedByCustomer = "REQUESTED_BY_CUSTOMER", Duplicate = "DUPLICATE", Fraudulent = "FRAUDULENT", Other = "OTHER" });

wire_enum!(PaymentSort { CreatedAt = "created_at", Amount = "amount", ScheduledOn = "scheduled_on", PayedAt = "payed_at" });

impl PaymentStatus {
    /// Not paid yet and not given up: the invoice still owes it (PROCESSING included: an
    /// attempt to pay it is in flight).
    pub fn is_unpaid(self) -> bool {
        matches!(
            self,
            PaymentStatus::Pending | PaymentStatus::Processing | PaymentStatus::UnderReview | PaymentStatus::Failed | PaymentStatus::FailedInitiation
        )
    }
    /// Unpaid with no attempt in flight: a payer may pay it now.
    pub fn is_payable(self) -> bool {
        self.is_unpaid() && self != PaymentStatus::Processing
    }
    pub fn is_paid(self) -> bool {
        matches!(self, PaymentStatus::Succeeded | PaymentStatus::Settled | PaymentStatus::Refunded)
    }
}

impl PaymentMethod {
    /// Methods a payment may be marked as paid with (spec: Mark-paid rules).
    pub fn is_manual(self) -> bool {
        matches!(
            self,
            PaymentMethod::Cash | PaymentMethod::BankTransfer | PaymentMethod::Card | PaymentMethod::Qurrah
        )
    }
    /// Card or wallet payments that went through the gateway.
    pub fn is_gateway(self) -> bool {
        matches!(
            self,
            PaymentMethod::Mada
                | PaymentMethod::Mastercard
                | PaymentMethod::Visa
                | PaymentMethod::ApplePay
                | PaymentMethod::SamsungPay
                | PaymentMethod::Amex
                | PaymentMethod::PgwCardUnspecified
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Payment {
    pub id: PaymentId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub invoice_id: InvoiceId,
    /// 1, 2, … within the invoice.
    pub number: u32,
    pub amount: Money,
    pub payment_type: PaymentType,
    pub method: Option<PaymentMethod>,
    pub status: PaymentStatus,
    pub scheduled_on: Timestamp,
    pub payed_at: Option<Timestamp>,
    pub refunded_at: Option<Timestamp>,
    pub refund_reason: Option<RefundReason>,
    pub refund_note: Option<String>,
    pub note: Option<String>,
    /// Payments paid in one gateway transaction share it.
    pub transaction_id: Option<Uuid>,
    pub latest_pgw_message: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

impl Payment {
    pub fn api_url(public_url: &str, id: PaymentId) -> String {
        format!("{public_url}/api/v2/payments/{id}")
    }
}

/// A consumer's saved card: never the number, only what identifies and charges it.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenizedCard {
    pub id: Uuid,
    pub org_id: OrgId,
    pub consumer_id: ConsumerId,
    pub network: String,
    pub last_four: String,
    pub expiry_month: u32,
    pub expiry_year: u32,
    pub gateway_token: String,
    pub is_active: bool,
    /// The consumer's consent to charge it without them present.
    pub consent: bool,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PaymentFilter {
    pub invoice_ids: Vec<InvoiceId>,
    pub statuses: Vec<PaymentStatus>,
    pub from_date: Option<Timestamp>,
    pub to_date: Option<Timestamp>,
}

/// PaymentMarkPaidRequest.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkPaid {
    pub method: PaymentMethod,
    pub note: Option<String>,
}

/// PaymentRefundRequest.
#[derive(Debug, Clone, PartialEq)]
pub struct RefundRequest {
    pub reason: RefundReason,
    pub note: Option<String>,
    pub allow_multiple: bool,
}
