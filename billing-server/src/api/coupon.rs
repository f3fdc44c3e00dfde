//! Coupons: `/coupons`, `/coupons/{coupon_id}`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::{doc, tool, tool_fixed};
use crate::openapi::queries;
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::coupon::ops::lane;
use billing_core::coupon::{parse_coupon_list, CouponFields};
use billing_core::error::Result;
use billing_core::Billing;
use hyper::Method;
use serde_json::Value;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/coupons", list, lane::LIST).doc(
        doc("list_coupons", "Coupons", "List coupons")
            .query::<queries::CouponListQuery>()
            .ok::<wire::ListResourceCouponDetailed>()
            .tools(&[tool("list_coupons", "List coupons, with filters.")]),
    ),
    route(Method::POST, "/coupons", create, lane::CREATE).doc(
        doc("create_coupon", "Coupons", "Create a coupon")
            .body::<wire::CouponCreate>(r#"{"name": "RAMADAN10", "discount_value": "10", "is_percentage": true}"#)
            .ok::<wire::CouponDto>()
            .tools(&[tool("create_coupon", "Create a coupon (a percentage or a fixed amount).")]),
    ),
    route(Method::GET, "/coupons/{coupon_id}", get, lane::GET).doc(
        doc("get_coupon", "Coupons", "One coupon with its redemptions")
            .ok::<wire::CouponDetailed>()
            .tools(&[tool("get_coupon", "One coupon with its redemptions.")]),
    ),
    route(Method::PUT, "/coupons/{coupon_id}", update, lane::UPDATE).doc(
        doc("update_coupon", "Coupons", "Change a coupon's given fields")
            .body::<wire::CouponUpdate>(r#"{"is_active": false}"#)
            .ok::<wire::CouponDto>()
            .tools(&[tool_fixed("deactivate_coupon", r#"{"is_active":false}"#, "Deactivate a coupon.")]),
    ),
    route(Method::DELETE, "/coupons/{coupon_id}", delete, lane::DELETE).doc(doc("delete_coupon", "Coupons", "Delete a coupon").ok::<wire::Empty>()),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.create_coupon(s, CouponFields::parse(r.body()?, true)?)?.to_json()))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (q, f) = parse_coupon_list(&r.query)?;
    let page = b.list_coupons(s, &q, &f)?;
    let data: Vec<Value> = page.items.iter().map(|c| c.to_detailed_json()).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.get_coupon(s, r.id("coupon_id")?)?.to_detailed_json()))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("coupon_id")?;
    Ok(Reply::Json(b.update_coupon(s, id, CouponFields::parse(r.body()?, false)?)?.to_json()))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.delete_coupon(s, r.id("coupon_id")?)?;
    Ok(Reply::Empty)
}
