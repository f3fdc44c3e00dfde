//! The texts of notifications, in Arabic and English: a subject, a plain-text body, an HTML
//! body (right-to-left for Arabic) and a short text for SMS and WhatsApp, filled from the
//! notification's payload. Every value from the payload is escaped in the HTML.

use super::Kind;
use crate::fields::Language;
use serde_json::Value;

/// A notification's texts.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub subject: String,
    /// The e-mail's plain-text part.
    pub text: String,
    /// The e-mail's HTML part.
    pub html: String,
    /// An SMS or WhatsApp message.
    pub short: String,
}

/// What every template is made of.
struct Parts {
    subject: String,
    greeting: Option<String>,
    lines: Vec<String>,
    /// The call to action: a label and an address.
    link: Option<(String, String)>,
    after: Vec<String>,
}

fn field(p: &Value, name: &str) -> String {
    match p.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    }
}

/// The date part of an RFC 3339 time (`2026-02-15`).
fn date(p: &Value, name: &str) -> String {
    let s = field(p, name);
    s.get(..10).map(str::to_string).unwrap_or(s)
}

fn role(r: &str, ar: bool) -> &'static str {
    match (r, ar) {
        ("organization_admin", true) => "مدير المنشأة",
        ("branch_admin", true) => "مدير فرع",
        (_, true) => "مستخدم فرع",
        ("organization_admin", false) => "organization admin",
        ("branch_admin", false) => "branch admin",
        (_, false) => "branch user",
    }
}

