//! Coupons: a percentage (0 < v ≤ 100) or a fixed amount (> 0, in a currency).

use crate::auth::Scope;
use crate::clock::{format_rfc3339, Timestamp};
use crate::engine::Billing;
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::{BranchId, CouponId, OrgId};
use crate::list::{ListQuery, Page, Query, QueryParams};
use crate::money::{Currency, Money};
use crate::store::Store;
use crate::wire::Body;
use crate::wire_enum;
use rust_decimal::Decimal;
use serde_json::{json, Value};

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

impl Coupon {
    /// CouponDto.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "discount_value": self.discount.display_value(),
            "currency": self.discount.currency(),
            "is_percentage": self.discount.is_percentage(),
            "is_active": self.is_active,
            "created_at": format_rfc3339(&self.created_at),
            "updated_at": self.updated_at.as_ref().map(format_rfc3339),
        })
    }

    /// CouponDetailed: the DTO plus the redemption count.
    pub fn to_detailed_json(&self) -> Value {
        let mut v = self.to_json();
        v["redemptions"] = json!(self.redemptions);
        v["is_used_in_finalized_invoice"] = json!(self.used_in_finalized_invoice);
        v
    }
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

impl CouponFields {
    pub fn parse(v: &Value, create: bool) -> Result<Self> {
        let mut b = Body::new(v);
        let f = CouponFields {
            name: if create { b.req_text("name", 255) } else { b.opt_text("name", 255) },
            discount_value: if create {
                b.req_decimal("discount_value")
            } else {
                b.opt_decimal("discount_value")
            },
            currency: b.opt_currency("currency"),
            is_percentage: b.opt_bool("is_percentage"),
            is_active: b.opt_bool("is_active"),
        };
        b.finish()?;
        Ok(f)
    }
}

/// Builds a valid discount or the 422 that says why not.
fn discount(value: Decimal, is_percentage: bool, currency: Option<Currency>) -> Result<Discount> {
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

fn check_not_frozen(c: &Coupon) -> Result<()> {
    if c.used_in_finalized_invoice {
        return Err(Error::rule(
            Code::COUPON_USED_IN_FINALIZED_INVOICE,
            format!("Coupon '{}' is used by a finalized invoice", c.id),
        ));
    }
    Ok(())
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct CouponFilter {
    pub active: Option<bool>,
    pub is_percentage: Option<bool>,
}

pub fn parse_coupon_list(params: &QueryParams) -> Result<(ListQuery<CouponSort>, CouponFilter)> {
    let mut q = Query::new(params);
    let list = q.list(CouponSort::CreatedAt, CouponSort::parse, &CouponSort::expected());
    let filter = CouponFilter {
        active: q.bool("active"),
        is_percentage: q.bool("is_percentage"),
    };
    q.finish()?;
    Ok((list, filter))
}

impl<S: Store> Billing<S> {
    pub fn create_coupon(&self, scope: &Scope, f: CouponFields) -> Result<Coupon> {
        let now = self.now(scope);
        let value = f
            .discount_value
            .ok_or_else(|| Error::invalid(FieldError::body("missing", "discount_value", "Field required")))?;
        let c = Coupon {
            id: CouponId::new(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            name: f.name.ok_or_else(|| Error::invalid(FieldError::body("missing", "name", "Field required")))?,
            discount: discount(value, f.is_percentage.unwrap_or(false), f.currency)?,
            is_active: f.is_active.unwrap_or(true),
            used_in_finalized_invoice: false,
            redemptions: 0,
            is_deleted: false,
            created_at: now,
            updated_at: None,
        };
        self.store.write(|tx| {
            tx.insert_coupon(&c)?;
            Ok(c.clone())
        })
    }

    pub fn get_coupon(&self, scope: &Scope, id: CouponId) -> Result<Coupon> {
        self.store
            .read(|tx| Ok(tx.coupon(scope.branch_id(), id)?))?
            .ok_or_else(|| Error::not_found("Coupon", id))
    }

    pub fn list_coupons(&self, scope: &Scope, q: &ListQuery<CouponSort>, f: &CouponFilter) -> Result<Page<Coupon>> {
        self.store.read(|tx| Ok(tx.list_coupons(scope.branch_id(), q, f)?))
    }

    pub fn update_coupon(&self, scope: &Scope, id: CouponId, f: CouponFields) -> Result<Coupon> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut c = tx.coupon(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Coupon", id))?;
            check_not_frozen(&c)?;
            if let Some(n) = &f.name {
                c.name = n.clone();
            }
            if f.discount_value.is_some() || f.is_percentage.is_some() || f.currency.is_some() {
                let value = f.discount_value.unwrap_or(c.discount.value());
                let pct = f.is_percentage.unwrap_or(c.discount.is_percentage());
                let cur = f.currency.or(c.discount.currency());
                c.discount = discount(value, pct, cur)?;
            }
            if let Some(a) = f.is_active {
                c.is_active = a;
            }
            c.updated_at = Some(now);
            tx.update_coupon(&c)?;
            Ok(c)
        })
    }

    pub fn delete_coupon(&self, scope: &Scope, id: CouponId) -> Result<()> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut c = tx.coupon(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Coupon", id))?;
            // Like products: what a finalised invoice used stays as it was.
            check_not_frozen(&c)?;
            c.is_deleted = true;
            c.updated_at = Some(now);
            tx.update_coupon(&c)?;
            Ok(())
        })
    }
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
