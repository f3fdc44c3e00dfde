//! Freeze periods of a subscription: `/subscriptions/{subscription_id}/freeze` and
//! `/subscriptions/{subscription_id}/freeze/{freeze_id}`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::{doc, tool};
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::list::ListResource;
use billing_core::subscription::freeze::{lane, parse_freeze_list, request};
use billing_core::subscription::view::FreezeSubscriptionBase;
use billing_core::subscription::{Freeze, FreezeRequest};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::POST, "/subscriptions/{subscription_id}/freeze", create, lane::CREATE).doc(
        doc("freeze_subscription", "Subscriptions", "Freeze a subscription for a period")
            .body::<request::FreezeSubscriptionCreateRequest>(
                r#"{"freeze_start_datetime": "2026-03-01T00:00:00Z", "freeze_end_datetime": "2026-04-01T00:00:00Z", "notes": "travelling"}"#,
            )
            .ok::<FreezeSubscriptionBase>()
            .tools(&[tool("freeze_subscription", "Freeze a subscription for a period (no invoices during it).")]),
    ),
    route(Method::GET, "/subscriptions/{subscription_id}/freeze", list, lane::LIST).doc(
        doc("list_subscription_freezes", "Subscriptions", "A subscription's freeze periods")
            .query::<request::FreezeListQuery>()
            .ok::<ListResource<FreezeSubscriptionBase>>(),
    ),
    route(Method::PUT, "/subscriptions/{subscription_id}/freeze/{freeze_id}", update, lane::UPDATE).doc(
        doc("update_subscription_freeze", "Subscriptions", "New dates for a freeze")
            .body::<request::FreezeSubscriptionUpdateRequest>(r#"{"freeze_start_datetime": "2026-03-01T00:00:00Z", "freeze_end_datetime": null}"#)
            .ok::<FreezeSubscriptionBase>(),
    ),
    route(Method::DELETE, "/subscriptions/{subscription_id}/freeze/{freeze_id}", delete, lane::DELETE)
        .doc(doc("delete_subscription_freeze", "Subscriptions", "Drop a freeze (one in force ends now)").ok::<wire::Empty>()),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("subscription_id")?;
    let req = FreezeRequest::parse_create(r.body()?)?;
    Ok(Reply::of(&b.freezes().create(s, id, req)?.view()))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("subscription_id")?;
    let q = parse_freeze_list(&r.query)?;
    let page = b.freezes().list(s, id, &q)?;
    Ok(Reply::page(page.items.iter().map(Freeze::view).collect(), page.pagination()))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("subscription_id")?;
    let freeze = r.id("freeze_id")?;
    let req = FreezeRequest::parse_update(r.body()?)?;
    Ok(Reply::of(&b.freezes().update(s, id, freeze, req)?.view()))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.freezes().delete(s, r.id("subscription_id")?, r.id("freeze_id")?)?;
    Ok(Reply::Empty)
}
