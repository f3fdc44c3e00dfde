//! The hosted checkout pages (no credentials): `GET /pay/{short_id}` renders billing-core's
//! [`CheckoutPage`] in Arabic (default, right-to-left) or English (`?language=en`), and
//! `GET /pay/{short_id}/result` the hosted result page the attempts endpoint redirects to when
//! the link has no redirect URLs. Their script and style (`/pay/assets/…`) and the embedding
//! script (`/embed.js`) are compiled into the binary: nothing is loaded from elsewhere. Every
//! value from the database or the query is HTML-escaped; no amount or rule is computed here.

use super::{Page, Reply, Request};
use crate::backend::Backend;
use crate::router::{public, PublicRoute};
use billing_core::error::{Code, Error, Result};
use billing_core::fields::Language;
use billing_core::ids::{InvoiceId, PaymentLinkItemId};
use billing_core::invoice::pay::lane as invoice_lane;
use billing_core::invoice::InvoiceStatus;
use billing_core::money::Money;
use billing_core::payment_link::ops::lane;
use billing_core::payment_link::page::{result_is_success, CheckoutPage, PageState};
use billing_core::payment_link::{ContactInformationType, Unpayable};
use billing_core::product::RecurringInterval;
use billing_core::{Billing, Lane};
use hyper::Method;
use std::fmt::Write;

pub static ROUTES: &[PublicRoute] = &[
    public(Method::GET, "/pay/{short_id}", page, lane::PAGE),
    public(Method::GET, "/pay/{short_id}/result", result, lane::PAGE),
    public(Method::GET, "/pay/invoices/{invoice_id}", invoice_page, invoice_lane::PAGE),
    public(Method::GET, "/pay/invoices/{invoice_id}/result", invoice_result, invoice_lane::PAGE),
    public(Method::GET, "/pay/assets/checkout.js", checkout_js, Lane::Read),
    public(Method::GET, "/pay/assets/checkout.css", checkout_css, Lane::Read),
    public(Method::GET, "/embed.js", embed_js, Lane::Read),
];

const CHECKOUT_JS: &str = include_str!("../../assets/checkout.js");
const CHECKOUT_CSS: &str = include_str!("../../assets/checkout.css");
const EMBED_JS: &str = include_str!("../../assets/embed.js");

fn checkout_js(_: &Billing<Backend>, _: Request) -> Result<Reply> {
    Ok(Reply::Page(Page::asset("text/javascript; charset=utf-8", CHECKOUT_JS)))
}

/// The embedding script: `window.BillingCheckout.mount(opts)` (see the README and the file).
fn embed_js(_: &Billing<Backend>, _: Request) -> Result<Reply> {
    Ok(Reply::Page(Page::asset("text/javascript; charset=utf-8", EMBED_JS)))
}

fn checkout_css(_: &Billing<Backend>, _: Request) -> Result<Reply> {
    Ok(Reply::Page(Page::asset("text/css; charset=utf-8", CHECKOUT_CSS)))
}

/// HTML-escapes `s` for text and double-quoted attribute values (the notification e-mails'
/// escaping: one function for every page the service writes).
pub use billing_core::notification::template::esc;

