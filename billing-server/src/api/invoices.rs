//! Invoices: create, list, get, in-place update, void, send.

use super::{path_id, Input, Op, Reply};
use crate::router::Route;
use billing_core::invoice::{parse_invoice_list, InvoiceCreate, InvoiceInPlaceUpdate};
use serde_json::json;

pub fn build(route: Route, input: Input) -> Op {
    match route {
        Route::CreateInvoice => Box::new(move |b, s| {
            let req = InvoiceCreate::parse(&input.body?, s.org.settings.default_currency)?;
            Ok(Reply::Json(b.create_invoice_detailed(s, req)?))
        }),
        Route::ListInvoices => Box::new(move |b, s| {
            let req = parse_invoice_list(&input.query)?;
            let page = b.list_invoices(s, &req)?;
            let pagination = page.pagination();
            Ok(Reply::Json(json!({"data": page.items, "pagination": pagination})))
        }),
        Route::GetInvoice(id) => Box::new(move |b, s| Ok(Reply::Json(b.invoice_detailed(s, path_id("invoice_id", &id)?)?))),
        Route::UpdateInvoiceInPlace(id) => Box::new(move |b, s| {
            let id = path_id("invoice_id", &id)?;
            let u = InvoiceInPlaceUpdate::parse(&input.body?)?;
            Ok(Reply::Json(b.update_invoice_inplace_detailed(s, id, u)?))
        }),
        Route::VoidInvoice(id) => Box::new(move |b, s| {
            let id = path_id("invoice_id", &id)?;
            Ok(Reply::Json(b.void_invoice_detailed(s, id)?))
        }),
        Route::SendInvoice(id) => Box::new(move |b, s| {
            let id = path_id("invoice_id", &id)?;
            Ok(Reply::Json(b.send_invoice_detailed(s, id)?))
        }),
        other => unreachable!("not an invoice route: {other:?}"),
    }
}
