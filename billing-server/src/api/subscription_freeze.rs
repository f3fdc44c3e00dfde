//! Freeze periods of a subscription: `/subscriptions/{subscription_id}/freeze` and
//! `/subscriptions/{subscription_id}/freeze/{freeze_id}`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::subscription::freeze::{lane, parse_freeze_list};
use billing_core::subscription::FreezeRequest;
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::POST, "/subscriptions/{subscription_id}/freeze", create, lane::CREATE),
    route(Method::GET, "/subscriptions/{subscription_id}/freeze", list, lane::LIST),
    route(Method::PUT, "/subscriptions/{subscription_id}/freeze/{freeze_id}", update, lane::UPDATE),
    route(Method::DELETE, "/subscriptions/{subscription_id}/freeze/{freeze_id}", delete, lane::DELETE),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("subscription_id")?;
    let req = FreezeRequest::parse_create(r.body()?)?;
    Ok(Reply::Json(b.create_freeze(s, id, req)?.to_json()))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("subscription_id")?;
    let q = parse_freeze_list(&r.query)?;
    let page = b.list_freezes(s, id, &q)?;
    let pagination = page.pagination();
    Ok(Reply::page(page.items.iter().map(|f| f.to_json()).collect(), pagination))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("subscription_id")?;
    let freeze = r.id("freeze_id")?;
    let req = FreezeRequest::parse_update(r.body()?)?;
    Ok(Reply::Json(b.update_freeze(s, id, freeze, req)?.to_json()))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.delete_freeze(s, r.id("subscription_id")?, r.id("freeze_id")?)?;
    Ok(Reply::Empty)
}