/// What the page says, in one language.
struct Texts {
    checkout: &'static str,
    summary: &'static str,
    item: &'static str,
    qty: &'static str,
    amount: &'static str,
    subtotal: &'static str,
    discount: &'static str,
    vat: &'static str,
    vat_included: &'static str,
    total: &'static str,
    your_details: &'static str,
    name: &'static str,
    phone: &'static str,
    email: &'static str,
    pay_with: &'static str,
    card: &'static str,
    wallet: &'static str,
    card_number: &'static str,
    card_name: &'static str,
    expiry_month: &'static str,
    expiry_year: &'static str,
    cvc: &'static str,
    wallet_phone: &'static str,
    plan: &'static str,
    full: &'static str,
    two: &'static str,
    n_parts: &'static str,
    card_only: &'static str,
    pay: &'static str,
    processing: &'static str,
    redirecting: &'static str,
    form_error: &'static str,
    network_error: &'static str,
    inactive: &'static str,
    expired: &'static str,
    completed: &'static str,
    recurring: &'static str,
    no_payment: &'static str,
    not_found: &'static str,
    not_found_body: &'static str,
    paid_title: &'static str,
    paid_body: &'static str,
    failed_title: &'static str,
    failed_body: &'static str,
    internal_body: &'static str,
    try_again: &'static str,
    reference: &'static str,
    message: &'static str,
    other_language: &'static str,
    noscript: &'static str,
    /// The page's own words for a field the endpoint refused (by field id); a field without
    /// one shows the endpoint's message (English).
    field_errors: &'static [(&'static str, &'static str)],
    /// The page's own words for a refusal that is not a field error (by the envelope's code);
    /// a code without one shows the endpoint's `additional_info` (English).
    refusals: &'static [(&'static str, &'static str)],
    invoice: &'static str,
    paid_so_far: &'static str,
    pay_now: &'static str,
    invoice_paid: &'static str,
    invoice_canceled: &'static str,
    invoice_rejected: &'static str,
    invoice_closed: &'static str,
    no_gateway: &'static str,
    invoice_not_found: &'static str,
    decline: &'static str,
    decline_reason: &'static str,
    decline_button: &'static str,
    declining: &'static str,
    /// The summary's line of a subscription: when it renews.
    renews: &'static str,
    /// Under the pay button of a subscription's link: `{amount}` and `{every}` are filled in.
    subscription_consent: &'static str,
    /// Under the pay button of a subscription's invoice (card payments are kept for renewals).
    subscription_card_kept: &'static str,
}

const AR: Texts = Texts {
    checkout: "الدفع",
    summary: "ملخص الطلب",
    item: "المنتج",
    qty: "الكمية",
    amount: "المبلغ",
    subtotal: "المجموع الفرعي",
    discount: "خصم",
    vat: "ضريبة القيمة المضافة",
    vat_included: "ضريبة القيمة المضافة (مشمولة)",
    total: "الإجمالي",
    your_details: "بياناتك",
    name: "الاسم",
    phone: "رقم الجوال",
    email: "البريد الإلكتروني",
    pay_with: "طريقة الدفع",
    card: "بطاقة",
    wallet: "محفظة الجوال",
    card_number: "رقم البطاقة",
    card_name: "الاسم على البطاقة",
    expiry_month: "شهر الانتهاء",
    expiry_year: "سنة الانتهاء",
    cvc: "رمز الأمان",
    wallet_phone: "رقم جوال المحفظة",
    plan: "خطة الدفع",
    full: "دفعة واحدة",
    two: "دفعتان",
    n_parts: "دفعات",
    card_only: "التقسيط متاح بالبطاقة فقط.",
    pay: "ادفع",
    processing: "جارٍ معالجة الدفع…",
    redirecting: "جارٍ التحويل…",
    form_error: "يرجى تصحيح الحقول المشار إليها.",
    network_error: "تعذّر الاتصال بالخادم. حاول مرة أخرى.",
    inactive: "رابط الدفع هذا غير نشط.",
    expired: "انتهت صلاحية رابط الدفع هذا.",
    completed: "اكتمل رابط الدفع هذا ولم يعد يقبل مدفوعات.",
    recurring: "هذا الرابط لاشتراك بفترة تجريبية، ولا يمكن بدؤه هنا بعد.",
    no_payment: "لن يُخصم أي مبلغ.",
    not_found: "رابط الدفع غير موجود",
    not_found_body: "تحقق من العنوان أو اطلب رابطًا جديدًا من التاجر.",
    paid_title: "تم الدفع بنجاح",
    paid_body: "شكرًا لك، تم استلام دفعتك.",
    failed_title: "لم يتم الدفع",
    failed_body: "لم تنجح عملية الدفع، ولم يُخصم أي مبلغ. يمكنك المحاولة مرة أخرى.",
    internal_body: "حدث خطأ أثناء معالجة الدفع. تواصل مع الدعم: قد يكون المبلغ خُصم وقد لا يكون.",
    try_again: "حاول مرة أخرى",
    reference: "المرجع",
    message: "الرسالة",
    other_language: "English",
    noscript: "يتطلب الدفع تفعيل JavaScript.",
    field_errors: &[
        ("customer-name", "اكتب اسمك."),
        ("customer-phone_number", "اكتب رقم جوال صحيحًا بالصيغة الدولية، مثل ‎+966501234567."),
        ("customer-email", "اكتب بريدًا إلكترونيًا صحيحًا."),
        ("method-number", "رقم البطاقة غير صحيح."),
        ("method-name", "اكتب الاسم كما هو على البطاقة (كلمتان على الأقل)."),
        ("method-expiry_month", "شهر الانتهاء من 1 إلى 12."),
        ("method-expiry_year", "البطاقة منتهية الصلاحية أو السنة غير صحيحة."),
        ("method-cvc", "رمز الأمان 3 أرقام (4 لبطاقات أمريكان إكسبريس)."),
        ("method-phone_number", "اكتب رقم جوال المحفظة بالصيغة الدولية، مثل ‎+966501234567."),
    ],
    refusals: &[
        ("DUPLICATE_PAYMENT", "هذه الدفعة مدفوعة أو قيد المعالجة، فلن تُخصم مرة أخرى."),
        ("INVALID_STATUS", "لم يعد رابط الدفع هذا يقبل مدفوعات."),
        ("INVOICE_FINALISED", "هذه الفاتورة مغلقة أو مدفوعة جزئيًا، ولا تقبل هذا الإجراء."),
        ("INVOICE_INVALID_STATUS", "حالة الفاتورة لا تسمح بهذا الإجراء."),
        ("PAYMENT_FLOW_NOT_ALLOWED", "طريقة الدفع أو خطة الدفع هذه غير متاحة هنا."),
        ("INVALID_PARAMETERS", "خطة الدفع المختارة غير متاحة لهذا المبلغ."),
        ("RATE_LIMITED", "محاولات دفع فاشلة كثيرة. حاول مرة أخرى بعد 15 دقيقة."),
        ("NOT_FOUND", "لم يُعثر على ما تحاول دفعه."),
    ],
    invoice: "فاتورة رقم",
    paid_so_far: "المدفوع",
    pay_now: "المستحق الآن",
    invoice_paid: "تم دفع هذه الفاتورة بالكامل.",
    invoice_canceled: "أُلغيت هذه الفاتورة.",
    invoice_rejected: "تم رفض هذه الفاتورة.",
    invoice_closed: "لا يمكن دفع هذه الفاتورة.",
    no_gateway: "لا يستطيع هذا التاجر قبول الدفع بالبطاقة أو المحفظة بعد.",
    invoice_not_found: "الفاتورة غير موجودة",
    decline: "رفض هذه الفاتورة",
    decline_reason: "السبب (اختياري)",
    decline_button: "رفض الفاتورة",
    declining: "جارٍ رفض الفاتورة…",
    renews: "التجديد",
    subscription_consent: "بالدفع تبدأ اشتراكًا: يُخصم {amount} من هذه البطاقة {every} حتى تلغيه.",
    subscription_card_kept: "هذه الفاتورة لاشتراك: عند الدفع بالبطاقة تُحفظ البطاقة ويُخصم منها {amount} {every} حتى تلغي الاشتراك.",
};

