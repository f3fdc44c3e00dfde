//! The sandbox test clock: `/sandbox/clock`, `/sandbox/clock/advance`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::doc;
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::clock::format_rfc3339;
use billing_core::error::Result;
use billing_core::sandbox::ops::lane;
use billing_core::sandbox::Advance;
use billing_core::Billing;
use hyper::Method;
use serde_json::json;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/sandbox/clock", clock, lane::CLOCK)
        .doc(doc("get_sandbox_clock", "Sandbox", "The sandbox organization's test-clock time").ok::<wire::SandboxClock>()),
    route(Method::POST, "/sandbox/clock/advance", advance, lane::ADVANCE).doc(
        doc("advance_sandbox_clock", "Sandbox", "Move the test clock forward, running what falls due")
            .body::<wire::SandboxClockAdvance>(r#"{"seconds": 86400}"#)
            .ok::<wire::SandboxClock>(),
    ),
];

fn clock(b: &Billing<Backend>, s: &Scope, _: Request) -> Result<Reply> {
    Ok(Reply::Json(json!({"now": format_rfc3339(&b.sandbox_clock(s)?), "organization_id": s.org_id()})))
}

fn advance(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let by = Advance::parse(r.body()?)?;
    let now = b.advance_sandbox_clock(s, by)?;
    Ok(Reply::Json(json!({"now": format_rfc3339(&now), "organization_id": s.org_id()})))
}
