//! Payment links: `/payment_links`, `/payment_links/{payment_link_id}`, its status and coupons.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::payment_link::ops::lane;
use billing_core::payment_link::{parse_payment_link_list, CouponsChange, PaymentLinkCreate, StatusChange};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/payment_links", list, lane::LIST),
    route(Method::POST, "/payment_links", create, lane::CREATE),
    route(Method::GET, "/payment_links/{payment_link_id}", get, lane::GET),
    route(Method::PATCH, "/payment_links/{payment_link_id}/status", update_status, lane::UPDATE_STATUS),
    route(Method::PATCH, "/payment_links/{payment_link_id}/coupons", update_coupons, lane::UPDATE_COUPONS),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = PaymentLinkCreate::parse(r.body()?, s.org.settings.default_currency)?;
    Ok(Reply::Json(b.create_payment_link_detailed(s, req)?))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = parse_payment_link_list(&r.query)?;
    let page = b.list_payment_links(s, &req)?;
    let pagination = page.pagination();
    Ok(Reply::page(page.items, pagination))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.payment_link_detailed(s, r.id("payment_link_id")?)?))
}

fn update_status(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("payment_link_id")?;
    let ch = StatusChange::parse(r.body()?)?;
    Ok(Reply::Json(b.update_payment_link_status_detailed(s, id, ch)?))
}

fn update_coupons(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("payment_link_id")?;
    let ch = CouponsChange::parse(r.body()?)?;
    Ok(Reply::Json(b.update_payment_link_coupons_detailed(s, id, ch)?))
}
