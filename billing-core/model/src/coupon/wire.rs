//! Coupon requests (CouponCreate, CouponUpdate, list parameters) and the CouponDto and
//! CouponDetailed views.

use super::{Coupon, CouponFields, CouponFilter, CouponSort};
use crate::clock::format_rfc3339;
use crate::error::Result;
use crate::list::{ListQuery, Query, QueryParams};
use crate::wire::Body;
use serde_json::{json, Value};

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
