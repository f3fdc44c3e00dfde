//! Subscriptions: `/subscriptions`, `/subscriptions/{subscription_id}` (get and update), its
//! cancel and uncancel, and its pending plan change.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::subscription::ops::lane;
use billing_core::subscription::plan_change::lane as plan_lane;
use billing_core::subscription::{parse_subscription_list, SubscriptionCancel, SubscriptionCreate, SubscriptionUpdate};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/subscriptions", list, lane::LIST),
    route(Method::POST, "/subscriptions", create, lane::CREATE),
    route(Method::GET, "/subscriptions/{subscription_id}", get, lane::GET),
    route(Method::PUT, "/subscriptions/{subscription_id}", update, plan_lane::UPDATE),
    route(
        Method::DELETE,
        "/subscriptions/{subscription_id}/pending-change",
        cancel_pending_change,
        plan_lane::CANCEL_PENDING,
    ),
    route(Method::POST, "/subscriptions/{subscription_id}/cancel", cancel, lane::CANCEL),
    route(Method::PUT, "/subscriptions/{subscription_id}/uncancel", uncancel, lane::UNCANCEL),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = SubscriptionCreate::parse(r.body()?, s.org.settings.default_currency)?;
    Ok(Reply::Json(b.create_subscription_detailed(s, req)?))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = parse_subscription_list(&r.query)?;
    let page = b.list_subscriptions(s, &req)?;
    let pagination = page.pagination();
    Ok(Reply::page(page.items, pagination))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.subscription_detailed(s, r.id("subscription_id")?)?))
}

fn cancel(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("subscription_id")?;
    let req = SubscriptionCancel::parse(r.body()?)?;
    Ok(Reply::Json(b.cancel_subscription_detailed(s, id, req)?))
}

fn uncancel(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.uncancel_subscription(s, r.id("subscription_id")?)?;
    Ok(Reply::Empty)
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("subscription_id")?;
    let req = SubscriptionUpdate::parse(r.body()?)?;
    Ok(Reply::Json(b.update_subscription_detailed(s, id, &req)?))
}

fn cancel_pending_change(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.cancel_pending_change(s, r.id("subscription_id")?)?;
    Ok(Reply::Empty)
}
