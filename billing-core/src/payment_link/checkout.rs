//! The checkout's side of paying a link: the request a page (or any client) sends, the
//! outcome it gets, and the address the payer is sent to afterwards with the spec's query
//! parameters (Hosted checkout: `id`, `payment_link_id`, `status`, `message`, `login_method`,
//! and on success `invoice_id`, `consent_id`, `payment_id`, `organization_consumer_id`).

use super::{ContactInformationType, PaymentLink};
use crate::error::{LocPart, Problems, Result};
use crate::fields::{Email, Language, PhoneNumber};
use crate::ids::{ConsumerId, InvoiceId, PaymentId, PaymentLinkId, PaymentLinkItemId};
use crate::payment::gateway::CardDetails;
use crate::wire::Body;
use serde_json::Value;
use uuid::Uuid;

pub use super::view::PayAttemptResponse;
pub use super::PayStatus;

crate::service!(
    /// The public checkout (no credentials: a link's short id is the capability): the hosted
    /// page of a link ([`Self::page`], in `page.rs`) and paying it ([`Self::pay`], in `pay.rs`).
    Checkout
);

/// Who pays, as the payer typed it (asked only when the link has no consumer).
#[derive(Debug, Clone, PartialEq)]
pub struct Customer {
    pub name: String,
    pub phone_number: Option<PhoneNumber>,
    pub email: Option<Email>,
}

/// How the payer pays: a card typed into the form (never stored or logged: see
/// [`CardDetails`]'s `Debug`), or a mobile wallet by phone number.
#[derive(Debug, Clone, PartialEq)]
pub enum PayMethod {
    Card(CardDetails),
    Wallet(PhoneNumber),
}

/// `POST /pay/{short_id}/attempts`, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct PayRequest {
    pub customer: Option<Customer>,
    pub method: PayMethod,
    /// 1 (in full), 2, 3 or 4.
    pub installments: u8,
    /// The page's language: it picks the hosted result page's, nothing else.
    pub language: Language,
    /// Quantities the payer chose for items that allow a custom quantity (item id, quantity);
    /// empty: the link's quantities.
    pub items: Vec<(PaymentLinkItemId, u32)>,
    /// The payer's network address (not in the body: the server sets it from the connection):
    /// failed attempts are limited per link or invoice and address
    /// ([`crate::payment::limits`]). Empty: no limit (an embedding with no connection).
    pub client: String,
}

/// The refusal of a payment when the organization takes none: live, with no gateway configured
/// ([`crate::engine::Engine::takes_payments`]).
pub(crate) fn no_gateway() -> crate::error::Error {
    crate::error::Error::rule(
        crate::error::Code::PAYMENT_FLOW_NOT_ALLOWED,
        "This organization cannot take card or wallet payments yet: no payment gateway is configured. Nothing was charged",
    )
}

/// The card form's rules (sandbox.md, Card fields) as the field error a page shows: a card that
/// breaks one is never sent to the gateway.
pub(crate) fn check_card_form(method: &PayMethod, now: crate::clock::Timestamp) -> Result<()> {
    use chrono::Datelike;
    let PayMethod::Card(card) = method else { return Ok(()) };
    let Err(field) = card.check(now.year(), now.month()) else { return Ok(()) };
    let (field, msg) = match field {
        "name" => ("name", "the name on the card should have at least two words"),
        "number" => ("number", "the card number is not valid"),
        "cvc" => ("cvc", "the security code should have 3 digits (4 for American Express)"),
        _ => ("expiry_year", "the card has expired"),
    };
    Err(crate::error::Error::invalid(crate::error::FieldError::new(
        "value_error",
        vec!["body".into(), "method".into(), field.into()],
        format!("Value error, {msg}"),
    )))
}

fn digits_of(b: &mut Body<'_>, field: &str, max: usize) -> Option<String> {
    let raw = match b.raw(field)? {
        Value::Number(n) => n.to_string(),
        _ => b.opt_str(field)?,
    };
    let d: String = raw.chars().filter(|c| !c.is_whitespace() && *c != '-').collect();
    if d.is_empty() || d.len() > max || !d.bytes().all(|c| c.is_ascii_digit()) {
        b.fail("value_error", field, "Value error, digits expected");
        return None;
    }
    Some(d)
}

