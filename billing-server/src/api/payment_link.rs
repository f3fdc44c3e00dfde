//! Payment links: `/payment_links`, `/payment_links/{payment_link_id}`, its status and coupons.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::{doc, tool, tool_fixed};
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::list::ListResource;
use billing_core::payment_link::ops::lane;
use billing_core::payment_link::view::PaymentLinkResponse;
use billing_core::payment_link::wire::request;
use billing_core::payment_link::{parse_payment_link_list, CouponsChange, PaymentLinkCreate, PaymentLinkDetail, StatusChange};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/payment_links", list, lane::LIST).doc(doc("list_payment_links", "Payment links", "List payment links").query::<request::PaymentLinkListQuery>().ok::<ListResource<PaymentLinkResponse>>().tools(&[tool("list_payment_links", "List payment links, with filters.")])),
    route(Method::POST, "/payment_links", create, lane::CREATE).doc(doc("create_payment_link", "Payment links", "Create a payment link (its url is the hosted checkout)").body::<request::CreatePaymentLinkDto>(r#"{"name": "Gym membership", "currency": "SAR", "items": [{"product_id": "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f91", "quantity": 1}], "max_number_of_payments": 1, "contact_information_type": "PHONE", "success_redirect_url": "https://shop.example.com/paid", "custom_metadata": {"order": "A-1001"}}"#).ok::<PaymentLinkResponse>().tools(&[tool("create_payment_link", "Create a payment link; its `url` is the hosted checkout to send the payer to.")])),
    route(Method::GET, "/payment_links/{payment_link_id}", get, lane::GET).doc(doc("get_payment_link", "Payment links", "One payment link").ok::<PaymentLinkResponse>().tools(&[tool("get_payment_link", "One payment link.")])),
    route(Method::PATCH, "/payment_links/{payment_link_id}/status", update_status, lane::UPDATE_STATUS).doc(doc("update_payment_link_status", "Payment links", "Deactivate or reactivate a link").body::<request::UpdatePaymentLinkStatusDto>(r#"{"status": "INACTIVE", "deactivate_message": "Sold out"}"#).ok::<PaymentLinkResponse>().tools(&[tool_fixed("deactivate_payment_link", r#"{"status":"INACTIVE"}"#, "Deactivate a payment link (it takes no more payments).")])),
    route(Method::PATCH, "/payment_links/{payment_link_id}/coupons", update_coupons, lane::UPDATE_COUPONS).doc(doc("update_payment_link_coupons", "Payment links", "Change a link's coupons").body::<request::UpdatePaymentLinkCouponsDto>(r#"{"coupons": ["0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90"]}"#).ok::<PaymentLinkResponse>()),
];

/// PaymentLinkDetailed of `l`.
fn reply(b: &Billing<Backend>, s: &Scope, l: &PaymentLinkDetail) -> Reply {
    Reply::of(&l.response(b.engine().public_url(), &s.org.settings))
}

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = PaymentLinkCreate::parse(r.body()?, s.org.settings.default_currency)?;
    Ok(reply(b, s, &b.payment_links().create(s, req)?))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = parse_payment_link_list(&r.query)?;
    let page = b.payment_links().list(s, &req)?;
    let data: Vec<_> = page.items.iter().map(|l| l.response(b.engine().public_url(), &s.org.settings)).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(reply(b, s, &b.payment_links().get(s, r.id("payment_link_id")?)?))
}

fn update_status(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("payment_link_id")?;
    let ch = StatusChange::parse(r.body()?)?;
    Ok(reply(b, s, &b.payment_links().update_status(s, id, ch)?))
}

fn update_coupons(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("payment_link_id")?;
    let ch = CouponsChange::parse(r.body()?)?;
    Ok(reply(b, s, &b.payment_links().update_coupons(s, id, ch)?))
}
