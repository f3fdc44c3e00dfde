//! The public checkout: `POST /pay/{short_id}/attempts` pays a payment link, and
//! `POST /pay/invoices/{invoice_id}/attempts` and `…/decline` pay or decline an invoice from its
//! page. They take no credentials (the payer's browser calls them; no API key ever reaches a
//! page): the link's short id, or the invoice's id, is the capability. The JSON contract
//! (`PayRequest` in, `PayOutcome` out) is billing-core's, so a hosted page and any other client
//! drive the same operations.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::router::{public, PublicRoute};
use billing_core::error::{Error, Result};
use billing_core::ids::InvoiceId;
use billing_core::invoice::pay::{lane as invoice_lane, DeclineRequest};
use billing_core::payment_link::checkout::PayRequest;
use billing_core::payment_link::ops::lane;
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[PublicRoute] = &[
    public(Method::POST, "/pay/{short_id}/attempts", pay_attempt, lane::PAY),
    public(Method::POST, "/pay/invoices/{invoice_id}/attempts", pay_invoice, invoice_lane::PAY),
    public(Method::POST, "/pay/invoices/{invoice_id}/decline", decline_invoice, invoice_lane::DECLINE),
];

fn pay_attempt(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let short_id = r.param("short_id");
    let mut req = PayRequest::parse(r.body()?)?;
    req.client = r.client.clone();
    Ok(Reply::of(&b.checkout().pay(short_id, &req)?.response()))
}

/// The invoice of a public path: anything but a UUID is an unknown invoice (404, as the page).
fn invoice_id(r: &Request) -> Result<InvoiceId> {
    let raw = r.param("invoice_id");
    raw.parse().map_err(|_| Error::not_found("Invoice", raw))
}

fn pay_invoice(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let id = invoice_id(&r)?;
    let mut req = PayRequest::parse(r.body()?)?;
    req.client = r.client.clone();
    Ok(Reply::of(&b.invoices().pay(id, &req)?.response()))
}

/// Answers `{"status": "REJECTED"}`.
fn decline_invoice(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let id = invoice_id(&r)?;
    let req = DeclineRequest::parse(r.body()?)?;
    let inv = b.invoices().decline(id, &req)?;
    Ok(Reply::Json(serde_json::json!({"id": inv.id, "status": inv.status})))
}