const EN: Texts = Texts {
    checkout: "Checkout",
    summary: "Order summary",
    item: "Item",
    qty: "Qty",
    amount: "Amount",
    subtotal: "Subtotal",
    discount: "Discount",
    vat: "VAT",
    vat_included: "VAT (included)",
    total: "Total",
    your_details: "Your details",
    name: "Full name",
    phone: "Mobile number",
    email: "E-mail",
    pay_with: "Pay with",
    card: "Card",
    wallet: "Mobile wallet",
    card_number: "Card number",
    card_name: "Name on card",
    expiry_month: "Expiry month",
    expiry_year: "Expiry year",
    cvc: "Security code",
    wallet_phone: "Wallet phone number",
    plan: "How to pay",
    full: "Pay in full",
    two: "2 installments",
    n_parts: "installments",
    card_only: "Installments are paid by card.",
    pay: "Pay",
    processing: "Processing your payment…",
    redirecting: "Redirecting…",
    form_error: "Please correct the marked fields.",
    network_error: "Could not reach the server. Please try again.",
    inactive: "This payment link is not active.",
    expired: "This payment link has expired.",
    completed: "This payment link is completed: it takes no more payments.",
    recurring: "This link is for a subscription with a trial period, which cannot be started here yet.",
    no_payment: "No payment will be taken.",
    not_found: "Payment link not found",
    not_found_body: "Check the address, or ask the merchant for a new link.",
    paid_title: "Payment successful",
    paid_body: "Thank you, your payment was received.",
    failed_title: "Payment failed",
    failed_body: "The payment did not go through and nothing was charged. You can try again.",
    internal_body: "Something went wrong while processing the payment. Contact support: the amount may or may not have been charged.",
    try_again: "Try again",
    reference: "Reference",
    message: "Message",
    other_language: "العربية",
    noscript: "Paying needs JavaScript enabled.",
    field_errors: &[],
    refusals: &[],
    invoice: "Invoice No.",
    paid_so_far: "Paid so far",
    pay_now: "To pay now",
    invoice_paid: "This invoice is paid in full.",
    invoice_canceled: "This invoice was canceled.",
    invoice_rejected: "This invoice was declined.",
    invoice_closed: "This invoice cannot be paid.",
    no_gateway: "This merchant cannot take card or wallet payments yet.",
    invoice_not_found: "Invoice not found",
    decline: "Decline this invoice",
    decline_reason: "Reason (optional)",
    decline_button: "Decline the invoice",
    declining: "Declining the invoice…",
    renews: "Renews",
    subscription_consent: "Paying starts a subscription: {amount} is charged to this card {every} until you cancel it.",
    subscription_card_kept:
        "This invoice is for a subscription: paid by card, the card is kept and charged {amount} {every} until you cancel the subscription.",
};