fn parts(kind: Kind, lang: Language, p: &Value) -> Parts {
    let ar = lang == Language::Ar;
    let org = field(p, "organization");
    let name = field(p, "consumer_name");
    let n = field(p, "org_invoice_number");
    let total = format!("{} {}", field(p, "total_amount"), field(p, "currency"));
    let amount = format!("{} {}", field(p, "amount"), field(p, "currency"));
    let k = field(p, "installment");
    let url = field(p, "url");
    let greeting = Some(if ar { format!("مرحباً {name}،") } else { format!("Hello {name},") });
    match (kind, ar) {
        (Kind::InvoiceSent, true) => Parts {
            subject: format!("فاتورة رقم {n} من {org}"),
            greeting,
            lines: vec![format!("أرسلت لك {org} الفاتورة رقم {n} بمبلغ {total}.")],
            link: Some(("عرض الفاتورة ودفعها".into(), url)),
            after: vec![],
        },
        (Kind::InvoiceSent, false) => Parts {
            subject: format!("Invoice {n} from {org}"),
            greeting,
            lines: vec![format!("{org} has sent you invoice {n} for {total}.")],
            link: Some(("View and pay the invoice".into(), url)),
            after: vec![],
        },
        (Kind::PaymentReceipt, true) => Parts {
            subject: format!("إيصال دفع للفاتورة رقم {n} من {org}"),
            greeting,
            lines: vec![format!("استلمت {org} دفعتك بمبلغ {amount} للفاتورة رقم {n}. شكراً لك.")],
            link: Some(("تفاصيل الفاتورة".into(), url)),
            after: vec![],
        },
        (Kind::PaymentReceipt, false) => Parts {
            subject: format!("Receipt for your payment of invoice {n} to {org}"),
            greeting,
            lines: vec![format!("{org} has received your payment of {amount} for invoice {n}. Thank you.")],
            link: Some(("Invoice details".into(), url)),
            after: vec![],
        },
        (Kind::InstallmentReminder, true) => Parts {
            subject: format!("تذكير: القسط رقم {k} مستحق في {}", date(p, "due_on")),
            greeting,
            lines: vec![format!(
                "نذكّرك بأن القسط رقم {k} من الفاتورة رقم {n} لدى {org} بمبلغ {amount} مستحق في {}، وسيُخصم من بطاقتك المحفوظة.",
                date(p, "due_on")
            )],
            link: Some(("تفاصيل الفاتورة".into(), url)),
            after: vec![],
        },
        (Kind::InstallmentReminder, false) => Parts {
            subject: format!("Reminder: installment {k} is due on {}", date(p, "due_on")),
            greeting,
            lines: vec![format!(
                "Installment {k} of invoice {n} from {org}, {amount}, is due on {}. It will be charged to your saved card.",
                date(p, "due_on")
            )],
            link: Some(("Invoice details".into(), url)),
            after: vec![],
        },
        (Kind::InstallmentFailed, true) => Parts {
            subject: format!("تعذّر تحصيل القسط رقم {k} للفاتورة رقم {n}"),
            greeting,
            lines: vec![format!("تعذّر تحصيل القسط رقم {k} من الفاتورة رقم {n} لدى {org} بمبلغ {amount}.")],
            link: Some(("ادفع القسط الآن".into(), url)),
            after: vec![],
        },
        (Kind::InstallmentFailed, false) => Parts {
            subject: format!("We could not collect installment {k} of invoice {n}"),
            greeting,
            lines: vec![format!("Installment {k} of invoice {n} from {org}, {amount}, could not be collected.")],
            link: Some(("Pay the installment now".into(), url)),
            after: vec![],
        },
        (Kind::SubscriptionRenewalFailed, true) => Parts {
            subject: format!("تعذّر تجديد اشتراكك لدى {org}"),
            greeting,
            lines: vec![format!("تعذّر تحصيل مبلغ تجديد اشتراكك لدى {org} ({total}) للفاتورة رقم {n}.")],
            link: Some(("ادفع الفاتورة".into(), url)),
            after: vec![],
        },
        (Kind::SubscriptionRenewalFailed, false) => Parts {
            subject: format!("The renewal of your subscription to {org} failed"),
            greeting,
            lines: vec![format!(
                "The renewal payment of your subscription to {org} ({total}, invoice {n}) could not be collected."
            )],
            link: Some(("Pay the invoice".into(), url)),
            after: vec![],
        },
        (Kind::OrganizationInvite, true) => Parts {
            subject: format!("دعوة للانضمام إلى {org}"),
            greeting: Some("مرحباً،".into()),
            lines: vec![format!("دُعيت للانضمام إلى {org} بصلاحية {}.", role(&field(p, "role"), true))],
            link: Some(("قبول الدعوة".into(), field(p, "accept_url"))),
            after: vec![format!("تنتهي صلاحية الدعوة في {}، ويمكن استخدام الرابط مرة واحدة.", date(p, "expire_at"))],
        },
        (Kind::OrganizationInvite, false) => Parts {
            subject: format!("You are invited to join {org}"),
            greeting: Some("Hello,".into()),
            lines: vec![format!("You are invited to join {org} as {}.", role(&field(p, "role"), false))],
            link: Some(("Accept the invitation".into(), field(p, "accept_url"))),
            after: vec![format!("The invitation expires on {} and the link works once.", date(p, "expire_at"))],
        },
    }
}

