//! Consumers: `/consumers`, `/consumers/{consumer_id}`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::consumer::ops::lane;
use billing_core::consumer::{parse_consumer_list, ConsumerFields};
use billing_core::error::Result;
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/consumers", list, lane::LIST),
    route(Method::POST, "/consumers", create, lane::CREATE),
    route(Method::GET, "/consumers/{consumer_id}", get, lane::GET),
    route(Method::PUT, "/consumers/{consumer_id}", update, lane::UPDATE),
    route(Method::DELETE, "/consumers/{consumer_id}", delete, lane::DELETE),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let f = ConsumerFields::parse(r.body()?, true)?;
    Ok(Reply::of(&b.create_consumer(s, f)?.response(&s.branch)))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (q, f) = parse_consumer_list(&r.query)?;
    let page = b.list_consumers(s, &q, &f)?;
    let data: Vec<_> = page.items.iter().map(|c| c.response(&s.branch)).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.get_consumer(s, r.id("consumer_id")?)?.response(&s.branch)))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("consumer_id")?;
    let f = ConsumerFields::parse(r.body()?, false)?;
    Ok(Reply::of(&b.update_consumer(s, id, f)?.response(&s.branch)))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.delete_consumer(s, r.id("consumer_id")?)?;
    Ok(Reply::Empty)
}
