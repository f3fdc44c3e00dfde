//! What the API answers of a priced line's coupons: CouponCalculationMetadataDto, the chain of
//! coupons applied to an amount, in order (shared by invoices, payment links and subscriptions).

use super::CouponLine;
use crate::ids::CouponId;
use crate::money::{Currency, Money};
use schemars::JsonSchema;
use serde::Serialize;

/// CouponCalculationMetadataDto: the coupons applied to an amount, in the order they applied.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "CouponCalculationMetadataDto")]
pub struct CouponCalculation<'a> {
    /// One entry per coupon, in order: each takes off the amount the previous one left.
    pub coupons: Vec<CouponApplied<'a>>,
}

/// CouponMetadataDto: one coupon's effect in a chain.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "CouponMetadataDto")]
pub struct CouponApplied<'a> {
    /// The coupon's id.
    #[schemars(with = "String")]
    pub coupon_id: CouponId,
    /// The coupon's name when it was applied.
    pub name: &'a str,
    /// Whether `discount_value` is a percentage (otherwise an amount in `currency`).
    pub is_percentage: bool,
    /// The coupon's discount as the coupon shows it (`"10.00"`: a percentage or an amount).
    pub discount_value: &'a str,
    /// The currency of a fixed-amount coupon; `null` for a percentage.
    #[schemars(with = "Option<String>")]
    pub currency: Option<Currency>,
    /// The coupon's place in the chain, from 1.
    #[schemars(with = "crate::schema::Integer")]
    pub order: u32,
    /// The amount the coupon applied to (a decimal string in the line's currency).
    #[schemars(with = "String")]
    pub amount_before_discount: Money,
    /// What the coupon took off (never more than `amount_before_discount`).
    #[schemars(with = "String")]
    pub discount_amount: Money,
    /// What was left after the coupon.
    #[schemars(with = "String")]
    pub amount_after_discount: Money,
}

impl CouponLine {
    /// CouponMetadataDto.
    pub fn view(&self) -> CouponApplied<'_> {
        CouponApplied {
            coupon_id: self.coupon_id,
            name: &self.name,
            is_percentage: self.is_percentage,
            discount_value: &self.discount_value,
            currency: self.currency,
            order: self.order,
            amount_before_discount: self.before,
            discount_amount: self.discount,
            amount_after_discount: self.after,
        }
    }
}

/// CouponCalculationMetadataDto of a chain of coupon lines.
pub fn coupon_calculation(lines: &[CouponLine]) -> CouponCalculation<'_> {
    CouponCalculation {
        coupons: lines.iter().map(CouponLine::view).collect(),
    }
}
