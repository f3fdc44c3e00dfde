//! Invoices: `/invoices`, `/invoices/{invoice_id}` and its in-place update, void and send.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::invoice::ops::lane;
use billing_core::invoice::{parse_invoice_list, InvoiceCreate, InvoiceInPlaceUpdate};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/invoices", list, lane::LIST),
    route(Method::POST, "/invoices", create, lane::CREATE),
    route(Method::GET, "/invoices/{invoice_id}", get, lane::GET),
    route(Method::PATCH, "/invoices/{invoice_id}/inplace", update_inplace, lane::UPDATE_INPLACE),
    route(Method::POST, "/invoices/{invoice_id}/void", void, lane::VOID),
    route(Method::POST, "/invoices/{invoice_id}/send", send, lane::SEND),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = InvoiceCreate::parse(r.body()?, s.org.settings.default_currency)?;
    Ok(Reply::Json(b.create_invoice_detailed(s, req)?))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = parse_invoice_list(&r.query)?;
    let page = b.list_invoices(s, &req)?;
    let pagination = page.pagination();
    Ok(Reply::page(page.items, pagination))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.invoice_detailed(s, r.id("invoice_id")?)?))
}

fn update_inplace(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("invoice_id")?;
    let u = InvoiceInPlaceUpdate::parse(r.body()?)?;
    Ok(Reply::Json(b.update_invoice_inplace_detailed(s, id, u)?))
}

fn void(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.void_invoice_detailed(s, r.id("invoice_id")?)?))
}

fn send(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.send_invoice_detailed(s, r.id("invoice_id")?)?))
}