/// The page's language (`?language=`, Arabic by default; anything unknown is Arabic too) and
/// whether it is embedded (`?embed=true`).
fn options(r: &Request) -> (Language, bool) {
    let lang = r.query.get("language").and_then(|l| Language::parse(l).ok()).unwrap_or_default();
    (lang, r.query.get("embed") == Some("true"))
}

fn texts(lang: Language) -> &'static Texts {
    match lang {
        Language::Ar => &AR,
        Language::En => &EN,
    }
}

/// How often a subscription renews, in words: "every month", "every 3 weeks", "شهريًا".
fn every(lang: Language, interval: RecurringInterval, n: u32) -> String {
    use RecurringInterval::*;
    match lang {
        Language::En => {
            let (one, many) = match interval {
                Week => ("week", "weeks"),
                Month => ("month", "months"),
                Quarter => ("quarter", "quarters"),
                Semester => ("6 months", "half-years"),
                Year => ("year", "years"),
            };
            if n == 1 {
                format!("every {one}")
            } else {
                format!("every {n} {many}")
            }
        }
        Language::Ar => match (interval, n) {
            (Week, 1) => "أسبوعيًا".into(),
            (Month, 1) => "شهريًا".into(),
            (Quarter, 1) => "كل ثلاثة أشهر".into(),
            (Semester, 1) => "كل ستة أشهر".into(),
            (Year, 1) => "سنويًا".into(),
            (Week, 2) => "كل أسبوعين".into(),
            (Month, 2) => "كل شهرين".into(),
            (Year, 2) => "كل سنتين".into(),
            (Week, n) => format!("كل {n} أسابيع"),
            (Month, n) => format!("كل {n} أشهر"),
            (Quarter, n) => format!("كل {} أشهر", 3 * n),
            (Semester, n) => format!("كل {} أشهر", 6 * n),
            (Year, n) => format!("كل {n} سنوات"),
        },
    }
}

fn money(m: Money) -> String {
    format!("{m} {}", m.currency().code())
}

/// The document around `main`.
fn document(lang: Language, embed: bool, title: &str, main: &str, switch_href: &str) -> String {
    let t = texts(lang);
    let (code, dir) = match lang {
        Language::Ar => ("ar", "rtl"),
        Language::En => ("en", "ltr"),
    };
    let other = match lang {
        Language::Ar => "en",
        Language::En => "ar",
    };
    let embed_q = if embed { "&amp;embed=true" } else { "" };
    format!(
        "<!doctype html>\n<html lang=\"{code}\" dir=\"{dir}\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"referrer\" content=\"no-referrer\">\n\
<title>{title}</title>\n<link rel=\"stylesheet\" href=\"/pay/assets/checkout.css\">\n\
<script src=\"/pay/assets/checkout.js\" defer></script>\n</head>\n<body data-embed=\"{embed}\">\n\
<nav class=\"lang\"><a href=\"{switch_href}?language={other}{embed_q}\" lang=\"{other}\" hreflang=\"{other}\">{other_name}</a></nav>\n\
<main class=\"sheet\">\n{main}</main>\n</body>\n</html>\n",
        title = esc(title),
        other_name = t.other_language,
    )
}

fn html(status: u16, embed: bool, body: String) -> Reply {
    Reply::Page(Page::html(status, embed, body))
}

