//! Invoices: what a consumer owes, priced from products and coupons ([`crate::pricing`]), paid
//! by one payment or by installments ([`crate::payment`]), with the events they emit.
//!
//! - [`ops`]: create, get, list, send, void, in-place update; `accept` (the payer's plan) and
//!   `settle` (what paying changes) beside them.
//! - [`pay`]: the payer's side (no credentials): the pay page, paying, declining.
//! - [`installments`]: splitting a total into 2, 3 or 4 payments.
//! - [`events`]: the outbox payloads of invoices and payments.
//! - [`store`]: the [`InvoiceTx`] slice of the store contract.
//! - [`wire`] and [`view`]: request parsing (and `request`, the requests' documents),
//!   InvoiceDetailed and InvoiceListItem.

pub mod installments;
pub mod store;
pub mod view;
pub mod view_parts;
pub mod wire;

pub use crate::org::PaymentMethods;
pub use crate::pricing::ItemRequest;
pub use installments::{InstallmentPlan, PaymentPlan};
pub use store::InvoiceTx;
pub use view::{InvoiceDetailed, InvoiceListItem, InvoiceView};
pub use view_parts::{InvoiceItemDto, InvoiceListSubscrptionDto, InvoicePaymentMethodDto};
pub use wire::parse_invoice_list;

use crate::clock::Timestamp;
use crate::ids::{BranchId, ConsumerId, CouponId, InvoiceId, InvoiceItemId, OrgId, PriceId, ProductId, UserId};
use crate::list::ListQuery;
use crate::money::{Currency, Money};
use crate::payment::{Payment, PaymentMethod, PaymentStatus};
use crate::pricing::CouponLine;
use crate::product::VatMode;
use crate::wire_enum;
use rust_decimal::Decimal;
use uuid::Uuid;

wire_enum!(InvoiceStatus {
    Draft = "DRAFT",
    Created = "CREATED",
    Sent = "SENT",
    Accepted = "ACCEPTED",
    Rejected = "REJECTED",
    Completed = "COMPLETED",
    Canceled = "CANCELED",
    Expired = "EXPIRED",
});

wire_enum!(InvoiceSort {
    CreatedAt = "created_at",
    UpdatedAt = "updated_at",
    TotalAmount = "total_amount",
    OrgInvoiceNumber = "org_invoice_number",
    ScheduledOn = "scheduled_on",
    Status = "status",
});

