//! The sandbox test clock: `/sandbox/clock`, `/sandbox/clock/advance`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::doc;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::sandbox::ops::lane;
use billing_core::sandbox::wire::request;
use billing_core::sandbox::{Advance, SandboxClock};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/sandbox/clock", clock, lane::CLOCK)
        .doc(doc("get_sandbox_clock", "Sandbox", "The sandbox organization's test-clock time").ok::<SandboxClock>()),
    route(Method::POST, "/sandbox/clock/advance", advance, lane::ADVANCE).doc(
        doc("advance_sandbox_clock", "Sandbox", "Move the test clock forward, running what falls due")
            .body::<request::SandboxClockAdvance>(r#"{"seconds": 86400}"#)
            .ok::<SandboxClock>(),
    ),
];

fn clock(b: &Billing<Backend>, s: &Scope, _: Request) -> Result<Reply> {
    Ok(Reply::of(&SandboxClock::of(s.org_id(), b.sandbox().clock(s)?)))
}

fn advance(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let by = Advance::parse(r.body()?)?;
    Ok(Reply::of(&SandboxClock::of(s.org_id(), b.sandbox().advance(s, by)?)))
}
