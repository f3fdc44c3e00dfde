//! Branches: `/branch`, `/branch/{branch_id}`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::doc;
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::branch::ops::lane;
use billing_core::branch::parse_branch_name;
use billing_core::error::Result;
use billing_core::Billing;
use hyper::Method;
use serde_json::json;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/branch", list, lane::LIST).doc(doc("list_branches", "Branches", "The branches the caller can use").ok::<wire::BranchListResponse>()),
    route(Method::POST, "/branch", create, lane::CREATE).doc(
        doc("create_branch", "Branches", "Create a branch (an existing name returns that branch)")
            .body::<wire::CreateBranchRequest>(r#"{"name": "Jeddah"}"#)
            .ok::<wire::BranchItem>(),
    ),
    route(Method::GET, "/branch/{branch_id}", get, lane::GET).doc(doc("get_branch", "Branches", "One branch").ok::<wire::BranchItem>()),
    route(Method::PUT, "/branch/{branch_id}", update, lane::UPDATE).doc(
        doc("update_branch", "Branches", "Rename a branch")
            .body::<wire::UpdateBranchRequest>(r#"{"name": "Jeddah North"}"#)
            .ok::<wire::BranchItem>(),
    ),
    route(Method::DELETE, "/branch/{branch_id}", delete, lane::DELETE)
        .doc(doc("delete_branch", "Branches", "Delete a branch that nothing holds").ok::<wire::Empty>()),
];

fn list(b: &Billing<Backend>, s: &Scope, _: Request) -> Result<Reply> {
    let branches = b.list_branches(s)?;
    Ok(Reply::Json(json!({"data": branches.iter().map(|x| x.to_json()).collect::<Vec<_>>()})))
}

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.create_branch(s, parse_branch_name(r.body()?)?)?.to_json()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.get_branch(s, r.id("branch_id")?)?.to_json()))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("branch_id")?;
    Ok(Reply::Json(b.update_branch(s, id, parse_branch_name(r.body()?)?)?.to_json()))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.delete_branch(s, r.id("branch_id")?)?;
    Ok(Reply::Empty)
}
