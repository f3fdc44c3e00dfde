//! The hosted pages (no credentials), rendered from the askama templates in
//! `billing-server/templates/`: checked at compile time, and every value HTML-escaped by the
//! template engine (no `|safe` on data). Each page is a struct carrying what it shows; the
//! values come from billing-core's operations, and no amount or rule is computed here.
//!
//! - [`pay`]: `GET /pay/{short_id}` renders billing-core's [`CheckoutPage`] of a payment link,
//!   `GET /pay/invoices/{invoice_id}` an invoice's (`pay.html`), in Arabic (default,
//!   right-to-left) or English (`?language=en`), embedded with `?embed=true`.
//! - [`result`]: `GET /pay/{short_id}/result` and `GET /pay/invoices/{invoice_id}/result`, the
//!   hosted result pages the attempts endpoints redirect to (`result.html`).
//! - a page that takes no payment and the 404 pages (`notice.html`, here).
//! - [`assets`]: their script and style (`/pay/assets/…`) and the embedding script (`/embed.js`),
//!   compiled into the binary: nothing is loaded from elsewhere.
//! - [`invite`]: the invitation-accept page (`/invite/accept`).
//!
//! Every page shares `layout.html` ([`Doc`]); the checkout pages' words are in [`texts`].

mod assets;
pub mod invite;
mod pay;
mod result;
mod texts;

use super::{Page, Reply, Request};
use crate::backend::Backend;
use crate::router::{public, PublicRoute};
use askama::Template;
use billing_core::error::{Code, Error, Result};
use billing_core::fields::Language;
use billing_core::ids::{InvoiceId, PaymentLinkItemId};
use billing_core::invoice::pay::lane as invoice_lane;
use billing_core::money::Money;
use billing_core::payment_link::ops::lane;
use billing_core::payment_link::page::CheckoutPage;
use billing_core::{Billing, Lane};
use hyper::Method;
use texts::{texts, Texts};

/// The checkout pages' rows (the invitation page's are [`invite::ROUTES`]).
pub static ROUTES: &[PublicRoute] = &[
    public(Method::GET, "/pay/{short_id}", pay::page, lane::PAGE),
    public(Method::GET, "/pay/{short_id}/result", result::result, lane::PAGE),
    public(Method::GET, "/pay/invoices/{invoice_id}", pay::invoice_page, invoice_lane::PAGE),
    public(Method::GET, "/pay/invoices/{invoice_id}/result", result::invoice_result, invoice_lane::PAGE),
    public(Method::GET, "/pay/assets/checkout.js", assets::checkout_js, Lane::Read),
    public(Method::GET, "/pay/assets/checkout.css", assets::checkout_css, Lane::Read),
    public(Method::GET, "/embed.js", assets::embed_js, Lane::Read),
];

/// What `layout.html` shows around a page's `main`: the document's language and direction, its
/// title and the link to the other language.
pub struct Doc {
    /// `ar` or `en`.
    pub lang: &'static str,
    /// `rtl` or `ltr`.
    pub dir: &'static str,
    pub title: String,
    /// The checkout pages: their script, and whether the page is embedded (`data-embed`).
    /// `None`: a page without script (the invitation page).
    pub embed: Option<bool>,
    pub switch: Option<Switch>,
}

/// The link to the same page in the other language.
pub struct Switch {
    /// The address, unescaped (the template escapes it).
    pub href: String,
    /// The other language (`ar` or `en`), its `lang` (and `hreflang` when `hreflang`).
    pub lang: &'static str,
    pub hreflang: bool,
    /// The other language's name, in that language.
    pub name: &'static str,
}

impl Doc {
    pub fn new(lang: Language, title: String, embed: Option<bool>, switch: Option<Switch>) -> Doc {
        let dir = match lang {
            Language::Ar => "rtl",
            Language::En => "ltr",
        };
        Doc {
            lang: lang.as_str(),
            dir,
            title,
            embed,
            switch,
        }
    }