fn parse_method(v: &Value, loc: Vec<LocPart>, problems: &mut Problems) -> Option<PayMethod> {
    let mut b = Body::at(v, loc);
    let kind = b.req_str("type");
    let method = match kind.as_deref() {
        Some("card") => {
            let number = if b.raw("number").is_none() {
                b.req_str("number")
            } else {
                digits_of(&mut b, "number", 19)
            };
            let name = b.req_text("name", 255);
            let month = match b.req_int("expiry_month") {
                Some(m) if (1..=12).contains(&m) => Some(m as u32),
                Some(_) => {
                    b.fail("value_error", "expiry_month", "Value error, a month from 1 to 12 expected");
                    None
                }
                None => None,
            };
            let year = b.req_int("expiry_year");
            let cvc = if b.raw("cvc").is_none() {
                b.req_str("cvc")
            } else {
                digits_of(&mut b, "cvc", 4)
            };
            // A two-digit year is this century's.
            let year = year.and_then(|y| u32::try_from(y).ok()).map(|y| if y < 100 { 2000 + y } else { y });
            match (number, name, month, year, cvc) {
                (Some(number), Some(name), Some(expiry_month), Some(expiry_year), Some(cvc)) => Some(PayMethod::Card(CardDetails {
                    name,
                    number,
                    expiry_month,
                    expiry_year,
                    cvc,
                })),
                _ => None,
            }
        }
        Some("wallet") => {
            if b.raw("phone_number").is_none() {
                b.req_str("phone_number");
                None
            } else {
                b.opt_parsed("phone_number", PhoneNumber::parse).map(PayMethod::Wallet)
            }
        }
        Some(_) => {
            b.fail("enum", "type", "Input should be 'card' or 'wallet'");
            None
        }
        None => None,
    };
    let ok = b.problems.is_empty();
    problems.0.extend(b.problems.0);
    method.filter(|_| ok)
}

impl PayRequest {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let customer = b.raw("customer").and_then(|raw| {
            let mut c = Body::at(raw, b.loc("customer"));
            let customer = Customer {
                name: c.req_text("name", 255).unwrap_or_default(),
                phone_number: c.opt_parsed("phone_number", PhoneNumber::parse),
                email: c.opt_parsed("email", Email::parse),
            };
            let ok = c.problems.is_empty();
            b.problems.0.extend(c.problems.0);
            ok.then_some(customer)
        });
        let method = match b.raw("method") {
            Some(raw) => {
                let loc = b.loc("method");
                parse_method(raw, loc, &mut b.problems)
            }
            None => {
                b.req_str("method");
                None
            }
        };
        let installments = match b.opt_int("installments") {
            None => Some(1),
            Some(n @ 1..=4) => Some(n as u8),
            Some(_) => {
                b.fail("value_error", "installments", "Value error, 1, 2, 3 or 4 expected");
                None
            }
        };
        let language = b.opt_parsed("language", Language::parse).unwrap_or_default();
        let items = b
            .opt_list("items", |v, loc, problems| {
                let mut i = Body::at(v, loc);
                let id = i.req_uuid::<PaymentLinkItemId>("payment_link_item_id");
                let quantity = match i.req_int("quantity") {
                    Some(q) if (1..=i64::from(u32::MAX)).contains(&q) => Some(q as u32),
                    Some(_) => {
                        i.fail("greater_than_equal", "quantity", "Input should be greater than or equal to 1");
                        None
                    }
                    None => None,
                };
                let ok = i.problems.is_empty();
                problems.0.extend(i.problems.0);
                id.zip(quantity).filter(|_| ok)
            })
            .unwrap_or_default();
        b.finish()?;
        Ok(PayRequest {
            customer,
            method: method.expect("checked"),
            installments: installments.expect("checked"),
            language,
            items,
            client: String::new(),
        })
    }
}

/// What paying a link came to.
#[derive(Debug, Clone, PartialEq)]
pub struct PayOutcome {
    pub status: PayStatus,
    /// The gateway's status message (`APPROVED`, `INSUFFICIENT FUNDS`, …).
    pub message: String,
    /// The gateway reference of the attempt (the redirect's `id`: for support only).
    pub reference: String,
    /// The link paid (none when an invoice was paid from its page).
    pub link_id: Option<PaymentLinkId>,
    /// How the link's payer identified (none for an invoice, which has its consumer).
    pub login_method: Option<ContactInformationType>,
    pub invoice_id: Option<InvoiceId>,
    pub payment_id: Option<PaymentId>,
    /// The saved card's id: the payer's consent to charge the later installments.
    pub consent_id: Option<Uuid>,
    pub consumer_id: Option<ConsumerId>,
    /// Where the payer goes now: the link's success or failure URL, or the hosted result page,
    /// with the spec's query parameters.
    pub redirect_url: String,
}

impl PayOutcome {
    pub fn is_success(&self) -> bool {
        matches!(self.status, PayStatus::Paid | PayStatus::Pending)
    }

    /// The spec's redirect query parameters, in its order (success-only ones when present).
    pub fn query_params(&self) -> Vec<(&'static str, String)> {
        let mut q = vec![("id", self.reference.clone())];
        if let Some(l) = self.link_id {
            q.push(("payment_link_id", l.to_string()));
        }
        q.push(("status", self.status.as_str().to_string()));
        q.push(("message", self.message.clone()));
        if let Some(m) = self.login_method {
            q.push(("login_method", m.as_str().to_string()));
        }
        if self.is_success() {
            let opt = |v: Option<String>| v.unwrap_or_default();
            q.push(("invoice_id", opt(self.invoice_id.map(|x| x.to_string()))));
            q.push(("consent_id", opt(self.consent_id.map(|x| x.to_string()))));
            q.push(("payment_id", opt(self.payment_id.map(|x| x.to_string()))));
            q.push(("organization_consumer_id", opt(self.consumer_id.map(|x| x.to_string()))));
            q.retain(|(_, v)| !v.is_empty());
        }
        q
    }