/// A page that takes no payment: a title and a message.
fn notice(lang: Language, embed: bool, status: u16, title: &str, lines: &[&str], switch_href: &str) -> Reply {
    let mut main = format!("<h1>{}</h1>\n", esc(title));
    for l in lines.iter().filter(|l| !l.is_empty()) {
        let _ = writeln!(main, "<p class=\"notice\">{}</p>", esc(l));
    }
    html(status, embed, document(lang, embed, title, &main, switch_href))
}

/// What is not found: a link (`Some(short id)`) or an invoice (`None`).
fn not_found(lang: Language, embed: bool, path: &str, link: bool) -> Reply {
    let t = texts(lang);
    let title = if link { t.not_found } else { t.invoice_not_found };
    notice(lang, embed, 404, title, &[t.not_found_body], &esc(path))
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
    found(b.checkout_page(short_id))
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
        Some(id) => found(b.invoice_pay_page(id)),
        None => Ok(None),
    }
}

fn page(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let (lang, embed) = options(&r);
    let short_id = r.param("short_id");
    match found(b.checkout_page_with(short_id, &quantities(&r)))? {
        Some(p) => Ok(render(&p, lang, embed)),
        None => Ok(not_found(lang, embed, &format!("/pay/{short_id}"), true)),
    }
}

/// `GET /pay/invoices/{id}`: the invoice's pay page (the link page's components).
fn invoice_page(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let (lang, embed) = options(&r);
    match load_invoice(b, &r)? {
        Some(p) => Ok(render(&p, lang, embed)),
        None => Ok(not_found(lang, embed, &format!("/pay/invoices/{}", r.param("invoice_id")), false)),
    }
}

/// The page's heading: the link's name, or the organization's with the invoice's number.
fn title_of(p: &CheckoutPage, t: &Texts) -> String {
    match p.invoice_number {
        Some(n) => format!("{} {n} · {}", t.invoice, p.name),
        None => p.name.clone(),
    }
}

/// A link's or an invoice's page: the form when it takes a payment, else why not.
fn render(p: &CheckoutPage, lang: Language, embed: bool) -> Reply {
    let t = texts(lang);
    let href = esc(&p.path);
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
        return notice(lang, embed, 200, &title_of(p, t), &[why, message, last], &href);
    }
    let main = checkout_main(p, lang, t);
    html(200, embed, document(lang, embed, &format!("{} · {}", title_of(p, t), t.checkout), &main, &href))
}

/// One labelled input with its error line: `id` is the JSON field's location after `body`
/// (`method-number` for `["body", "method", "number"]`), which the script maps 422s onto.
fn field(out: &mut String, t: &Texts, id: &str, label: &str, attrs: &str) {
    let msg = match t.field_errors.iter().find(|(f, _)| *f == id) {
        Some((_, m)) => format!(" data-msg=\"{}\"", esc(m)),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "<div class=\"field\"><label for=\"{id}\">{label}</label>\
<input id=\"{id}\" name=\"{id}\" {attrs} aria-describedby=\"err-{id}\">\
<p class=\"field-error\" id=\"err-{id}\" aria-live=\"polite\"{msg}></p></div>",
        label = esc(label),
    );
}

