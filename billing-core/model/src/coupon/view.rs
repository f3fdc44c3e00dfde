//! What the API answers of a coupon: CouponDto (create, update, and inside payment links) and
//! CouponDetailed (get, list: with its redemptions), borrowed from the coupon.

use super::Coupon;
use crate::clock::Timestamp;
use crate::ids::CouponId;
use crate::money::Currency;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// CouponDto: a coupon, a percentage or a fixed amount taken off what it applies to.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "CouponDto")]
pub struct CouponView<'a> {
    /// When the coupon was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the coupon was last changed; `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
    /// The coupon's id.
    pub id: CouponId,
    /// The coupon's name (what the merchant and the payer see, e.g. `RAMADAN10`).
    pub name: &'a str,
    /// The discount as a decimal string: a percentage with two decimals (`"12.50"` is 12.5 %),
    /// or a fixed amount with the currency's minor digits (`"5.000"` KWD).
    #[schemars(with = "String")]
    pub discount_value: String,
    /// The currency of a fixed-amount discount; `null` for a percentage.
    pub currency: Option<Currency>,
    /// Whether `discount_value` is a percentage (else a fixed amount in `currency`).
    pub is_percentage: bool,
    /// Whether the coupon can be applied to new invoices, links and subscriptions.
    pub is_active: bool,
}

/// CouponDetailed: a coupon with how often it was redeemed.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "CouponDetailed")]
pub struct CouponDetailedView<'a> {
    /// When the coupon was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the coupon was last changed; `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
    /// The coupon's id.
    pub id: CouponId,
    /// The coupon's name (what the merchant and the payer see, e.g. `RAMADAN10`).
    pub name: &'a str,
    /// The discount as a decimal string: a percentage with two decimals (`"12.50"` is 12.5 %),
    /// or a fixed amount with the currency's minor digits (`"5.000"` KWD).
    #[schemars(with = "String")]
    pub discount_value: String,
    /// The currency of a fixed-amount discount; `null` for a percentage.
    pub currency: Option<Currency>,
    /// Whether `discount_value` is a percentage (else a fixed amount in `currency`).
    pub is_percentage: bool,
    /// Whether the coupon can be applied to new invoices, links and subscriptions.
    pub is_active: bool,
    /// How many invoices redeemed the coupon.
    #[schemars(with = "crate::schema::Integer")]
    pub redemptions: u64,
    /// Whether a finalized invoice uses the coupon: from then on it cannot be changed or
    /// deleted.
    pub is_used_in_finalized_invoice: bool,
}

impl Coupon {
    /// CouponDto, borrowed from the coupon.
    pub fn view(&self) -> CouponView<'_> {
        CouponView {
            created_at: self.created_at,
            updated_at: self.updated_at,
            id: self.id,
            name: &self.name,
            discount_value: self.discount.display_value(),
            currency: self.discount.currency(),
            is_percentage: self.discount.is_percentage(),
            is_active: self.is_active,
        }
    }

    /// CouponDetailed, borrowed from the coupon.
    pub fn detailed(&self) -> CouponDetailedView<'_> {
        CouponDetailedView {
            created_at: self.created_at,
            updated_at: self.updated_at,
            id: self.id,
            name: &self.name,
            discount_value: self.discount.display_value(),
            currency: self.discount.currency(),
            is_percentage: self.discount.is_percentage(),
            is_active: self.is_active,
            redemptions: self.redemptions,
            is_used_in_finalized_invoice: self.used_in_finalized_invoice,
        }
    }

    /// CouponDto as a JSON value (for the views still built as values, which embed it).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.view()).expect("serializable")
    }
}
