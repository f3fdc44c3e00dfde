//! The hosted result pages (`GET /pay/{short_id}/result`, `GET /pay/invoices/{id}/result`)
//! the attempts endpoints redirect to when there are no redirect URLs: the outcome the query
//! says, and a way back to the page when it still takes a payment (`result.html`).

use super::texts::{texts, Texts};
use super::{html, load, load_invoice, not_found, options, title_of, Doc};
use crate::api::{Reply, Request};
use crate::backend::Backend;
use askama::Template;
use billing_core::error::Result;
use billing_core::fields::Language;
use billing_core::payment_link::checkout::encode;
use billing_core::payment_link::page::{result_is_success, CheckoutPage};
use billing_core::Billing;

/// The redirect's parameters the language switch keeps.
const KEPT: [&str; 9] = [
    "id",
    "payment_link_id",
    "status",
    "message",
    "login_method",
    "invoice_id",
    "consent_id",
    "payment_id",
    "organization_consumer_id",
];

pub(super) fn result(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let (lang, embed) = options(&r);
    let short_id = r.param("short_id");
    match load(b, short_id)? {
        Some(p) => Ok(render(&p, &r, lang, embed)),
        None => Ok(not_found(lang, embed, &format!("/pay/{short_id}"), true)),
    }
}

/// `GET /pay/invoices/{id}/result`: where an invoice payment's answer sends the payer.
pub(super) fn invoice_result(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let (lang, embed) = options(&r);
    match load_invoice(b, &r)? {
        Some(p) => Ok(render(&p, &r, lang, embed)),
        None => Ok(not_found(lang, embed, &format!("/pay/invoices/{}", r.param("invoice_id")), false)),
    }
}

#[derive(Template)]
#[template(path = "result.html")]
struct ResultPage<'a> {
    doc: Doc,
    t: &'static Texts,
    success: bool,
    title: &'static str,
    /// The link's name, or the invoice's heading.
    name: String,
    body: &'static str,
    /// The link's confirmation message (a success only).
    confirmation: Option<&'a str>,
    /// The redirect's `message` and `id` (the payment's reference), as sent.
    message: Option<&'a str>,
    reference: Option<&'a str>,
    /// The page again, when the payment failed and it still takes one.
    try_again: Option<String>,
}

/// The hosted result page of a link or an invoice.
fn render(p: &CheckoutPage, r: &Request, lang: Language, embed: bool) -> Reply {
    let t = texts(lang);
    let status = r.query.get("status").unwrap_or_default();
    let success = result_is_success(status) == Some(true);
    let (title, body) = match result_is_success(status) {
        Some(true) => (t.paid_title, t.paid_body),
        _ if status == "failed_internal_error" => (t.failed_title, t.internal_body),
        _ => (t.failed_title, t.failed_body),
    };
    // The language switch keeps the outcome's parameters.
    let keep: Vec<(&str, String)> = KEPT.iter().filter_map(|k| Some((*k, encode(r.query.get(k)?)))).collect();
    let page = ResultPage {
        doc: Doc::checkout(lang, embed, title.to_string(), &format!("{}/result", p.path), &keep),
        t,
        success,
        title,
        name: title_of(p, t),
        body,
        confirmation: p.confirmation_message.as_deref().filter(|c| success && !c.is_empty()),
        message: r.query.get("message").filter(|v| !v.is_empty()),
        reference: r.query.get("id").filter(|v| !v.is_empty()),
        try_again: (!success && p.payable()).then(|| format!("{}?language={}", p.path, lang.as_str())),
    };
    html(200, embed, &page)
}
