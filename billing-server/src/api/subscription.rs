//! Subscriptions: `/subscriptions`, `/subscriptions/{subscription_id}` (get and update), its
//! cancel and uncancel, and its pending plan change.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::{doc, tool};
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::list::ListResource;
use billing_core::subscription::ops::lane;
use billing_core::subscription::plan_change::lane as plan_lane;
use billing_core::subscription::plan_change::wire::request as plan_request;
use billing_core::subscription::view::{SubscriptionDetailed, ViewContext};
use billing_core::subscription::wire::request;
use billing_core::subscription::{parse_subscription_list, SubscriptionCancel, SubscriptionCreate, SubscriptionUpdate};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/subscriptions", list, lane::LIST).doc(doc("list_subscriptions", "Subscriptions", "List subscriptions").query::<request::SubscriptionListQuery>().ok::<ListResource<SubscriptionDetailed>>().tools(&[tool("list_subscriptions", "List subscriptions, with filters.")])),
    route(Method::POST, "/subscriptions", create, lane::CREATE).doc(doc("create_subscription", "Subscriptions", "Create a subscription (its first invoice is issued at once)").body::<request::SubscriptionCreate>(r#"{"organization_consumer_id": "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90", "items": [{"product_id": "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f91", "quantity": 1}], "period_start": "2026-01-01T00:00:00Z", "currency": "SAR", "description": "Monthly plan"}"#).ok::<SubscriptionDetailed>().tools(&[tool("create_subscription", "Create a subscription (its first invoice is issued at once).")])),
    route(Method::GET, "/subscriptions/{subscription_id}", get, lane::GET).doc(doc("get_subscription", "Subscriptions", "One subscription").ok::<SubscriptionDetailed>().tools(&[tool("get_subscription", "One subscription.")])),
    route(Method::PUT, "/subscriptions/{subscription_id}", update, plan_lane::UPDATE).doc(doc("update_subscription", "Subscriptions", "Change a subscription (plan changes apply at the period end)").body::<plan_request::SubscriptionUpdate>(r#"{"description": "Monthly plan (family)", "items": [{"product_id": "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f91", "quantity": 2}], "coupons": []}"#).ok::<SubscriptionDetailed>().tools(&[tool("update_subscription", "Change a subscription (items, coupons and interval apply at the period end).")])),
    route(Method::DELETE, "/subscriptions/{subscription_id}/pending-change",
        cancel_pending_change,
        plan_lane::CANCEL_PENDING,
    ).doc(doc("cancel_subscription_pending_change", "Subscriptions", "Withdraw the pending plan change").ok::<wire::Empty>()),
    route(Method::POST, "/subscriptions/{subscription_id}/cancel", cancel, lane::CANCEL).doc(doc("cancel_subscription", "Subscriptions", "Cancel (ACTIVE: at the period end)").body::<request::SubscriptionCancel>(r#"{"cancel_related_invoices": false}"#).ok::<SubscriptionDetailed>().tools(&[tool("cancel_subscription", "Cancel a subscription (an ACTIVE one at its period end).")])),
    route(Method::PUT, "/subscriptions/{subscription_id}/uncancel", uncancel, lane::UNCANCEL).doc(doc("uncancel_subscription", "Subscriptions", "Withdraw a scheduled cancellation").ok::<wire::Empty>().tools(&[tool("uncancel_subscription", "Withdraw a scheduled cancellation.")])),
];

/// Where a subscription's response is shown (the request's organization and branch).
fn cx<'a>(b: &'a Billing<Backend>, s: &'a Scope) -> ViewContext<'a> {
    ViewContext {
        settings: &s.org.settings,
        branch_name: &s.branch.name,
        public_url: b.engine().public_url(),
    }
}

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = SubscriptionCreate::parse(r.body()?, s.org.settings.default_currency)?;
    Ok(Reply::of(&b.subscriptions().create(s, req)?.response(cx(b, s))))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = parse_subscription_list(&r.query)?;
    let page = b.subscriptions().list(s, &req)?;
    let data: Vec<_> = page.items.iter().map(|d| d.response(cx(b, s))).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.subscriptions().get(s, r.id("subscription_id")?)?.response(cx(b, s))))
}

fn cancel(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("subscription_id")?;
    let req = SubscriptionCancel::parse(r.body()?)?;
    Ok(Reply::of(&b.subscriptions().cancel(s, id, req)?.response(cx(b, s))))
}

fn uncancel(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.subscriptions().uncancel(s, r.id("subscription_id")?)?;
    Ok(Reply::Empty)
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("subscription_id")?;
    let req = SubscriptionUpdate::parse(r.body()?)?;
    Ok(Reply::of(&b.subscriptions().update(s, id, &req)?.response(cx(b, s))))
}

fn cancel_pending_change(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.subscriptions().cancel_pending_change(s, r.id("subscription_id")?)?;
    Ok(Reply::Empty)
}
