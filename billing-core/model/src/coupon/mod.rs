//! Coupons: a percentage (0 < v ≤ 100) or a fixed amount (> 0, in a currency).
//!
//! - [`ops`]: create, get, list, update, delete.
//! - [`store`]: the [`CouponTx`] slice of the store contract.
//! - [`wire`]: request parsing and the requests' documentation.
//! - [`view`]: the CouponDto and CouponDetailed views.

pub mod store;
pub mod view;
pub mod wire;

pub use store::CouponTx;
pub use view::{CouponDetailedView, CouponView};
pub use wire::parse_coupon_list;

use crate::clock::Timestamp;
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::{BranchId, CouponId, OrgId};
use crate::money::{Currency, Money};
use crate::wire_enum;
use rust_decimal::Decimal;

wire_enum!(CouponSort { CreatedAt = "created_at", UpdatedAt = "updated_at", Name = "name", DiscountValue = "discount_value" });

/// What a coupon takes off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discount {
    /// Percent of the amount, 0 < p ≤ 100.
    Percentage(Decimal),
    Fixed(Money),
}

impl Discount {
    pub fn is_percentage(&self) -> bool {
        matches!(self, Discount::Percentage(_))
    }
    pub fn value(&self) -> Decimal {
        match self {
            Discount::Percentage(p) => *p,
            Discount::Fixed(m) => m.amount(),
        }
    }
    pub fn currency(&self) -> Option<Currency> {
        match self {
            Discount::Percentage(_) => None,
            Discount::Fixed(m) => Some(m.currency()),
        }
    }
    /// The stored form: whether it is a percentage, its value in thousandths
    /// ([`crate::money::STORED_SCALE`]) and the currency of a fixed amount.
    pub fn to_stored(&self) -> std::result::Result<(bool, i64, Option<Currency>), crate::error::StoreError> {
        Ok((self.is_percentage(), crate::money::stored(self.value())?, self.currency()))
    }

    /// Back from [`Self::to_stored`]; `None` for a fixed amount without a currency. Percentages
    /// come back normalized (`12.5`, not `12.500`), as [`discount`] makes them.
    pub fn from_stored(is_percentage: bool, value: i64, currency: Option<Currency>) -> Option<Self> {
        let value = crate::money::from_stored(value);
        match (is_percentage, currency) {
            (true, _) => Some(Discount::Percentage(value.normalize())),
            (false, Some(c)) => Some(Discount::Fixed(Money::new(value, c))),
            (false, None) => None,
        }
    }

    /// The value as the API shows it: a fixed amount with its currency's digits, a percentage
    /// with two.
    pub fn display_value(&self) -> String {
        match self {
            Discount::Percentage(p) => {
                let mut p = *p;
                p.rescale(p.scale().max(2));
                p.to_string()
            }
            Discount::Fixed(m) => m.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Coupon {
    pub id: CouponId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub name: String,
    pub discount: Discount,
    pub is_active: bool,
    pub used_in_finalized_invoice: bool,
    /// How many invoices redeemed it.
    pub redemptions: u64,
    pub is_deleted: bool,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

/// CouponCreate / CouponUpdate. On update the discount is re-validated as a whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CouponFields {
    pub name: Option<String>,
    pub discount_value: Option<Decimal>,
    pub currency: Option<Currency>,
    pub is_percentage: Option<bool>,
    pub is_active: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct CouponFilter {
    pub active: Option<bool>,
    pub is_percentage: Option<bool>,
}

/// Builds a valid discount or the 422 that says why not.
pub fn discount(value: Decimal, is_percentage: bool, currency: Option<Currency>) -> Result<Discount> {
    let bad = |kind: &str, field: &str, msg: &str| Error::invalid(FieldError::body(kind, field, msg));
    if is_percentage {
        if value <= Decimal::ZERO || value > Decimal::ONE_HUNDRED {
            return Err(bad(
                "value_error",
                "discount_value",
                "Value error, a percentage must be greater than 0 and at most 100",
            ));
        }
        if value.scale() > 2 && value.normalize().scale() > 2 {
            return Err(bad(
                "decimal_max_places",
                "discount_value",
                "Decimal input should have no more than 2 decimal places",
            ));
        }
        Ok(Discount::Percentage(value.normalize()))
    } else {
        let c = currency.ok_or_else(|| bad("missing", "currency", "Field required for a fixed-amount coupon"))?;
        if value <= Decimal::ZERO {
            return Err(bad("greater_than", "discount_value", "Input should be greater than 0"));
        }
        let m = Money::checked(value, c).map_err(|e| {
            let (kind, msg) = crate::wire::amount_problem(e, c);
            bad(kind, "discount_value", &msg)
        })?;
        Ok(Discount::Fixed(m))
    }
}

pub fn check_not_frozen(c: &Coupon) -> Result<()> {
    if c.used_in_finalized_invoice {
        return Err(Error::rule(
            Code::COUPON_USED_IN_FINALIZED_INVOICE,
            format!("Coupon '{}' is used by a finalized invoice", c.id),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discount_rules() {
        let d = |s: &str| s.parse::<Decimal>().unwrap();
        assert!(discount(d("0"), true, None).is_err());
        assert!(discount(d("100"), true, None).is_ok());
        assert!(discount(d("100.01"), true, None).is_err());
        assert!(discount(d("10"), false, None).is_err());
        assert!(discount(d("-1"), false, Some(Currency::SAR)).is_err());
        assert!(discount(d("1.001"), false, Some(Currency::SAR)).is_err());
        assert!(discount(d("1000000000001"), false, Some(Currency::SAR)).is_err());
        assert_eq!(discount(d("5"), false, Some(Currency::KWD)).unwrap().display_value(), "5.000");
        assert_eq!(discount(d("12.5"), true, None).unwrap().display_value(), "12.50");
    }
}
