//! Payments: `/payments`, `/payments/{payment_id}`, mark-paid, refund, auto-charge on demand.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::payment::{charge, ops};
use billing_core::payment::{parse_payment_list, MarkPaid, Payment, RefundRequest};
use billing_core::Billing;
use hyper::Method;
use serde_json::{json, Value};

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/payments", list, ops::lane::LIST),
    route(Method::GET, "/payments/{payment_id}", get, ops::lane::GET),
    route(Method::POST, "/payments/{payment_id}/mark-paid", mark_paid, ops::lane::MARK_PAID),
    route(Method::POST, "/payments/{payment_id}/refund", refund, ops::lane::REFUND),
    route(
        Method::POST,
        "/payments/auto-charge-on-demand/{payment_id}",
        auto_charge,
        charge::lane::AUTO_CHARGE,
    ),
];

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (q, f) = parse_payment_list(&r.query)?;
    let page = b.list_payments(s, &q, &f)?;
    let data: Vec<Value> = page.items.iter().map(Payment::to_json).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.get_payment(s, r.id("payment_id")?)?.to_json()))
}

fn mark_paid(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("payment_id")?;
    let req = MarkPaid::parse(r.body()?)?;
    b.mark_payment_paid(s, id, req)?;
    // PaymentMarkPaidResponse is an empty object.
    Ok(Reply::Json(json!({})))
}

fn refund(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("payment_id")?;
    let req = RefundRequest::parse(r.body()?)?;
    Ok(Reply::Json(b.refund_payment(s, id, req)?.to_json()))
}

fn auto_charge(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (payment_id, invoice_id) = b.auto_charge_on_demand(s, r.id("payment_id")?)?;
    Ok(Reply::Json(json!({"payment_id": payment_id, "invoice_id": invoice_id})))
}
