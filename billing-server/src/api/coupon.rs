//! Coupons: `/coupons`, `/coupons/{coupon_id}`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::{doc, tool, tool_fixed};
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::coupon::ops::lane;
use billing_core::coupon::wire::request;
use billing_core::coupon::{parse_coupon_list, CouponDetailedView, CouponFields, CouponView};
use billing_core::error::Result;
use billing_core::list::ListResource;
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/coupons", list, lane::LIST).doc(
        doc("list_coupons", "Coupons", "List coupons")
            .query::<request::CouponListQuery>()
            .ok::<ListResource<CouponDetailedView>>()
            .tools(&[tool("list_coupons", "List coupons, with filters.")]),
    ),
    route(Method::POST, "/coupons", create, lane::CREATE).doc(
        doc("create_coupon", "Coupons", "Create a coupon")
            .body::<request::CouponCreate>(r#"{"name": "RAMADAN10", "discount_value": "10", "is_percentage": true}"#)
            .ok::<CouponView>()
            .tools(&[tool("create_coupon", "Create a coupon (a percentage or a fixed amount).")]),
    ),
    route(Method::GET, "/coupons/{coupon_id}", get, lane::GET).doc(
        doc("get_coupon", "Coupons", "One coupon with its redemptions")
            .ok::<CouponDetailedView>()
            .tools(&[tool("get_coupon", "One coupon with its redemptions.")]),
    ),
    route(Method::PUT, "/coupons/{coupon_id}", update, lane::UPDATE).doc(
        doc("update_coupon", "Coupons", "Change a coupon's given fields")
            .body::<request::CouponUpdate>(r#"{"is_active": false}"#)
            .ok::<CouponView>()
            .tools(&[tool_fixed("deactivate_coupon", r#"{"is_active":false}"#, "Deactivate a coupon.")]),
    ),
    route(Method::DELETE, "/coupons/{coupon_id}", delete, lane::DELETE).doc(doc("delete_coupon", "Coupons", "Delete a coupon").ok::<wire::Empty>()),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.coupons().create(s, CouponFields::parse(r.body()?, true)?)?.view()))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (q, f) = parse_coupon_list(&r.query)?;
    let page = b.coupons().list(s, &q, &f)?;
    let data: Vec<_> = page.items.iter().map(|c| c.detailed()).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.coupons().get(s, r.id("coupon_id")?)?.detailed()))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("coupon_id")?;
    Ok(Reply::of(&b.coupons().update(s, id, CouponFields::parse(r.body()?, false)?)?.view()))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.coupons().delete(s, r.id("coupon_id")?)?;
    Ok(Reply::Empty)
}