    /// Sets [`Self::redirect_url`]: the link's success or failure URL, else the hosted result
    /// page (`{public URL}/pay/{short id}/result`, with the page's `language`).
    pub(crate) fn with_redirect(mut self, link: &PaymentLink, public_url: &str, language: Language) -> Self {
        let target = if self.is_success() {
            link.checkout.success_redirect_url.as_deref()
        } else {
            link.checkout.failure_redirect_url.as_deref()
        };
        let mut params = self.query_params();
        let base = match target {
            Some(u) => u.to_string(),
            None => {
                params.push(("language", language.as_str().to_string()));
                format!("{}/result", link.url(public_url))
            }
        };
        self.redirect_url = append_query(&base, &params);
        self
    }

    /// Sets [`Self::redirect_url`] for an invoice paid from its page: the hosted result page
    /// (`{public URL}/pay/invoices/{id}/result`, with the page's `language`).
    pub(crate) fn with_invoice_redirect(mut self, invoice: InvoiceId, public_url: &str, language: Language) -> Self {
        let mut params = self.query_params();
        params.push(("language", language.as_str().to_string()));
        self.redirect_url = append_query(&format!("{public_url}/pay/invoices/{invoice}/result"), &params);
        self
    }

    /// What the attempts endpoint answers.
    pub fn response(&self) -> PayAttemptResponse<'_> {
        PayAttemptResponse {
            message: &self.message,
            redirect_url: &self.redirect_url,
            status: self.status,
        }
    }
}

/// Percent-encodes a query value (everything but RFC 3986's unreserved characters).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `base` with `params` added to its query (before any fragment).
pub fn append_query(base: &str, params: &[(&str, String)]) -> String {
    let (head, fragment) = match base.split_once('#') {
        Some((h, f)) => (h, Some(f)),
        None => (base, None),
    };
    let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={}", encode(v))).collect();
    let sep = match head.find('?') {
        None => "?",
        Some(_) if head.ends_with('?') || head.ends_with('&') => "",
        Some(_) => "&",
    };
    let mut out = format!("{head}{sep}{}", query.join("&"));
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn query_goes_before_the_fragment() {
        let p = [("status", "paid".to_string()), ("message", "A B&C".to_string())];
        assert_eq!(append_query("https://x.example/ok", &p), "https://x.example/ok?status=paid&message=A%20B%26C");
        assert_eq!(
            append_query("https://x.example/ok?o=1#top", &p),
            "https://x.example/ok?o=1&status=paid&message=A%20B%26C#top"
        );
        assert_eq!(append_query("https://x.example/ok?", &p[..1]), "https://x.example/ok?status=paid");
    }

    #[test]
    fn parses_cards_and_wallets() {
        let card =
            json!({"method": {"type": "card", "number": "4111 1111 1111 1111", "name": "Sara Harbi", "expiry_month": 12, "expiry_year": 30, "cvc": "123"}});
        let r = PayRequest::parse(&card).unwrap();
        assert_eq!((r.installments, r.language), (1, Language::Ar));
        let PayMethod::Card(c) = r.method else { panic!() };
        assert_eq!((c.number.as_str(), c.expiry_year), ("4111111111111111", 2030));
        let wallet = json!({"method": {"type": "wallet", "phone_number": "+966501234567"}, "installments": 2, "language": "en"});
        assert!(matches!(PayRequest::parse(&wallet).unwrap().method, PayMethod::Wallet(_)));
        let locs = |v: Value| match PayRequest::parse(&v) {
            Err(crate::Error::Validation(d)) => d.iter().map(|e| serde_json::to_value(&e.loc).unwrap()).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(locs(json!({})), vec![json!(["body", "method"])]);
        assert_eq!(
            locs(json!({"method": {"type": "card", "number": "41x1", "name": "A B", "expiry_month": 13, "expiry_year": 2030, "cvc": "12"}, "installments": 5})),
            vec![
                json!(["body", "method", "number"]),
                json!(["body", "method", "expiry_month"]),
                json!(["body", "installments"])
            ]
        );
        assert_eq!(locs(json!({"method": {"type": "cash"}})), vec![json!(["body", "method", "type"])]);
        assert_eq!(
            locs(json!({"method": {"type": "wallet", "phone_number": "05"}, "customer": {"email": "x"}})),
            vec![
                json!(["body", "customer", "name"]),
                json!(["body", "customer", "email"]),
                json!(["body", "method", "phone_number"])
            ]
        );
    }
}
