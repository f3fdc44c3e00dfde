//! Payments: `/payments`, `/payments/{payment_id}`, mark-paid, refund, auto-charge on demand.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::{doc, tool};
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::list::ListResource;
use billing_core::payment::wire::request;
use billing_core::payment::{charge, ops};
use billing_core::payment::{parse_payment_list, AutoChargeOnDemandResponse, MarkPaid, Payment, PaymentResponse, RefundRequest};
use billing_core::Billing;
use hyper::Method;
use serde_json::json;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/payments", list, ops::lane::LIST).doc(
        doc("list_payments", "Payments", "List payments")
            .query::<request::PaymentListQuery>()
            .ok::<ListResource<PaymentResponse>>()
            .tools(&[tool("list_payments", "List payments, with filters.")]),
    ),
    route(Method::GET, "/payments/{payment_id}", get, ops::lane::GET).doc(
        doc("get_payment", "Payments", "One payment")
            .ok::<PaymentResponse>()
            .tools(&[tool("get_payment", "One payment.")]),
    ),
    route(Method::POST, "/payments/{payment_id}/mark-paid", mark_paid, ops::lane::MARK_PAID).doc(
        doc("mark_payment_as_paid", "Payments", "Record a payment made outside (cash, bank transfer, …)")
            .body::<request::PaymentMarkPaidRequest>(r#"{"payment_method": "CASH", "note": "paid at the front desk"}"#)
            .ok::<wire::Empty>()
            .tools(&[tool(
                "mark_payment_as_paid",
                "Record a payment made outside (cash, bank transfer, card, Qurrah).",
            )]),
    ),
    route(Method::POST, "/payments/{payment_id}/refund", refund, ops::lane::REFUND).doc(
        doc("refund_payment", "Payments", "Refund a paid payment in full")
            .body::<request::PaymentRefundRequest>(r#"{"refund_reason": "REQUESTED_BY_CUSTOMER", "refund_note": "changed plans"}"#)
            .ok::<PaymentResponse>()
            .tools(&[tool("refund_payment", "Refund a paid payment in full.")]),
    ),
    route(
        Method::POST,
        "/payments/auto-charge-on-demand/{payment_id}",
        auto_charge,
        charge::lane::AUTO_CHARGE,
    )
    .doc(doc("auto_charge_payment", "Payments", "Charge an unpaid payment to the consumer's saved card").ok::<AutoChargeOnDemandResponse>()),
];

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (q, f) = parse_payment_list(&r.query)?;
    let page = b.payments().list(s, &q, &f)?;
    let data: Vec<_> = page.items.iter().map(Payment::response).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.payments().get(s, r.id("payment_id")?)?.response()))
}

fn mark_paid(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("payment_id")?;
    let req = MarkPaid::parse(r.body()?)?;
    b.payments().mark_paid(s, id, req)?;
    // PaymentMarkPaidResponse is an empty object.
    Ok(Reply::Json(json!({})))
}

fn refund(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("payment_id")?;
    let req = RefundRequest::parse(r.body()?)?;
    Ok(Reply::of(&b.payments().refund(s, id, req)?.response()))
}

fn auto_charge(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (payment_id, invoice_id) = b.payments().auto_charge(s, r.id("payment_id")?)?;
    Ok(Reply::of(&AutoChargeOnDemandResponse { payment_id, invoice_id }))
}
