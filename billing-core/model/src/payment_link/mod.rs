//! Payment links: a shareable checkout address (`{public URL}/pay/{short id}`) for a priced set
//! of products. The link is priced when it is made (and when its coupons change) by
//! [`crate::pricing`], the module invoices use, so what the payer sees is what the invoice made
//! at payment bills. Paying a link creates the consumer (or reuses the branch's consumer with
//! the same contact), the invoice and its payments, only once the gateway approved.
//!
//! - [`ops`]: create, get, list, change status, change coupons.
//! - [`pay`]: paying a link (the checkout's one operation), [`checkout`]: its request, outcome
//!   and redirect address, and `attempt`: payments in flight, recorded before the gateway call.
//! - [`page`]: what the hosted checkout page shows ([`page::CheckoutPage`]).
//! - [`store`]: the [`PaymentLinkTx`] slice of the store contract.
//! - [`wire`] and [`view`]: request parsing and documents, and the typed views
//!   (PaymentLinkDetailed, the checkout attempt's answer).

pub mod store;
pub mod view;
pub mod wire;

pub use store::PaymentLinkTx;
pub use wire::parse_payment_link_list;

use crate::clock::Timestamp;
use crate::error::{Code, Error, Result};
use crate::ids::{BranchId, ConsumerId, CouponId, OrgId, PaymentLinkId, PaymentLinkItemId, ProductId, UserId};
use crate::invoice::{InvoiceItem, PaymentMethods};
use crate::list::ListQuery;
use crate::money::{Currency, Money};
use crate::pricing::CouponLine;
use crate::product::RecurringInterval;
use crate::wire_enum;
use rust_decimal::Decimal;
use serde_json::{Map, Value};

wire_enum!(PaymentLinkStatus { Active = "ACTIVE", Inactive = "INACTIVE", Completed = "COMPLETED" });
wire_enum!(ContactInformationType { Phone = "PHONE", Email = "EMAIL" });
wire_enum!(PaymentLinkSort { CreatedAt = "created_at", UpdatedAt = "updated_at", Name = "name", Amount = "amount" });
wire_enum!(PayStatus { Paid = "paid", Pending = "pending", Failed = "failed", FailedInternalError = "failed_internal_error" });

/// The most items one link takes (as an invoice).
pub const MAX_ITEMS: usize = crate::invoice::MAX_ITEMS;
/// Random characters of a short id (URL-safe base64 of 16 bytes from the OS-seeded CSPRNG).
pub const SHORT_ID_LEN: usize = 22;

/// One line of a link: the priced line an invoice made from it keeps (product, price, quantity,
/// coupons, amounts), plus what the checkout may let the payer change.
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentLinkItem {
    pub id: PaymentLinkItemId,
    pub line: InvoiceItem,
    pub allow_custom_quantity: bool,
    pub min_quantity: Option<u32>,
    pub max_quantity: Option<u32>,
    pub updated_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PaymentLink {
    pub id: PaymentLinkId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub user_id: UserId,
    /// The unguessable part of the checkout address; unique.
    pub short_id: String,
    pub name: String,
    pub description: Option<String>,
    pub currency: Currency,
    pub status: PaymentLinkStatus,
    pub deactivate_message: Option<String>,
    /// The consumer who pays (checkout then asks for no details); none: checkout collects them.
    pub consumer_id: Option<ConsumerId>,
    /// What checkout collects besides the name, and how the payer is found again.
    pub contact_information_type: ContactInformationType,
    /// How many payments the link accepts; none is unlimited.
    pub max_number_of_payments: Option<u32>,
    /// Payments taken through the link so far.
    pub payments_count: u32,
    /// What the invoices made through the link have been paid.
    pub amount_collected: Money,
    pub valid_until: Option<Timestamp>,
    /// What checkout shows and where it sends the payer.
    pub checkout: CheckoutOptions,
    /// Stored as given (nested objects too); sent as `metadata` in webhook data.
    pub custom_metadata: Map<String, Value>,
    pub payment_methods: PaymentMethods,
    /// Set (from the products) when the link sells recurring products.
    pub recurring_interval: Option<RecurringInterval>,
    pub recurring_interval_count: Option<u32>,
    pub coupon_ids: Vec<CouponId>,
    pub coupons: Vec<CouponLine>,
    pub original_amount: Money,
    pub item_level_discounted_amount: Money,
    pub total_vat_amount: Money,
    pub total_price_excluding_vat: Money,
    /// What the payer pays.
    pub amount: Money,
    pub items: Vec<PaymentLinkItem>,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

/// A link with what its view shows besides ([`view::PaymentLinkResponse`]), read in the
/// transaction that read or wrote the link.
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentLinkDetail {
    pub link: PaymentLink,
    /// The products of its items, as stored now (a deleted one is missing).
    pub products: Vec<crate::product::Product>,
    /// Its link-level coupons, in order (a deleted one is missing).
    pub coupons: Vec<crate::coupon::Coupon>,
}

/// What checkout shows and where it sends the payer afterwards (stores keep it as one JSON
/// value: nothing filters on it).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct CheckoutOptions {
    pub confirmation_message: Option<String>,
    pub trial_period_days: Option<u32>,
    pub custom_fields: Option<Map<String, Value>>,
    /// Absolute http(s) URLs.
    pub success_redirect_url: Option<String>,
    pub failure_redirect_url: Option<String>,
}

/// Why a link takes no payment now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unpayable {
    Inactive,
    Expired,
    Completed,
}

