//! Invoices: `/invoices`, `/invoices/{invoice_id}` and its in-place update, void and send.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::{doc, tool};
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::invoice::ops::lane;
use billing_core::invoice::wire::request;
use billing_core::invoice::{parse_invoice_list, InvoiceCreate, InvoiceDetail, InvoiceDetailed, InvoiceInPlaceUpdate, InvoiceListItem};
use billing_core::list::ListResource;
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/invoices", list, lane::LIST).doc(doc("list_invoices", "Invoices", "List invoices").query::<request::InvoiceListQuery>().ok::<ListResource<InvoiceListItem>>().tools(&[tool("list_invoices", "List invoices, with filters.")])),
    route(Method::POST, "/invoices", create, lane::CREATE).doc(doc("create_invoice", "Invoices", "Create an invoice").body::<request::InvoiceCreate>(r#"{"organization_consumer_id": "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90", "items": [{"product_id": "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f91", "quantity": 2}], "payment_methods": {"mada": true, "visa": true, "mastercard": true, "amex": false, "bank_transfer": false, "installment": false}, "scheduled_on": "2026-01-15T09:00:00Z", "currency": "SAR", "description": "January sessions"}"#).ok::<InvoiceDetailed>().tools(&[tool("create_invoice", "Create an invoice for a customer.")])),
    route(Method::GET, "/invoices/{invoice_id}", get, lane::GET).doc(doc("get_invoice", "Invoices", "One invoice with its items and payments").ok::<InvoiceDetailed>().tools(&[tool("get_invoice", "One invoice with its items and payments.")])),
    route(Method::PATCH, "/invoices/{invoice_id}/inplace", update_inplace, lane::UPDATE).doc(doc("update_invoice", "Invoices", "Change an invoice's description or scheduled date").body::<request::InvoiceInPlaceUpdate>(r#"{"description": "January and February sessions"}"#).ok::<InvoiceDetailed>()),
    route(Method::POST, "/invoices/{invoice_id}/void", void, lane::VOID).doc(doc("void_invoice", "Invoices", "Cancel an invoice (its unpaid payments too)").ok::<InvoiceDetailed>().tools(&[tool("void_invoice", "Void (cancel) an invoice and its unpaid payments.")])),
    route(Method::POST, "/invoices/{invoice_id}/send", send, lane::SEND).doc(doc("send_invoice", "Invoices", "(Re)send an invoice to its consumer").ok::<InvoiceDetailed>().tools(&[tool("send_invoice", "(Re)send an invoice to its customer.")])),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = InvoiceCreate::parse(r.body()?, s.org.settings.default_currency)?;
    detailed(b, s, &b.invoices().create(s, req)?)
}

/// InvoiceDetailed of `d`.
fn detailed(b: &Billing<Backend>, s: &Scope, d: &InvoiceDetail) -> Result<Reply> {
    Ok(Reply::of(&d.detailed(&s.branch.name, b.engine().public_url(), &s.org.settings)))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = parse_invoice_list(&r.query)?;
    let page = b.invoices().list(s, &req)?;
    let data: Vec<_> = page.items.iter().map(|d| d.list_item(b.engine().public_url(), req.include_payments)).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    detailed(b, s, &b.invoices().get(s, r.id("invoice_id")?)?)
}

fn update_inplace(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("invoice_id")?;
    let u = InvoiceInPlaceUpdate::parse(r.body()?)?;
    detailed(b, s, &b.invoices().update(s, id, u)?)
}

fn void(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    detailed(b, s, &b.invoices().void(s, r.id("invoice_id")?)?)
}

fn send(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    detailed(b, s, &b.invoices().send(s, r.id("invoice_id")?)?)
}
