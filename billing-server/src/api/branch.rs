//! Branches: `/branch`, `/branch/{branch_id}`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::doc;
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::branch::ops::lane;
use billing_core::branch::wire::request;
use billing_core::branch::{parse_branch_name, BranchItem, BranchListResponse};
use billing_core::error::Result;
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/branch", list, lane::LIST).doc(doc("list_branches", "Branches", "The branches the caller can use").ok::<BranchListResponse>()),
    route(Method::POST, "/branch", create, lane::CREATE).doc(
        doc("create_branch", "Branches", "Create a branch (an existing name returns that branch)")
            .body::<request::CreateBranchRequest>(r#"{"name": "Jeddah"}"#)
            .ok::<BranchItem>(),
    ),
    route(Method::GET, "/branch/{branch_id}", get, lane::GET).doc(doc("get_branch", "Branches", "One branch").ok::<BranchItem>()),
    route(Method::PUT, "/branch/{branch_id}", update, lane::UPDATE).doc(
        doc("update_branch", "Branches", "Rename a branch")
            .body::<request::UpdateBranchRequest>(r#"{"name": "Jeddah North"}"#)
            .ok::<BranchItem>(),
    ),
    route(Method::DELETE, "/branch/{branch_id}", delete, lane::DELETE)
        .doc(doc("delete_branch", "Branches", "Delete a branch that nothing holds").ok::<wire::Empty>()),
];

fn list(b: &Billing<Backend>, s: &Scope, _: Request) -> Result<Reply> {
    let branches = b.branches().list(s)?;
    Ok(Reply::of(&BranchListResponse::of(&branches)))
}

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.branches().create(s, parse_branch_name(r.body()?)?)?.item()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.branches().get(s, r.id("branch_id")?)?.item()))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("branch_id")?;
    Ok(Reply::of(&b.branches().update(s, id, parse_branch_name(r.body()?)?)?.item()))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.branches().delete(s, r.id("branch_id")?)?;
    Ok(Reply::Empty)
}
