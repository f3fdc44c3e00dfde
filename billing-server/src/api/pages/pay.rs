//! The checkout page of a payment link (`GET /pay/{short_id}`) and the pay page of an invoice
//! (`GET /pay/invoices/{invoice_id}`): the same page (`pay.html`), rendering billing-core's
//! [`CheckoutPage`]. The form when it takes a payment, else a notice saying why not.

use super::texts::{every, texts, Texts};
use super::{found, html, load_invoice, money, not_found, notice, options, quantities, title_of, Doc};
use crate::api::{Reply, Request};
use crate::backend::Backend;
use askama::Template;
use billing_core::error::Result;
use billing_core::fields::Language;
use billing_core::invoice::InvoiceStatus;
use billing_core::payment_link::page::{CheckoutPage, PageState};
use billing_core::payment_link::{ContactInformationType, Unpayable};
use billing_core::Billing;

pub(super) fn page(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let (lang, embed) = options(&r);
    let short_id = r.param("short_id");
    match found(b.checkout().page_with(short_id, &quantities(&r)))? {
        Some(p) => Ok(render(&p, lang, embed)),
        None => Ok(not_found(lang, embed, &format!("/pay/{short_id}"), true)),
    }
}

/// `GET /pay/invoices/{id}`: the invoice's pay page (the link page's components).
pub(super) fn invoice_page(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let (lang, embed) = options(&r);
    match load_invoice(b, &r)? {
        Some(p) => Ok(render(&p, lang, embed)),
        None => Ok(not_found(lang, embed, &format!("/pay/invoices/{}", r.param("invoice_id")), false)),
    }
}

/// The page of a link or an invoice that takes a payment.
#[derive(Template)]
#[template(path = "pay.html")]
struct PayPage<'a> {
    doc: Doc,
    t: &'static Texts,
    /// `ar` or `en` (what the script sends, and the page after declining).
    lang: &'static str,
    heading: String,
    description: Option<&'a str>,
    items: Vec<Item<'a>>,
    totals: Vec<Total>,
    /// `/pay/{short id}` or `/pay/invoices/{id}`: the forms post to `{path}/attempts` and
    /// `{path}/decline`.
    path: &'a str,
    /// The payer's details asked besides the name, when the link has no consumer.
    contact: Option<Contact>,
    wallet: bool,
    /// The amount paid in full, then the installment plans (none: no choice of plan).
    total: String,
    plans: Vec<Plan>,
    /// What a subscription's payer agrees to.
    consent: Option<String>,
    pay_now: String,
    declinable: bool,
}

/// One line of the summary.
struct Item<'a> {
    name: &'a str,
    quantity: u32,
    /// A quantity the payer chooses (an input).
    custom: Option<CustomQuantity>,
    amount: String,
}

struct CustomQuantity {
    /// The link item's id.
    id: String,
    min: u32,
    max: u32,
    /// The input's accessible name: "Qty — {item}".
    label: String,
}

/// One row of the totals: its class, label and amount.
struct Total {
    class: &'static str,
    label: String,
    value: String,
}

enum Contact {
    Phone,
    Email,
}

/// An installment plan: its number of parts, its name and each part's amount.
struct Plan {
    count: u8,
    label: String,
    parts: String,
}

/// A link's or an invoice's page: the form when it takes a payment, else why not.
fn render(p: &CheckoutPage, lang: Language, embed: bool) -> Reply {
    let t = texts(lang);
    if !p.payable() {
        let why = match p.state {
            PageState::Unpayable(Unpayable::Inactive) => t.inactive,
            PageState::Unpayable(Unpayable::Expired) => t.expired,
            PageState::Unpayable(Unpayable::Completed) => t.completed,
            PageState::Invoice(InvoiceStatus::Completed) => t.invoice_paid,
            PageState::Invoice(InvoiceStatus::Canceled) => t.invoice_canceled,
            PageState::Invoice(InvoiceStatus::Rejected) => t.invoice_rejected,
            PageState::Invoice(_) => t.invoice_closed,
            PageState::NoGateway => t.no_gateway,
            PageState::Recurring | PageState::Payable => t.recurring,
        };
        let message = p.deactivate_message.as_deref().unwrap_or_default();
        let paid = matches!(p.state, PageState::Invoice(InvoiceStatus::Completed));
        let last = if paid { "" } else { t.no_payment };
        return notice(lang, embed, 200, &title_of(p, t), &[why, message, last], &p.path);
    }
    let heading = title_of(p, t);
    let title = format!("{heading} · {}", t.checkout);
    let page = PayPage {
        doc: Doc::checkout(lang, embed, title, &p.path, &[]),
        t,
        lang: lang.as_str(),
        heading,
        description: p.description.as_deref().filter(|d| !d.is_empty()),
        items: p.items.iter().map(|it| item(it, t)).collect(),
        totals: totals(p, lang, t),
        path: &p.path,
        contact: p.collect_contact.map(|kind| match kind {
            ContactInformationType::Phone => Contact::Phone,
            ContactInformationType::Email => Contact::Email,
        }),
        wallet: p.wallet,
        total: money(p.total),
        plans: p
            .installments
            .iter()
            .map(|o| Plan {
                count: o.count,
                label: match o.count {
                    2 => t.two.to_string(),
                    n => format!("{n} {}", t.n_parts),
                },
                parts: format!(
                    "{} {}",
                    o.parts.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(" + "),
                    p.currency.code()
                ),
            })
            .collect(),
        consent: p.renews.map(|r| {
            // A link starts the subscription; an invoice's page pays one that exists.
            let words = if p.invoice_number.is_some() {
                t.subscription_card_kept
            } else {
                t.subscription_consent
            };
            words
                .replace("{amount}", &format!("\u{2068}{}\u{2069}", money(r.amount)))
                .replace("{every}", &every(lang, r.interval, r.count))
        }),
        pay_now: money(p.pay_now),
        declinable: p.declinable,
    };
    html(200, embed, &page)
}

fn item<'a>(it: &'a billing_core::payment_link::page::PageItem, t: &Texts) -> Item<'a> {
    Item {
        name: &it.name,
        quantity: it.quantity,
        // A quantity the payer chooses: changing it loads the page priced with it.
        custom: it.custom.map(|c| CustomQuantity {
            id: c.item_id.to_string(),
            min: c.min,
            max: c.max,
            label: format!("{} — {}", t.qty, it.name),
        }),
        amount: money(it.amount),
    }
}

/// The totals: subtotal, each coupon's discount, VAT, total, what is paid already and what the
/// button charges when it is not the total, and when a subscription renews.
fn totals(p: &CheckoutPage, lang: Language, t: &Texts) -> Vec<Total> {
    let row = |class, label: &str, value| Total {
        class,
        label: label.to_string(),
        value,
    };
    let mut rows = vec![row("subtotal", t.subtotal, money(p.subtotal))];
    for c in &p.coupons {
        rows.push(row("coupon", &format!("{} ({})", t.discount, c.name), format!("−{}", money(c.discount))));
    }
    rows.push(row("vat", if p.vat_included { t.vat_included } else { t.vat }, money(p.vat)));
    rows.push(row("total", t.total, money(p.total)));
    if !p.paid.is_zero() {
        rows.push(row("paid", t.paid_so_far, money(p.paid)));
    }
    if p.pay_now != p.total {
        rows.push(row("total pay-now", t.pay_now, money(p.pay_now)));
    }
    if let Some(r) = p.renews {
        rows.push(row("renews", t.renews, every(lang, r.interval, r.count)));
    }
    rows
}
