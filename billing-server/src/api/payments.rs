//! Payments: list, get, mark-paid, refund, auto-charge on demand.

use super::{path_id, Input, Op, Reply};
use crate::router::Route;
use billing_core::payment::{parse_payment_list, MarkPaid, Payment, RefundRequest};
use serde_json::json;

pub fn build(route: Route, input: Input) -> Op {
    match route {
        Route::ListPayments => Box::new(move |b, s| {
            let (q, f) = parse_payment_list(&input.query)?;
            let page = b.list_payments(s, &q, &f)?;
            Ok(Reply::Json(
                json!({"data": page.items.iter().map(Payment::to_json).collect::<Vec<_>>(), "pagination": page.pagination()}),
            ))
        }),
        Route::GetPayment(id) => Box::new(move |b, s| Ok(Reply::Json(b.get_payment(s, path_id("payment_id", &id)?)?.to_json()))),
        Route::MarkPaymentPaid(id) => Box::new(move |b, s| {
            let id = path_id("payment_id", &id)?;
            let req = MarkPaid::parse(&input.body?)?;
            b.mark_payment_paid(s, id, req)?;
            // PaymentMarkPaidResponse is an empty object.
            Ok(Reply::Json(json!({})))
        }),
        Route::RefundPayment(id) => Box::new(move |b, s| {
            let id = path_id("payment_id", &id)?;
            let req = RefundRequest::parse(&input.body?)?;
            Ok(Reply::Json(b.refund_payment(s, id, req)?.to_json()))
        }),
        Route::AutoChargePayment(id) => Box::new(move |b, s| {
            let (payment_id, invoice_id) = b.auto_charge_on_demand(s, path_id("payment_id", &id)?)?;
            Ok(Reply::Json(json!({"payment_id": payment_id, "invoice_id": invoice_id})))
        }),
        other => unreachable!("not a payment route: {other:?}"),
    }
}