    /// A checkout page's document: its script, and the switch to `href` in the other language
    /// (`params` kept after `language`, then `embed`).
    fn checkout(lang: Language, embed: bool, title: String, path: &str, params: &[(&str, String)]) -> Doc {
        let other = other(lang);
        let mut href = format!("{path}?language={}", other.as_str());
        for (k, v) in params {
            href.push_str(&format!("&{k}={v}"));
        }
        if embed {
            href.push_str("&embed=true");
        }
        let switch = Switch {
            href,
            lang: other.as_str(),
            hreflang: true,
            name: texts(lang).other_language,
        };
        Doc::new(lang, title, Some(embed), Some(switch))
    }
}

/// The other language (the switch's).
pub fn other(lang: Language) -> Language {
    match lang {
        Language::Ar => Language::En,
        Language::En => Language::Ar,
    }
}

/// A rendered page: frameable only when embedded.
pub fn html(status: u16, frameable: bool, page: &impl Template) -> Reply {
    let body = page.render().expect("a page renders into a String");
    Reply::Page(Page::html(status, frameable, body))
}

/// A page with a heading (if any) and lines of text only: a link or invoice that takes no
/// payment, a page not found, a refused invitation.
#[derive(Template)]
#[template(path = "notice.html")]
pub struct Notice<'a> {
    pub doc: Doc,
    pub heading: Option<&'a str>,
    pub lines: Vec<&'a str>,
}

impl<'a> Notice<'a> {
    /// `lines` without the empty ones.
    pub fn new(doc: Doc, heading: Option<&'a str>, lines: &[&'a str]) -> Notice<'a> {
        Notice {
            doc,
            heading,
            lines: lines.iter().copied().filter(|l| !l.is_empty()).collect(),
        }
    }
}

/// A checkout page that takes no payment: its title and why.
fn notice(lang: Language, embed: bool, status: u16, title: &str, lines: &[&str], path: &str) -> Reply {
    let doc = Doc::checkout(lang, embed, title.to_string(), path, &[]);
    html(status, embed, &Notice::new(doc, Some(title), lines))
}

/// What is not found at `path`: a link (`link`) or an invoice.
fn not_found(lang: Language, embed: bool, path: &str, link: bool) -> Reply {
    let t = texts(lang);
    let title = if link { t.not_found } else { t.invoice_not_found };
    notice(lang, embed, 404, title, &[t.not_found_body], path)
}

/// The page's language (`?language=`, Arabic by default; anything unknown is Arabic too) and
/// whether it is embedded (`?embed=true`).
fn options(r: &Request) -> (Language, bool) {
    let lang = r.query.get("language").and_then(|l| Language::parse(l).ok()).unwrap_or_default();
    (lang, r.query.get("embed") == Some("true"))
}

/// An amount with its currency: `450.00 SAR`.
fn money(m: Money) -> String {
    format!("{m} {}", m.currency().code())
}

/// The page's heading: the link's name, or the organization's with the invoice's number.
fn title_of(p: &CheckoutPage, t: &Texts) -> String {
    match p.invoice_number {
        Some(n) => format!("{} {n} · {}", t.invoice, p.name),
        None => p.name.clone(),
    }
}

/// A page, or `None` for an unknown link or invoice (a 404 page).
fn found(p: Result<CheckoutPage>) -> Result<Option<CheckoutPage>> {
    match p {
        Ok(p) => Ok(Some(p)),
        Err(Error::Rule { code: Code::NOT_FOUND, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The invoice page's id; anything but a UUID is an unknown invoice.
fn invoice_id(r: &Request) -> Option<InvoiceId> {
    r.param("invoice_id").parse().ok()
}

/// The link's page, or `None` for an unknown link.
fn load(b: &Billing<Backend>, short_id: &str) -> Result<Option<CheckoutPage>> {
    found(b.checkout().page(short_id))
}

/// The quantities the payer chose on the page (`?quantity.<item id>=<n>`; others are ignored).
fn quantities(r: &Request) -> Vec<(PaymentLinkItemId, u32)> {
    r.query
        .0
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("quantity.")?.parse().ok()?, v.parse().ok()?)))
        .collect()
}

/// The invoice's page, or `None` for an unknown invoice.
fn load_invoice(b: &Billing<Backend>, r: &Request) -> Result<Option<CheckoutPage>> {
    match invoice_id(r) {
        Some(id) => found(b.invoices().pay_page(id)),
        None => Ok(None),
    }
}