impl PaymentLink {
    /// The hosted checkout address.
    pub fn url(&self, public_url: &str) -> String {
        format!("{public_url}/pay/{}", self.short_id)
    }

    /// The API address (webhook `data.payment_link.url`).
    pub fn api_url(public_url: &str, id: PaymentLinkId) -> String {
        format!("{public_url}/api/v2/payment_links/{id}")
    }

    /// Whether the link lets the payer pay in installments (its payment methods allow them
    /// and every product is one-time); which plans the amount allows is
    /// [`crate::invoice::installments::options`].
    pub fn offers_installments(&self) -> bool {
        self.payment_methods.installment && self.items.iter().all(|i| i.line.one_time)
    }

    pub fn is_recurring(&self) -> bool {
        self.recurring_interval.is_some()
    }

    /// Whether the link takes a payment at `now`: ACTIVE and not past `valid_until` (an expired
    /// link keeps its status).
    pub fn payable(&self, now: Timestamp) -> std::result::Result<(), Unpayable> {
        match self.status {
            PaymentLinkStatus::Inactive => Err(Unpayable::Inactive),
            PaymentLinkStatus::Completed => Err(Unpayable::Completed),
            PaymentLinkStatus::Active if self.valid_until.is_some_and(|v| v <= now) => Err(Unpayable::Expired),
            PaymentLinkStatus::Active => Ok(()),
        }
    }

    /// [`Self::payable`] as the refusal a payer gets.
    pub fn check_payable(&self, now: Timestamp) -> Result<()> {
        let why = match self.payable(now) {
            Ok(()) => return Ok(()),
            Err(Unpayable::Inactive) => "is inactive",
            Err(Unpayable::Expired) => "has expired",
            Err(Unpayable::Completed) => "is completed: it takes no more payments",
        };
        Err(Error::rule(Code::INVALID_STATUS, format!("Payment link '{}' {why}", self.id)))
    }
}

/// A new short id: 22 URL-safe characters from 16 random bytes (128 bits) of the thread's
/// CSPRNG (the generator API keys use).
pub fn new_short_id() -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use rand::RngCore;
    let mut b = [0u8; 16];
    rand::rng().fill_bytes(&mut b);
    URL_SAFE_NO_PAD.encode(b)
}

/// CreatePaymentLinkItemDto, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkItemRequest {
    pub product_id: ProductId,
    pub quantity: u32,
    pub coupons: Vec<CouponId>,
    pub allow_custom_quantity: bool,
    pub min_quantity: Option<u32>,
    pub max_quantity: Option<u32>,
}

/// CreatePaymentLinkDto, parsed (everything a request alone can check is checked).
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentLinkCreate {
    pub name: String,
    pub description: Option<String>,
    pub currency: Currency,
    pub items: Vec<LinkItemRequest>,
    pub coupons: Vec<CouponId>,
    pub max_number_of_payments: Option<u32>,
    pub valid_until: Option<Timestamp>,
    /// `None`: the organization's default.
    pub payment_methods: Option<PaymentMethods>,
    pub checkout: CheckoutOptions,
    pub consumer_id: Option<ConsumerId>,
    pub custom_metadata: Map<String, Value>,
    pub contact_information_type: ContactInformationType,
}

/// UpdatePaymentLinkStatusDto: only ACTIVE (reactivate) and INACTIVE (deactivate) are asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusChange {
    pub status: PaymentLinkStatus,
    pub deactivate_message: Option<String>,
}

/// UpdatePaymentLinkCouponsDto: `coupons` replaces the link's coupons when given; each item
/// entry replaces that item's coupons.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CouponsChange {
    pub coupons: Option<Vec<CouponId>>,
    pub items: Vec<(PaymentLinkItemId, Vec<CouponId>)>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PaymentLinkFilter {
    pub statuses: Vec<PaymentLinkStatus>,
    /// Bounds on `created_at`, inclusive.
    pub from_date: Option<Timestamp>,
    pub to_date: Option<Timestamp>,
    /// Bounds on `amount`, inclusive.
    pub from_price: Option<Decimal>,
    pub to_price: Option<Decimal>,
    /// Links with an item of one of these products.
    pub product_ids: Vec<ProductId>,
    pub consumer_id: Option<ConsumerId>,
}

pub struct PaymentLinkListRequest {
    pub query: ListQuery<PaymentLinkSort>,
    pub filter: PaymentLinkFilter,
}

/// A payment of a link in flight: from the moment its charge is recorded until its outcome is.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkAttempt {
    /// Also the gateway reference and the work item's id.
    pub id: uuid::Uuid,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub link_id: PaymentLinkId,
    /// Who pays: `consumer:<id>`, `phone:<E.164>` or `email:<lower-case>`.
    pub session_key: String,
    /// What the gateway is asked to charge.
    pub amount: Money,
    pub created_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_are_long_random_and_url_safe() {
        let a = new_short_id();
        let b = new_short_id();
        assert_eq!(a.len(), SHORT_ID_LEN);
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'), "{a}");
    }
}