fn checkout_main(p: &CheckoutPage, lang: Language, t: &Texts) -> String {
    let mut m = String::new();
    let _ = writeln!(m, "<h1>{}</h1>", esc(&title_of(p, t)));
    if let Some(d) = p.description.as_deref().filter(|d| !d.is_empty()) {
        let _ = writeln!(m, "<p class=\"description\">{}</p>", esc(d));
    }
    // The summary.
    let _ = write!(
        m,
        "<section class=\"summary\" aria-labelledby=\"summary-title\">\n<h2 id=\"summary-title\">{}</h2>\n\
<table class=\"items\">\n<thead><tr><th scope=\"col\">{}</th><th scope=\"col\" class=\"num\">{}</th><th scope=\"col\" class=\"num\">{}</th></tr></thead>\n<tbody>\n",
        t.summary, t.item, t.qty, t.amount
    );
    for it in &p.items {
        // A quantity the payer chooses: changing it loads the page priced with it.
        let qty = match it.custom {
            Some(c) => format!(
                "<input type=\"number\" class=\"qty\" id=\"qty-{id}\" name=\"qty-{id}\" data-item=\"{id}\" min=\"{min}\" max=\"{max}\" \
value=\"{q}\" inputmode=\"numeric\" dir=\"ltr\" aria-label=\"{label}\">",
                id = c.item_id,
                min = c.min,
                max = c.max,
                q = it.quantity,
                label = esc(&format!("{} — {}", t.qty, it.name)),
            ),
            None => it.quantity.to_string(),
        };
        let _ = writeln!(
            m,
            "<tr><td>{}</td><td class=\"num\">{qty}</td><td class=\"num\"><bdi>{}</bdi></td></tr>",
            esc(&it.name),
            money(it.amount)
        );
    }
    m.push_str("</tbody>\n</table>\n<dl class=\"totals\">\n");
    let row = |m: &mut String, class: &str, k: &str, v: String| {
        let _ = writeln!(m, "<div class=\"{class}\"><dt>{}</dt><dd><bdi>{v}</bdi></dd></div>", esc(k));
    };
    row(&mut m, "subtotal", t.subtotal, money(p.subtotal));
    for c in &p.coupons {
        row(&mut m, "coupon", &format!("{} ({})", t.discount, c.name), format!("−{}", money(c.discount)));
    }
    row(&mut m, "vat", if p.vat_included { t.vat_included } else { t.vat }, money(p.vat));
    row(&mut m, "total", t.total, money(p.total));
    if !p.paid.is_zero() {
        row(&mut m, "paid", t.paid_so_far, money(p.paid));
    }
    if p.pay_now != p.total {
        row(&mut m, "total pay-now", t.pay_now, money(p.pay_now));
    }
    if let Some(r) = p.renews {
        row(&mut m, "renews", t.renews, every(lang, r.interval, r.count));
    }
    m.push_str("</dl>\n</section>\n");
    // The form.
    let _ = write!(
        m,
        "<form id=\"pay-form\" class=\"pay\" method=\"post\" action=\"{path}/attempts\" novalidate \
data-language=\"{lang}\" data-processing=\"{processing}\" data-redirecting=\"{redirecting}\" \
data-form-error=\"{form_error}\" data-network-error=\"{network_error}\"{refusals}>\n<noscript><p class=\"notice\">{noscript}</p></noscript>\n",
        path = esc(&p.path),
        refusals = refusal_attrs(t),
        lang = lang.as_str(),
        processing = esc(t.processing),
        redirecting = esc(t.redirecting),
        form_error = esc(t.form_error),
        network_error = esc(t.network_error),
        noscript = esc(t.noscript),
    );
    if let Some(kind) = p.collect_contact {
        let _ = writeln!(m, "<fieldset class=\"contact\"><legend>{}</legend>", t.your_details);
        field(&mut m, t, "customer-name", t.name, "type=\"text\" autocomplete=\"name\" required");
        match kind {
            ContactInformationType::Phone => field(
                &mut m,
                t,
                "customer-phone_number",
                t.phone,
                "type=\"tel\" autocomplete=\"tel\" inputmode=\"tel\" dir=\"ltr\" placeholder=\"+9665XXXXXXXX\" required",
            ),
            ContactInformationType::Email => field(
                &mut m,
                t,
                "customer-email",
                t.email,
                "type=\"email\" autocomplete=\"email\" dir=\"ltr\" required",
            ),
        }
        m.push_str("</fieldset>\n");
    }
    // A subscription is paid by card only (its renewals are charged to it): no choice to make.
    let wallet_choice = if p.wallet {
        format!(
            "<label class=\"choice\"><input type=\"radio\" name=\"method-type\" id=\"method-type-wallet\" value=\"wallet\"> {}</label>",
            t.wallet
        )
    } else {
        String::new()
    };
    let _ = write!(
        m,
        "<fieldset class=\"methods\"><legend>{}</legend>\n<div class=\"choices\">\
<label class=\"choice\"><input type=\"radio\" name=\"method-type\" id=\"method-type-card\" value=\"card\" checked> {}</label>\
{wallet_choice}</div>\n",
        t.pay_with, t.card
    );
    m.push_str("<div id=\"card-fields\">\n");
    field(
        &mut m,
        t,
        "method-number",
        t.card_number,
        "type=\"text\" inputmode=\"numeric\" autocomplete=\"cc-number\" dir=\"ltr\" maxlength=\"23\" placeholder=\"0000 0000 0000 0000\" required",
    );
    field(
        &mut m,
        t,
        "method-name",
        t.card_name,
        "type=\"text\" autocomplete=\"cc-name\" dir=\"ltr\" required",
    );
    m.push_str("<div class=\"row3\">\n");
    field(
        &mut m,
        t,
        "method-expiry_month",
        t.expiry_month,
        "type=\"text\" inputmode=\"numeric\" autocomplete=\"cc-exp-month\" dir=\"ltr\" maxlength=\"2\" placeholder=\"MM\" required",
    );
    field(
        &mut m,
        t,
        "method-expiry_year",
        t.expiry_year,
        "type=\"text\" inputmode=\"numeric\" autocomplete=\"cc-exp-year\" dir=\"ltr\" maxlength=\"4\" placeholder=\"YYYY\" required",
    );
    field(
        &mut m,
        t,
        "method-cvc",
        t.cvc,
        "type=\"password\" inputmode=\"numeric\" autocomplete=\"cc-csc\" dir=\"ltr\" maxlength=\"4\" placeholder=\"CVC\" required",
    );
    m.push_str("</div>\n</div>\n");
    if p.wallet {
        m.push_str("<div id=\"wallet-fields\" hidden>\n");
        field(
            &mut m,
            t,
            "method-phone_number",
            t.wallet_phone,
            "type=\"tel\" inputmode=\"tel\" autocomplete=\"tel\" dir=\"ltr\" placeholder=\"+9665XXXXXXXX\"",
        );
        m.push_str("</div>\n");
    }
    m.push_str("</fieldset>\n");
    if !p.installments.is_empty() {
        let _ = write!(
            m,
            "<fieldset class=\"plans\" id=\"plans\"><legend>{}</legend>\n\
<label class=\"plan\"><input type=\"radio\" name=\"installments\" id=\"installments-1\" value=\"1\" checked> <span>{}</span> <span class=\"parts\" dir=\"ltr\">{}</span></label>\n",
            t.plan,
            t.full,
            money(p.total)
        );
        for o in &p.installments {
            let label = match o.count {
                2 => t.two.to_string(),
                n => format!("{n} {}", t.n_parts),
            };
            let parts: Vec<String> = o.parts.iter().map(|m| m.to_string()).collect();
            let _ = writeln!(
                m,
                "<label class=\"plan\"><input type=\"radio\" name=\"installments\" id=\"installments-{n}\" value=\"{n}\"> <span>{label}</span> \
<span class=\"parts\" dir=\"ltr\">{parts} {cur}</span></label>",
                n = o.count,
                label = esc(&label),
                parts = parts.join(" + "),
                cur = p.currency.code(),
            );
        }
        let _ = writeln!(m, "<p class=\"hint\" id=\"card-only\" hidden>{}</p>\n</fieldset>", t.card_only);
    }
    if let Some(r) = p.renews {
        // A link starts the subscription; an invoice's page pays one that exists.
        let words = if p.invoice_number.is_some() {
            t.subscription_card_kept
        } else {
            t.subscription_consent
        };
        let consent = words
            .replace("{amount}", &format!("\u{2068}{}\u{2069}", money(r.amount)))
            .replace("{every}", &every(lang, r.interval, r.count));
        let _ = writeln!(m, "<p class=\"hint consent\" id=\"subscription-consent\">{}</p>", esc(&consent));
    }
    let _ = write!(
        m,
        "<p class=\"form-error\" id=\"form-error\" role=\"alert\" hidden></p>\n\
<button type=\"submit\" id=\"pay-button\" class=\"pay-button\">{} <bdi>{}</bdi></button>\n\
<p class=\"progress\" id=\"progress\" role=\"status\" aria-live=\"polite\"></p>\n</form>\n",
        t.pay,
        money(p.pay_now)
    );
    if p.declinable {
        // Declining: its own small form, posted by the script to `{path}/decline`.
        let _ = write!(
            m,
            "<details class=\"decline\"><summary>{decline}</summary>\n\
<form id=\"decline-form\" method=\"post\" action=\"{path}/decline\" novalidate data-declining=\"{declining}\" \
data-network-error=\"{network_error}\" data-after=\"{path}?language={lang}\"{refusals}>\n\
<div class=\"field\"><label for=\"decline-reason\">{reason}</label>\
<textarea id=\"decline-reason\" name=\"reason\" rows=\"2\" maxlength=\"1000\"></textarea></div>\n\
<p class=\"form-error\" id=\"decline-error\" role=\"alert\" hidden></p>\n\
<button type=\"submit\" id=\"decline-button\" class=\"decline-button\">{button}</button>\n\
<p class=\"progress\" id=\"decline-progress\" role=\"status\" aria-live=\"polite\"></p>\n</form>\n</details>\n",
            decline = t.decline,
            path = esc(&p.path),
            declining = esc(t.declining),
            network_error = esc(t.network_error),
            lang = lang.as_str(),
            refusals = refusal_attrs(t),
            reason = t.decline_reason,
            button = t.decline_button,
        );
    }
    m
}

