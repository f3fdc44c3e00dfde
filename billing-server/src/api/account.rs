//! The caller, the organization, its branches and its sandbox clock.

use super::{path_id, Input, Op, Reply};
use crate::router::Route;
use billing_core::branch::parse_branch_name;
use billing_core::clock::format_rfc3339;
use billing_core::fields::Language;
use billing_core::org::InviteRequest;
use billing_core::sandbox::Advance;
use serde_json::json;

pub fn build(route: Route, input: Input) -> Op {
    match route {
        Route::Me => Box::new(|b, s| b.me(s).map(Reply::Json)),
        Route::Invite => Box::new(move |b, s| {
            let req = InviteRequest::parse(&input.body?)?;
            // The `language` header picks the invitation e-mail's language; AR by default.
            let language = input.language.as_deref().and_then(|l| Language::parse(l).ok()).unwrap_or_default();
            let inv = b.invite(s, req, language)?;
            Ok(Reply::Json(serde_json::to_value(inv).expect("serializable")))
        }),
        Route::ListBranches => Box::new(|b, s| {
            let branches = b.list_branches(s)?;
            Ok(Reply::Json(json!({"data": branches.iter().map(|x| x.to_json()).collect::<Vec<_>>()})))
        }),
        Route::CreateBranch => Box::new(move |b, s| Ok(Reply::Json(b.create_branch(s, parse_branch_name(&input.body?)?)?.to_json()))),
        Route::GetBranch(id) => Box::new(move |b, s| Ok(Reply::Json(b.get_branch(s, path_id("branch_id", &id)?)?.to_json()))),
        Route::UpdateBranch(id) => Box::new(move |b, s| {
            let id = path_id("branch_id", &id)?;
            Ok(Reply::Json(b.update_branch(s, id, parse_branch_name(&input.body?)?)?.to_json()))
        }),
        Route::DeleteBranch(id) => Box::new(move |b, s| {
            b.delete_branch(s, path_id("branch_id", &id)?)?;
            Ok(Reply::Empty)
        }),
        Route::SandboxClock => Box::new(|b, s| Ok(Reply::Json(json!({"now": format_rfc3339(&b.sandbox_clock(s)?), "organization_id": s.org_id()})))),
        Route::AdvanceSandboxClock => Box::new(move |b, s| {
            let by = Advance::parse(&input.body?)?;
            let now = b.advance_sandbox_clock(s, by)?;
            Ok(Reply::Json(json!({"now": format_rfc3339(&now), "organization_id": s.org_id()})))
        }),
        other => unreachable!("not an account route: {other:?}"),
    }
}
