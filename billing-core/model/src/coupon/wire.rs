//! Coupon requests (CouponCreate, CouponUpdate, list parameters): their readers, and their
//! documentation.

use super::{CouponFields, CouponFilter, CouponSort};
use crate::error::Result;
use crate::list::{ListQuery, Query, QueryParams};
use crate::wire::Body;
use serde_json::Value;

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

/// What the requests look like, for `/openapi.json` (the readers above are the truth; the
/// server's tests check that each reads exactly these fields).
pub mod request {
    use super::CouponSort;
    use crate::money::Currency;
    use crate::schema::Amount;
    use schemars::JsonSchema;

    /// CouponCreate: a new coupon in the request's branch.
    #[derive(JsonSchema)]
    pub struct CouponCreate {
        /// The coupon's name (e.g. `RAMADAN10`).
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub name: String,
        /// The discount: a percentage (greater than 0, at most 100, two decimals at most) when
        /// `is_percentage`, else a fixed amount (greater than 0) in `currency`.
        pub discount_value: Amount,
        /// The currency of a fixed-amount discount (required then; ignored for a percentage).
        pub currency: Option<Currency>,
        /// Whether `discount_value` is a percentage (default false: a fixed amount).
        pub is_percentage: Option<bool>,
        /// Whether the coupon can be applied (default true).
        pub is_active: Option<bool>,
    }

    /// CouponUpdate: the fields to change (a field left out is kept; the discount is checked
    /// again as a whole). Refused once a finalized invoice uses the coupon.
    #[derive(JsonSchema)]
    pub struct CouponUpdate {
        /// The coupon's name.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub name: Option<String>,
        /// The discount: a percentage or a fixed amount, as `is_percentage` says.
        pub discount_value: Option<Amount>,
        /// The currency of a fixed-amount discount.
        pub currency: Option<Currency>,
        /// Whether `discount_value` is a percentage.
        pub is_percentage: Option<bool>,
        /// Whether the coupon can be applied.
        pub is_active: Option<bool>,
    }

    crate::list_query! {
        /// Coupons.
        CouponListQuery(CouponSort) {
            /// true: active coupons only; false: inactive ones only.
            active: bool,
            /// true: percentages only; false: fixed amounts only.
            is_percentage: bool,
        }
    }
}