/// The page's words for refusals, as `data-refusal-<code>` attributes the script shows.
fn refusal_attrs(t: &Texts) -> String {
    let mut out = String::new();
    for (code, text) in t.refusals {
        let _ = write!(out, " data-refusal-{}=\"{}\"", code.to_ascii_lowercase().replace('_', "-"), esc(text));
    }
    out
}

fn result(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let (lang, embed) = options(&r);
    let short_id = r.param("short_id");
    match load(b, short_id)? {
        Some(p) => Ok(render_result(&p, &r, lang, embed)),
        None => Ok(not_found(lang, embed, &format!("/pay/{short_id}"), true)),
    }
}

/// `GET /pay/invoices/{id}/result`: where an invoice payment's answer sends the payer.
fn invoice_result(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let (lang, embed) = options(&r);
    match load_invoice(b, &r)? {
        Some(p) => Ok(render_result(&p, &r, lang, embed)),
        None => Ok(not_found(lang, embed, &format!("/pay/invoices/{}", r.param("invoice_id")), false)),
    }
}

/// The hosted result page of a link or an invoice: the outcome the query says, and a way back
/// to the page when it still takes a payment.
fn render_result(p: &CheckoutPage, r: &Request, lang: Language, embed: bool) -> Reply {
    let t = texts(lang);
    let status = r.query.get("status").unwrap_or_default();
    let href = format!("{}/result", esc(&p.path));
    let (title, body) = match result_is_success(status) {
        Some(true) => (t.paid_title, t.paid_body),
        _ if status == "failed_internal_error" => (t.failed_title, t.internal_body),
        _ => (t.failed_title, t.failed_body),
    };
    let success = result_is_success(status) == Some(true);
    let mut m = format!(
        "<div class=\"result {}\">\n<h1>{}</h1>\n<p class=\"link-name\">{}</p>\n<p>{}</p>\n",
        if success { "success" } else { "failure" },
        esc(title),
        esc(&title_of(p, t)),
        esc(body)
    );
    if success {
        if let Some(c) = p.confirmation_message.as_deref().filter(|c| !c.is_empty()) {
            let _ = writeln!(m, "<p class=\"confirmation\">{}</p>", esc(c));
        }
    }
    m.push_str("<dl class=\"totals\">\n");
    if let Some(msg) = r.query.get("message").filter(|v| !v.is_empty()) {
        let _ = writeln!(m, "<div><dt>{}</dt><dd dir=\"ltr\">{}</dd></div>", t.message, esc(msg));
    }
    if let Some(id) = r.query.get("id").filter(|v| !v.is_empty()) {
        let _ = writeln!(m, "<div><dt>{}</dt><dd dir=\"ltr\" class=\"reference\">{}</dd></div>", t.reference, esc(id));
    }
    m.push_str("</dl>\n");
    if !success && p.payable() {
        let _ = writeln!(
            m,
            "<p><a class=\"pay-button\" href=\"{}?language={}\">{}</a></p>",
            esc(&p.path),
            lang.as_str(),
            t.try_again
        );
    }
    m.push_str("</div>\n");
    // The language switch keeps the outcome's parameters.
    let mut keep = String::new();
    for k in [
        "id",
        "payment_link_id",
        "status",
        "message",
        "login_method",
        "invoice_id",
        "consent_id",
        "payment_id",
        "organization_consumer_id",
    ] {
        if let Some(v) = r.query.get(k) {
            let _ = write!(keep, "&amp;{k}={}", esc(&billing_core::payment_link::checkout::encode(v)));
        }
    }
    let doc = document(lang, embed, title, &m, &href);
    let doc = doc.replacen(
        &format!("{href}?language={}", other(lang)),
        &format!("{href}?language={}{keep}", other(lang)),
        1,
    );
    html(200, embed, doc)
}

fn other(lang: Language) -> &'static str {
    match lang {
        Language::Ar => "en",
        Language::En => "ar",
    }
}
