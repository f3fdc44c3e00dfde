//! The public checkout: `POST /pay/{short_id}/attempts` pays a payment link. It takes no
//! credentials (the payer's browser calls it; no API key ever reaches a page): the link's short
//! id is the capability. The JSON contract (`PayRequest` in, `PayOutcome` out) is
//! billing-core's, so a hosted page and any other client drive the same operation.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::router::{public, PublicRoute};
use billing_core::error::Result;
use billing_core::payment_link::checkout::PayRequest;
use billing_core::payment_link::ops::lane;
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[PublicRoute] = &[public(Method::POST, "/pay/{short_id}/attempts", pay_attempt, lane::PAY)];

fn pay_attempt(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let short_id = r.param("short_id");
    let req = PayRequest::parse(r.body()?)?;
    Ok(Reply::Json(b.pay_link(short_id, &req)?.to_json()))
}