impl InvoiceStatus {
    /// Neither completed nor canceled: the invoice may still take money or change.
    pub const OPEN: &'static [InvoiceStatus] = &[
        InvoiceStatus::Draft,
        InvoiceStatus::Created,
        InvoiceStatus::Sent,
        InvoiceStatus::Accepted,
        InvoiceStatus::Rejected,
        InvoiceStatus::Expired,
    ];

    pub fn is_terminal(self) -> bool {
        matches!(self, InvoiceStatus::Completed | InvoiceStatus::Canceled)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct InvoiceItem {
    pub id: InvoiceItemId,
    pub product_id: ProductId,
    pub price_id: Option<PriceId>,
    pub quantity: u32,
    pub unit_price: Money,
    pub vat_mode: VatMode,
    /// Whether the product is one-time (installments are for one-time products only).
    pub one_time: bool,
    pub coupon_ids: Vec<CouponId>,
    pub original_amount: Money,
    pub discounted_amount: Money,
    pub coupons: Vec<CouponLine>,
    pub vat_amount: Money,
    pub excluding_vat: Money,
    pub created_at: Timestamp,
}

impl InvoiceItem {
    /// The item of a line priced by [`crate::pricing::price`].
    pub fn from_priced(line: &crate::pricing::PricedItem, id: InvoiceItemId, now: Timestamp) -> Self {
        InvoiceItem {
            id,
            product_id: line.product_id,
            price_id: Some(line.price_id),
            quantity: line.quantity,
            unit_price: line.unit_price,
            vat_mode: line.vat_mode,
            one_time: line.one_time,
            coupon_ids: line.coupon_ids.clone(),
            original_amount: line.amounts.original_amount,
            discounted_amount: line.amounts.discounted_amount,
            coupons: line.amounts.coupons.clone(),
            vat_amount: line.amounts.vat.vat,
            excluding_vat: line.amounts.vat.excluding_vat,
            created_at: now,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Invoice {
    pub id: InvoiceId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub user_id: UserId,
    pub consumer_id: ConsumerId,
    /// Per organization, from 1, without gaps.
    pub org_invoice_number: i64,
    pub description: Option<String>,
    pub currency: Currency,
    pub status: InvoiceStatus,
    pub payment_methods: PaymentMethods,
    pub coupon_ids: Vec<CouponId>,
    pub exclude_coupons_if_installments: bool,
    pub notify_consumer: bool,
    pub scheduled_on: Timestamp,
    pub original_amount: Money,
    pub item_level_discounted_amount: Money,
    pub total_vat_amount: Money,
    pub total_price_excluding_vat: Money,
    pub total_amount: Money,
    /// What the payer has paid and kept: paid payments add to it, refunds take it back off.
    pub paid_amount: Money,
    pub coupons: Vec<CouponLine>,
    /// The number of installments chosen (none until accepted with installments).
    pub installments: Option<u8>,
    pub payment_link_id: Option<Uuid>,
    pub subscription_id: Option<Uuid>,
    pub items: Vec<InvoiceItem>,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

impl Invoice {
    /// What is still to be paid: the sum of the payments that are unpaid (PROCESSING included);
    /// canceled and refunded payments are not owed.
    pub fn remaining_amount(&self, payments: &[Payment]) -> Money {
        Money::new(payments.iter().filter(|p| p.status.is_unpaid()).map(|p| p.amount.amount()).sum(), self.currency)
    }

    /// The hosted page of the invoice.
    pub fn url(&self, public_url: &str) -> String {
        format!("{public_url}/pay/invoices/{}", self.id)
    }

    pub fn api_url(public_url: &str, id: InvoiceId) -> String {
        format!("{public_url}/api/v2/invoices/{id}")
    }

    /// Finalised: completed, canceled, or any payment succeeded.
    pub fn is_finalised(&self, payments: &[Payment]) -> bool {
        self.status.is_terminal() || payments.iter().any(|p| p.status.is_paid())
    }
}

/// An invoice with what its responses show besides it, read in one transaction: its payments,
/// its consumer and (for the detailed view) the products of its items.
#[derive(Debug, Clone, PartialEq)]
pub struct InvoiceDetail {
    pub invoice: Invoice,
    /// Ordered by number.
    pub payments: Vec<Payment>,
    /// `None` only if the consumer row is gone.
    pub consumer: Option<crate::consumer::Consumer>,
    /// The products of the invoice's items, once each (empty in lists).
    pub products: Vec<crate::product::Product>,
}

impl InvoiceDetail {
    /// The invoice and its payments.
    pub fn into_parts(self) -> (Invoice, Vec<Payment>) {
        (self.invoice, self.payments)
    }
}

/// InvoiceCreate, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct InvoiceCreate {
    pub notify_consumer: bool,
    pub description: Option<String>,
    pub items: Vec<ItemRequest>,
    pub payment_methods: PaymentMethods,
    pub coupons: Vec<CouponId>,
    pub consumer_id: ConsumerId,
    pub scheduled_on: Option<Timestamp>,
    pub exclude_coupons_if_installments: bool,
    pub currency: Currency,
}

/// The most items one invoice takes.
pub const MAX_ITEMS: usize = 100;

/// InvoiceInPlaceUpdate: only the supplied fields change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InvoiceInPlaceUpdate {
    pub scheduled_on: Option<Timestamp>,
    pub description: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct InvoiceFilter {
    pub statuses: Vec<InvoiceStatus>,
    pub payment_link_id: Option<Uuid>,
    pub from_date: Option<Timestamp>,
    pub to_date: Option<Timestamp>,
    pub due_date_from: Option<Timestamp>,
    pub due_date_to: Option<Timestamp>,
    /// Bounds on `total_amount`.
    pub from_price: Option<Decimal>,
    pub to_price: Option<Decimal>,
    pub consumer_id: Option<ConsumerId>,
    pub subscription_id: Option<Uuid>,
    pub currencies: Vec<Currency>,
    /// Each entry: the invoice has a payment that matches it (`payment_statuses`, and
    /// `payments_not_settled`: a SUCCEEDED card or wallet payment).
    pub has_payments: Vec<PaymentMatch>,
}

/// A condition on one payment of an invoice: every non-empty list must contain the payment's
/// value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PaymentMatch {
    pub statuses: Vec<PaymentStatus>,
    pub methods: Vec<PaymentMethod>,
}

impl PaymentMatch {
    /// `payments_not_settled`: a card or wallet payment that succeeded and is not settled yet.
    pub fn not_settled() -> Self {
        PaymentMatch {
            statuses: vec![PaymentStatus::Succeeded],
            methods: PaymentMethod::ALL.iter().copied().filter(|m| m.is_gateway()).collect(),
        }
    }
}

pub struct InvoiceListRequest {
    pub query: ListQuery<InvoiceSort>,
    pub filter: InvoiceFilter,
    pub include_payments: bool,
}