/// Escapes text for HTML content and attribute values (the e-mails'; the hosted pages are
/// escaped by their templates, in billing-server).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Whether `url` may be a link in a message: an absolute http(s) address.
fn linkable(url: &str) -> bool {
    (url.starts_with("https://") || url.starts_with("http://")) && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The texts of a notification of `kind` in `lang`, from its payload.
pub fn render(kind: Kind, lang: Language, payload: &Value) -> Rendered {
    let p = parts(kind, lang, payload);
    let ar = lang == Language::Ar;
    let org = field(payload, "organization");
    let link = p.link.filter(|(_, url)| linkable(url));
    let mut text = String::new();
    if let Some(g) = &p.greeting {
        text.push_str(g);
        text.push_str("\n\n");
    }
    for l in &p.lines {
        text.push_str(l);
        text.push('\n');
    }
    if let Some((label, url)) = &link {
        text.push_str(&format!("\n{label}: {url}\n"));
    }
    for l in &p.after {
        text.push('\n');
        text.push_str(l);
        text.push('\n');
    }
    text.push_str(&format!("\n{org}\n"));
    let (lang_attr, dir, align) = if ar { ("ar", "rtl", "right") } else { ("en", "ltr", "left") };
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"{lang_attr}\" dir=\"{dir}\">\n<head><meta charset=\"utf-8\"><title>{}</title></head>\n\
<body dir=\"{dir}\" style=\"font-family:Tahoma,Arial,sans-serif;font-size:15px;line-height:1.6;color:#222;direction:{dir};text-align:{align};margin:0;padding:24px\">\n",
        esc(&p.subject)
    );
    if let Some(g) = &p.greeting {
        html.push_str(&format!("<p>{}</p>\n", esc(g)));
    }
    for l in &p.lines {
        html.push_str(&format!("<p>{}</p>\n", esc(l)));
    }
    if let Some((label, url)) = &link {
        html.push_str(&format!(
            "<p><a href=\"{}\" style=\"display:inline-block;padding:10px 18px;background:#0b5cad;color:#fff;text-decoration:none;border-radius:4px\">{}</a></p>\n\
<p style=\"font-size:12px;color:#555\"><span dir=\"ltr\">{}</span></p>\n",
            esc(url),
            esc(label),
            esc(url)
        ));
    }
    for l in &p.after {
        html.push_str(&format!("<p>{}</p>\n", esc(l)));
    }
    html.push_str(&format!("<p style=\"color:#666\">{}</p>\n</body>\n</html>\n", esc(&org)));
    let mut short = p.lines.join(" ");
    if let Some((_, url)) = &link {
        short.push(' ');
        short.push_str(url);
    }
    Rendered {
        subject: p.subject,
        text,
        html,
        short,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_renders_in_both_languages_with_its_link() {
        let p = json!({
            "organization": "Acme <Co>", "consumer_name": "Sara", "org_invoice_number": 7,
            "total_amount": "115.00", "amount": "57.50", "currency": "SAR", "installment": 2,
            "url": "https://pay.example.com/pay/invoices/x", "due_on": "2026-03-01T00:00:00Z",
            "role": "branch_user", "expire_at": "2026-03-08T09:00:00Z", "accept_url": "https://x.example/invite/accept?token=t",
        });
        for kind in Kind::ALL {
            for lang in [Language::Ar, Language::En] {
                let r = render(*kind, lang, &p);
                let link = if *kind == Kind::OrganizationInvite {
                    "https://x.example/invite/accept?token=t"
                } else {
                    "https://pay.example.com/pay/invoices/x"
                };
                assert!(r.text.contains(link) && r.short.contains(link), "{kind} {lang:?}: {r:?}");
                assert!(r.html.contains(&format!("href=\"{link}\"")), "{kind} {lang:?}");
                assert!(!r.html.contains("<Co>") && r.html.contains("Acme &lt;Co&gt;"), "escaped: {kind}");
                assert!(r.text.contains("Acme <Co>"));
                let rtl = r.html.contains("dir=\"rtl\"") && r.html.contains("lang=\"ar\"");
                assert_eq!(rtl, lang == Language::Ar, "{kind} {lang:?}");
                assert!(!r.subject.is_empty());
            }
        }
        assert!(render(Kind::InvoiceSent, Language::Ar, &p).subject.contains("فاتورة"));
        assert!(render(Kind::InvoiceSent, Language::En, &p).subject.starts_with("Invoice 7 from"));
    }

    #[test]
    fn a_link_that_is_not_http_is_left_out() {
        let p = json!({"url": "javascript:alert(1)", "organization": "A"});
        let r = render(Kind::InvoiceSent, Language::En, &p);
        assert!(!r.html.contains("javascript:") && !r.text.contains("javascript:"));
    }
}
