//! Consumers: `/consumers`, `/consumers/{consumer_id}`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::{doc, tool};
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::consumer::ops::lane;
use billing_core::consumer::wire::request;
use billing_core::consumer::{parse_consumer_list, ConsumerFields, ConsumerResponse};
use billing_core::error::Result;
use billing_core::list::ListResource;
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/consumers", list, lane::LIST).doc(doc("list_customers", "Consumers", "List consumers").query::<request::ConsumerListQuery>().ok::<ListResource<ConsumerResponse>>().tools(&[tool("list_customers", "List customers, with search and filters.")])),
    route(Method::POST, "/consumers", create, lane::CREATE).doc(doc("create_customer", "Consumers", "Create a consumer").body::<request::ConsumerCreate>(r#"{"name": "Sara Ali", "phone_number": "+966501234567", "email": "sara@example.com", "preferred_language": "ar", "communication_methods": ["EMAIL", "SMS"], "external_metadata": {"crm_id": "42"}}"#).ok::<ConsumerResponse>().tools(&[tool("create_customer", "Create a customer (a consumer of the organization).")])),
    route(Method::GET, "/consumers/{consumer_id}", get, lane::GET).doc(doc("get_customer", "Consumers", "One consumer").ok::<ConsumerResponse>().tools(&[tool("get_customer", "One customer.")])),
    route(Method::PUT, "/consumers/{consumer_id}", update, lane::UPDATE).doc(doc("update_customer", "Consumers", "Change a consumer's given fields").body::<request::ConsumerUpdate>(r#"{"email": "sara.ali@example.com", "alias": "Sara"}"#).ok::<ConsumerResponse>().tools(&[tool("update_customer", "Change a customer's given fields.")])),
    route(Method::DELETE, "/consumers/{consumer_id}", delete, lane::DELETE).doc(doc("delete_customer", "Consumers", "Delete a consumer (soft)").ok::<wire::Empty>().tools(&[tool("delete_customer", "Delete a customer (soft; refused while it has open invoices, subscriptions or active links).")])),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let f = ConsumerFields::parse(r.body()?, true)?;
    Ok(Reply::of(&b.consumers().create(s, f)?.response(&s.branch)))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (q, f) = parse_consumer_list(&r.query)?;
    let page = b.consumers().list(s, &q, &f)?;
    let data: Vec<_> = page.items.iter().map(|c| c.response(&s.branch)).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.consumers().get(s, r.id("consumer_id")?)?.response(&s.branch)))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("consumer_id")?;
    let f = ConsumerFields::parse(r.body()?, false)?;
    Ok(Reply::of(&b.consumers().update(s, id, f)?.response(&s.branch)))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.consumers().delete(s, r.id("consumer_id")?)?;
    Ok(Reply::Empty)
}
