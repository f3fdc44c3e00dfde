//! The invoice pay page and its JSON endpoints (no credentials): GET /pay/invoices/{id} and
//! …/result, POST /pay/invoices/{id}/attempts (every sandbox card outcome and wallet range,
//! installments 2/3/4 with exact amounts and later ones on the sandbox clock, what is created
//! and what is not on failure, concurrent attempts) and POST /pay/invoices/{id}/decline.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::{Resp, TestServer};
use billing_core::money::Money;
use billing_core::payment::gateway::{CardDetails, GatewayOutcome, PaymentGateway, SandboxGateway};
use billing_core::store::Store;
use hyper::Method;
use serde_json::{json, Value};

const PAID: &str = "4111111111111111";

pub fn card(number: &str) -> Value {
    json!({"type": "card", "number": number, "name": "Sara Al-Harbi", "expiry_month": 12, "expiry_year": 2030, "cvc": "123"})
}

pub fn body(method: Value, installments: u8) -> Value {
    json!({"method": method, "installments": installments, "language": "en"})
}

fn id_str(inv: &Value) -> &str {
    inv["id"].as_str().unwrap()
}

/// The attempt, with no credentials at all.
pub fn attempt(srv: &TestServer, inv: &Value, body: Value) -> Resp {
    srv.raw(
        Method::POST,
        &format!("/pay/invoices/{}/attempts", id_str(inv)),
        &[("content-type", "application/json")],
        Some(serde_json::to_vec(&body).unwrap()),
    )
}

fn decline(srv: &TestServer, inv: &Value, body: Option<Value>) -> Resp {
    srv.raw(
        Method::POST,
        &format!("/pay/invoices/{}/decline", id_str(inv)),
        &[("content-type", "application/json")],
        body.map(|b| serde_json::to_vec(&b).unwrap()),
    )
}

fn page(srv: &TestServer, path: &str) -> Resp {
    srv.raw(Method::GET, path, &[], None)
}

/// An invoice of one product at `price` (VAT-inclusive: the total is the price).
pub fn invoice_at(srv: &TestServer, price: &str) -> Value {
    simple_invoice(srv, price)
}

fn get_invoice(srv: &TestServer, inv: &Value) -> Value {
    ok(srv.get(&invoice_path(id_str(inv))))
}

fn params(url: &str) -> Vec<(String, String)> {
    let q = url.split_once('?').map(|x| x.1).unwrap_or("");
    billing_core::list::QueryParams::parse(q).0
}

fn param(url: &str, k: &str) -> Option<String> {
    params(url).into_iter().find(|(n, _)| n == k).map(|(_, v)| v)
}

fn statuses(inv: &Value) -> Vec<String> {
    inv["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["current_status"].as_str().unwrap().to_string())
        .collect()
}

fn amounts(inv: &Value) -> Vec<String> {
    inv["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["amount"].as_str().unwrap().to_string())
        .collect()
}

/// The saved cards of the organization (network and last four).
fn saved_cards(srv: &TestServer, consumer: &str) -> usize {
    let c: billing_core::ids::ConsumerId = consumer.parse().unwrap();
    srv.app
        .billing
        .engine()
        .store
        .read(|tx| Ok(tx.latest_active_card(c)?))
        .unwrap()
        .into_iter()
        .count()
}

fn new_event_types(srv: &TestServer, from: usize) -> Vec<String> {
    events(srv)[from..].iter().map(|e| e.0.clone()).collect()
}

/// The sandbox, counting the voids it is asked for (by reference).
#[derive(Default)]
struct Voids(std::sync::Mutex<Vec<String>>);

impl PaymentGateway for Voids {
    fn charge_card(&self, reference: &str, card: &CardDetails, amount: Money) -> GatewayOutcome {
        SandboxGateway.charge_card(reference, card, amount)
    }
    fn card_token(&self, reference: &str, card: &CardDetails) -> Option<String> {
        SandboxGateway.card_token(reference, card)
    }
    fn charge_token(&self, reference: &str, token: &str, amount: Money) -> GatewayOutcome {
        SandboxGateway.charge_token(reference, token, amount)
    }
    fn refund(&self, reference: &str, transaction: &str, amount: Money) -> GatewayOutcome {
        SandboxGateway.refund(reference, transaction, amount)
    }
    fn void(&self, reference: &str) -> GatewayOutcome {
        self.0.lock().unwrap().push(reference.to_string());
        SandboxGateway.void(reference)
    }
}

fn card_outcomes(srv: &TestServer) {
    let voids = std::sync::Arc::new(Voids::default());
    srv.app.billing.engine().set_sandbox_gateway(voids.clone());
    let table = [
        ("4201320111111010", "paid", "APPROVED"),
        ("4201320000013020", "failed", "UNSPECIFIED FAILURE"),
        ("4201320000311101", "failed", "INSUFFICIENT FUNDS"),
        ("4201320131000508", "failed", "DECLINED: LOST CARD"),
        ("4201321234411220", "failed", "DECLINED"),
        ("4201322267774310", "failed", "DECLINED: EXPIRED CARD"),
        ("4201326324640570", "failed", "DECLINED: EXCEEDS WITHDRAWAL LIMIT"),
        ("4201321144311528", "failed", "DECLINED: STOLEN CARD"),
        ("4111111111111111", "paid", "APPROVED"),
        ("4123120000000000", "failed", "UNSPECIFIED FAILURE"),
        ("4123120001090000", "failed", "INSUFFICIENT FUNDS"),
        ("4123120001090109", "failed", "DECLINED"),
        ("5421080101000000", "paid", "APPROVED"),
        ("5105105105105100", "failed", "UNSPECIFIED FAILURE"),
        ("5457210001000092", "failed", "INSUFFICIENT FUNDS"),
        ("4000000000000093", "failed_internal_error", "SYSTEM MALFUNCTION"),
    ];
    for (number, status, message) in table {
        let inv = invoice_at(srv, "115.00");
        let consumers_before = ids(&srv.get("/api/v2/consumers"));
        let invoices_before = ids(&srv.get("/api/v2/invoices"));
        let n = events(srv).len();
        let r = ok(attempt(srv, &inv, body(card(number), 1)));
        assert_eq!((r["status"].as_str(), r["message"].as_str()), (Some(status), Some(message)), "{number}");
        let url = r["redirect_url"].as_str().unwrap();
        assert!(url.starts_with(&format!("http://127.0.0.1/pay/invoices/{}/result?id=", id_str(&inv))), "{url}");
        assert_eq!(param(url, "status").unwrap(), status);
        assert_eq!(param(url, "message").unwrap(), message);
        assert_eq!(param(url, "language").unwrap(), "en");
        assert_eq!(param(url, "payment_link_id"), None, "no link was paid");
        assert_eq!(param(url, "login_method"), None, "the invoice has its consumer");
        assert_eq!(ids(&srv.get("/api/v2/consumers")), consumers_before, "no consumer is created");
        assert_eq!(ids(&srv.get("/api/v2/invoices")), invoices_before, "no invoice is created");
        let now = get_invoice(srv, &inv);
        assert_eq!(now["payments"].as_array().unwrap().len(), 1);
        if status == "paid" {
            let names: Vec<String> = params(url).into_iter().map(|p| p.0).collect();
            assert_eq!(
                names,
                ["id", "status", "message", "invoice_id", "payment_id", "organization_consumer_id", "language"]
            );
            assert_eq!(param(url, "invoice_id").unwrap(), id_str(&inv));
            assert_eq!(param(url, "payment_id").as_deref(), now["payments"][0]["id"].as_str());
            assert_eq!(param(url, "organization_consumer_id").as_deref(), inv["organization_consumer_id"].as_str());
            assert_eq!((now["status"].as_str(), now["paid_amount"].as_str()), (Some("COMPLETED"), Some("115.00")));
            assert_eq!(statuses(&now), ["SUCCEEDED"]);
            assert_eq!(new_event_types(srv, n), ["INVOICE_ACCEPTED", "PAYMENT_SUCCEEDED", "INVOICE_COMPLETED"]);
        } else {
            assert_eq!(param(url, "invoice_id"), None);
            assert_eq!(param(url, "payment_id"), None);
            // Accepted (the payer's choice), the payment FAILED and still payable.
            assert_eq!((now["status"].as_str(), now["paid_amount"].as_str()), (Some("ACCEPTED"), Some("0.00")));
            assert_eq!(statuses(&now), ["FAILED"]);
            assert_eq!(new_event_types(srv, n), ["INVOICE_ACCEPTED", "PAYMENT_FAILED"]);
            assert_eq!(saved_cards(srv, inv["organization_consumer_id"].as_str().unwrap()), 0, "no card is kept");
        }
        // An unclear answer (a gateway error) is voided at the gateway by its reference; a
        // decline or an approval is not.
        let reference = param(url, "id").unwrap();
        if status == "failed_internal_error" {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !voids.0.lock().unwrap().contains(&reference) {
                assert!(std::time::Instant::now() < deadline, "the charge {reference} was not voided");
                srv.app.billing.engine().run_due_work(None, 10).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        } else {
            srv.app.billing.engine().run_due_work(None, 10).unwrap();
            assert!(!voids.0.lock().unwrap().contains(&reference), "{number}: voided");
        }
    }
    // A failed payment is payable again: the next attempt pays it.
    let inv = invoice_at(srv, "115.00");
    assert_eq!(ok(attempt(srv, &inv, body(card("4123120001090000"), 1)))["status"], "failed");
    assert_eq!(ok(attempt(srv, &inv, body(card(PAID), 1)))["status"], "paid");
    let now = get_invoice(srv, &inv);
    assert_eq!((now["status"].as_str(), statuses(&now)), (Some("COMPLETED"), vec!["SUCCEEDED".to_string()]));
}

fn wallet_ranges(srv: &TestServer) {
    for (price, status, message) in [
        ("250.00", "paid", "APPROVED"),
        ("1050.00", "failed", "UNSPECIFIED FAILURE"),
        ("1150.00", "failed", "INSUFFICIENT FUNDS"),
        ("1250.00", "failed", "DECLINED: LOST CARD"),
        ("1350.00", "failed", "DECLINED"),
        ("1450.00", "failed", "DECLINED: EXPIRED CARD"),
        ("1550.00", "failed", "DECLINED: EXCEEDS WITHDRAWAL LIMIT"),
        ("1650.00", "failed", "DECLINED: STOLEN CARD"),
        ("99.99", "failed", "UNSPECIFIED FAILURE"),
    ] {
        let inv = invoice_at(srv, price);
        let r = ok(attempt(srv, &inv, body(json!({"type": "wallet", "phone_number": "+966501234567"}), 1)));
        assert_eq!((r["status"].as_str(), r["message"].as_str()), (Some(status), Some(message)), "{price}");
        let now = get_invoice(srv, &inv);
        let expected = if status == "paid" { "SUCCEEDED" } else { "FAILED" };
        assert_eq!(statuses(&now), [expected], "{price}");
    }
    // Installments are paid by card.
    let inv = invoice_at(srv, "400.00");
    let r = unchanged(srv, || attempt(srv, &inv, body(json!({"type": "wallet", "phone_number": "+966501234567"}), 2)));
    assert_error(&r, 400, "PAYMENT_FLOW_NOT_ALLOWED");
}

fn installments_exact_and_later_ones(srv: &TestServer) {
    for (n, parts) in [
        (2u8, vec!["200.00", "200.00"]),
        (3, vec!["133.33", "133.33", "133.34"]),
        (4, vec!["100.00", "100.00", "100.00", "100.00"]),
    ] {
        let inv = invoice_at(srv, "400.00");
        let r = ok(attempt(srv, &inv, body(card(PAID), n)));
        assert_eq!(r["status"], "paid");
        let url = r["redirect_url"].as_str().unwrap();
        assert!(param(url, "consent_id").is_some(), "the card is kept for the later installments: {url}");
        let now = get_invoice(srv, &inv);
        assert_eq!(amounts(&now), parts);
        let mut expected = vec!["SUCCEEDED".to_string()];
        expected.extend(std::iter::repeat_n("PENDING".to_string(), usize::from(n) - 1));
        assert_eq!(statuses(&now), expected);
        assert_eq!(
            (now["status"].as_str(), now["type"].as_str(), now["paid_amount"].as_str()),
            (Some("ACCEPTED"), Some("INSTALLMENTS"), Some(parts[0]))
        );
        assert_eq!(saved_cards(srv, inv["organization_consumer_id"].as_str().unwrap()), 1);
        // The page now charges the next installment; another plan is refused.
        let p = page(srv, &format!("/pay/invoices/{}?language=en", id_str(&inv)));
        assert!(
            p.text.contains("To pay now") && p.text.contains(&format!("Pay <bdi>{} SAR</bdi>", parts[1])),
            "{}",
            p.text
        );
        if n == 4 {
            let r = unchanged(srv, || attempt(srv, &inv, body(card(PAID), 2)));
            assert_error(&r, 400, "PAYMENT_FLOW_NOT_ALLOWED");
            // Paying the next one early from the page.
            assert_eq!(ok(attempt(srv, &inv, body(card(PAID), 1)))["status"], "paid");
            assert_eq!(statuses(&get_invoice(srv, &inv)), ["SUCCEEDED", "SUCCEEDED", "PENDING", "PENDING"]);
        }
    }
    // The later installments fall due on the sandbox clock and are charged to the kept card.
    let inv = invoice_at(srv, "400.00");
    ok(attempt(srv, &inv, body(card(PAID), 2)));
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 40 * 86_400})));
    srv.app.billing.engine().run_due_work(None, 100).unwrap();
    let now = get_invoice(srv, &inv);
    assert_eq!(statuses(&now), ["SUCCEEDED", "SUCCEEDED"]);
    assert_eq!((now["status"].as_str(), now["paid_amount"].as_str()), (Some("COMPLETED"), Some("400.00")));
    // 4 × 87.50 is below the 100 SAR minimum: refused, nothing written.
    let small = invoice_at(srv, "350.00");
    let r = unchanged(srv, || attempt(srv, &small, body(card(PAID), 4)));
    assert_error(&r, 400, "INVALID_PARAMETERS");
    let r = unchanged(srv, || attempt(srv, &small, body(card(PAID), 5)));
    assert_invalid(&r, json!(["body", "installments"]), None);
}

fn refusals_write_nothing(srv: &TestServer) {
    let inv = invoice_at(srv, "100.00");
    let path = format!("/pay/invoices/{}/attempts", id_str(&inv));
    let raw = |path: &str, b: &[u8]| srv.raw(Method::POST, path, &[], Some(b.to_vec()));
    let b = serde_json::to_vec(&body(card(PAID), 1)).unwrap();
    assert_error(&unchanged(srv, || raw("/pay/invoices/not-a-uuid/attempts", &b)), 404, "NOT_FOUND");
    let unknown = format!("/pay/invoices/{}/attempts", uuid::Uuid::new_v4());
    assert_error(&unchanged(srv, || raw(&unknown, &b)), 404, "NOT_FOUND");
    assert_invalid(&unchanged(srv, || raw(&path, b"{")), json!(["body"]), Some("json_invalid"));
    assert_invalid(&unchanged(srv, || raw(&path, b"{}")), json!(["body", "method"]), Some("missing"));
    let mut with_customer = body(card(PAID), 1);
    with_customer["customer"] = json!({"name": "Someone Else", "phone_number": "+966501234567"});
    assert_invalid(&unchanged(srv, || attempt(srv, &inv, with_customer)), json!(["body", "customer"]), None);
    for (field, value) in [
        ("number", json!("4111111111111112")),
        ("cvc", json!("1")),
        ("name", json!("Sara")),
        ("expiry_year", json!(2020)),
    ] {
        let mut c = card(PAID);
        c[field] = value;
        let r = unchanged(srv, || attempt(srv, &inv, body(c, 1)));
        assert_invalid(&r, json!(["body", "method", field]), None);
    }
    assert_error(&srv.raw(Method::GET, &path, &[], None), 405, "METHOD_NOT_ALLOWED");
    // Paid: a second payment is a duplicate.
    assert_eq!(ok(attempt(srv, &inv, body(card(PAID), 1)))["status"], "paid");
    assert_error(&unchanged(srv, || attempt(srv, &inv, body(card(PAID), 1))), 422, "DUPLICATE_PAYMENT");
    // Voided.
    let voided = invoice_at(srv, "100.00");
    ok(srv.post(&format!("{}/void", invoice_path(id_str(&voided))), json!({})));
    assert_error(&unchanged(srv, || attempt(srv, &voided, body(card(PAID), 1))), 400, "INVOICE_FINALISED");
    // Declined.
    let declined = invoice_at(srv, "100.00");
    ok(decline(srv, &declined, None));
    assert_error(&unchanged(srv, || attempt(srv, &declined, body(card(PAID), 1))), 400, "INVOICE_INVALID_STATUS");
}

/// A gateway that answers like the sandbox after a pause, so attempts overlap; counts charges.
#[derive(Default)]
pub struct Slow {
    pub charges: std::sync::atomic::AtomicUsize,
}

impl PaymentGateway for Slow {
    fn charge_card(&self, reference: &str, card: &CardDetails, amount: Money) -> GatewayOutcome {
        self.charges.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(300));
        SandboxGateway.charge_card(reference, card, amount)
    }
    fn card_token(&self, reference: &str, card: &CardDetails) -> Option<String> {
        SandboxGateway.card_token(reference, card)
    }
    fn charge_token(&self, reference: &str, token: &str, amount: Money) -> GatewayOutcome {
        SandboxGateway.charge_token(reference, token, amount)
    }
    fn refund(&self, reference: &str, transaction: &str, amount: Money) -> GatewayOutcome {
        SandboxGateway.refund(reference, transaction, amount)
    }
    fn void(&self, reference: &str) -> GatewayOutcome {
        SandboxGateway.void(reference)
    }
}

fn concurrent_attempts_charge_once(srv: &TestServer) {
    let slow = std::sync::Arc::new(Slow::default());
    srv.app.billing.engine().set_sandbox_gateway(slow.clone());
    // A double-clicked pay button (and a third click): one charge.
    for n in [1u8, 3] {
        let inv = invoice_at(srv, "400.00");
        let path = format!("/pay/invoices/{}/attempts", id_str(&inv));
        let before = slow.charges.load(std::sync::atomic::Ordering::SeqCst);
        let b = body(card(PAID), n);
        let out = concurrently(srv, (0..3).map(|_| (Method::POST, path.clone(), Some(b.clone()))).collect());
        let mut codes: Vec<u16> = out.iter().map(|o| o.0).collect();
        codes.sort();
        assert_eq!(codes, [200, 422, 422], "{out:?}");
        assert!(
            out.iter().filter(|o| o.0 == 422).all(|o| o.1["error"]["code"] == "DUPLICATE_PAYMENT"),
            "{out:?}"
        );
        assert_eq!(slow.charges.load(std::sync::atomic::Ordering::SeqCst) - before, 1, "charged once");
        let now = get_invoice(srv, &inv);
        assert_eq!(statuses(&now)[0], "SUCCEEDED");
        assert_eq!(statuses(&now).iter().filter(|s| *s == "SUCCEEDED").count(), 1);
    }
}

fn decline_with_a_reason(srv: &TestServer) {
    let inv = invoice_at(srv, "100.00");
    let n = events(srv).len();
    assert_invalid(
        &unchanged(srv, || decline(srv, &inv, Some(json!({"reason": 5})))),
        json!(["body", "reason"]),
        None,
    );
    let r = ok(decline(srv, &inv, Some(json!({"reason": "Not what I ordered"}))));
    assert_eq!(r, json!({"id": inv["id"], "status": "REJECTED"}));
    let now = get_invoice(srv, &inv);
    assert_eq!((now["status"].as_str(), statuses(&now)), (Some("REJECTED"), vec!["CANCELED".to_string()]));
    let payloads = event_payloads(srv);
    let new = &payloads[n..];
    let types: Vec<&str> = new.iter().map(|e| e["event_type"].as_str().unwrap()).collect();
    assert_eq!(types, ["PAYMENT_CANCELED", "INVOICE_REJECTED"]);
    assert_eq!(new[1]["data"]["reason"], "Not what I ordered");
    assert_eq!(new[1]["status"], "REJECTED");
    // No payment afterwards, no second decline; the page says so and offers no form.
    assert_error(&unchanged(srv, || attempt(srv, &inv, body(card(PAID), 1))), 400, "INVOICE_INVALID_STATUS");
    assert_error(&unchanged(srv, || decline(srv, &inv, None)), 400, "INVOICE_INVALID_STATUS");
    let p = page(srv, &format!("/pay/invoices/{}?language=en", id_str(&inv)));
    assert!(p.text.contains("This invoice was declined.") && !p.text.contains("pay-form"), "{}", p.text);
    // Without a reason (an empty body): `reason` is null.
    let other = invoice_at(srv, "100.00");
    ok(decline(srv, &other, None));
    assert_eq!(event_payloads(srv).last().unwrap()["data"]["reason"], Value::Null);
    // Refused once anything is paid (the first installment).
    let part = invoice_at(srv, "400.00");
    ok(attempt(srv, &part, body(card(PAID), 2)));
    assert_error(&unchanged(srv, || decline(srv, &part, Some(json!({})))), 400, "INVOICE_FINALISED");
    let p = page(srv, &format!("/pay/invoices/{}?language=en", id_str(&part)));
    assert!(!p.text.contains("decline-form"), "no decline once paid in part");
    // Unknown invoice.
    let r = srv.raw(Method::POST, &format!("/pay/invoices/{}/decline", uuid::Uuid::new_v4()), &[], None);
    assert_error(&r, 404, "NOT_FOUND");
}

fn pages_show_the_invoice(srv: &TestServer) {
    let c = quiet_consumer(srv, "Page Payer");
    let gym = id_of(&one_off_product(srv, "Gym pass", "200.00"));
    let towel = id_of(&one_off_product(srv, "Towel <b>", "100.00"));
    let ten = id_of(&percent_coupon(srv, "TEN", "10"));
    let mut b = invoice_body(&c, &[(&gym, 2), (&towel, 1)], &[&ten]);
    b["description"] = json!("March membership");
    let inv = create_invoice(srv, b);
    let path = format!("/pay/invoices/{}", id_str(&inv));
    let en = page(srv, &format!("{path}?language=en"));
    assert_eq!(en.status, 200);
    let h = &en.text;
    assert!(h.contains("<html lang=\"en\" dir=\"ltr\">"), "{h}");
    assert!(h.contains(&format!("Invoice No. {}", inv["org_invoice_number"])), "{h}");
    for s in [
        "March membership",
        "Gym pass",
        "Towel &#60;b&#62;",
        "500.00 SAR",
        "Discount (TEN)",
        "−50.00 SAR",
        "VAT (included)",
        "450.00 SAR",
        &format!("action=\"{path}/attempts\""),
        "id=\"installments-2\"",
        "225.00 + 225.00 SAR",
        "150.00 + 150.00 + 150.00 SAR",
        "id=\"decline-form\"",
        &format!("action=\"{path}/decline\""),
    ] {
        assert!(h.contains(s), "{s} missing from {h}");
    }
    assert!(h.contains("112.50 + 112.50 + 112.50 + 112.50 SAR"), "4 × 112.50 is allowed: {h}");
    assert!(!h.contains("customer-name"), "the invoice has its consumer");
    assert_eq!(en.headers.get("x-frame-options").unwrap(), "DENY");
    let ar = page(srv, &path);
    assert!(
        ar.text.contains("<html lang=\"ar\" dir=\"rtl\">") && ar.text.contains("فاتورة رقم"),
        "{}",
        ar.text
    );
    assert!(ar.text.contains("data-refusal-duplicate-payment=\""), "Arabic words for refusals");
    // Paid in part: what is paid shows; paid in full: a clear page without a form.
    ok(attempt(srv, &inv, body(card(PAID), 2)));
    let h = page(srv, &format!("{path}?language=en")).text;
    assert!(h.contains("Paid so far") && h.contains("225.00 SAR") && !h.contains("installments-2"), "{h}");
    ok(attempt(srv, &inv, body(card(PAID), 1)));
    let h = page(srv, &format!("{path}?language=en")).text;
    assert!(h.contains("This invoice is paid in full.") && !h.contains("pay-form"), "{h}");
    // Voided.
    let voided = invoice_at(srv, "100.00");
    ok(srv.post(&format!("{}/void", invoice_path(id_str(&voided))), json!({})));
    let h = page(srv, &format!("/pay/invoices/{}?language=en", id_str(&voided))).text;
    assert!(
        h.contains("This invoice was canceled.") && h.contains("No payment will be taken.") && !h.contains("pay-form"),
        "{h}"
    );
    // Unknown, malformed.
    for p in [format!("/pay/invoices/{}", uuid::Uuid::new_v4()), "/pay/invoices/x".to_string()] {
        let r = page(srv, &format!("{p}?language=en"));
        assert_eq!(r.status, 404);
        assert!(r.text.contains("Invoice not found"), "{}", r.text);
    }
    // The result page.
    let r = page(srv, &format!("{path}/result?status=failed&message=DECLINED&id=ref-1&language=en"));
    assert!(
        r.text.contains("Payment failed") && r.text.contains("DECLINED") && r.text.contains("ref-1"),
        "{}",
        r.text
    );
    let other = invoice_at(srv, "100.00");
    let r = page(srv, &format!("/pay/invoices/{}/result?status=failed&language=en", id_str(&other)));
    assert!(
        r.text.contains(&format!("href=\"/pay/invoices/{}?language=en\"", id_str(&other))),
        "try again: {}",
        r.text
    );
}

http_tests!(
    card_outcomes,
    wallet_ranges,
    installments_exact_and_later_ones,
    refusals_write_nothing,
    concurrent_attempts_charge_once,
    decline_with_a_reason,
    pages_show_the_invoice,
    live_without_gateway_takes_no_payment,
    failed_attempts_are_limited_per_client,
    subscription_invoice_keeps_the_card,
);

postgres_smoke!(
    card_outcomes,
    concurrent_attempts_charge_once,
    refusals_write_nothing,
    decline_with_a_reason,
    failed_attempts_are_limited_per_client,
    subscription_invoice_keeps_the_card
);

/// Makes the test organization live (not sandbox): it then has no gateway configured.
fn go_live(srv: &TestServer) {
    let org_id = srv.boot.org.id;
    srv.app
        .billing
        .engine()
        .store
        .write(|tx| {
            let mut org = tx.org(org_id)?.expect("org");
            org.sandbox = false;
            tx.update_org(&org)?;
            Ok(())
        })
        .unwrap();
}

fn live_without_gateway_takes_no_payment(srv: &TestServer) {
    let inv = invoice_at(srv, "100.00");
    let l = crate::link_checkout::link_at(srv, "100.00", json!({}));
    go_live(srv);
    let h = page(srv, &format!("/pay/invoices/{}?language=en", id_str(&inv))).text;
    assert!(
        h.contains("This merchant cannot take card or wallet payments yet.") && !h.contains("pay-form"),
        "{h}"
    );
    let h = page(srv, &format!("/pay/invoices/{}", id_str(&inv))).text;
    assert!(h.contains("لا يستطيع هذا التاجر قبول الدفع"), "{h}");
    let h = page(srv, &format!("/pay/{}?language=en", l["short_id"].as_str().unwrap())).text;
    assert!(
        h.contains("This merchant cannot take card or wallet payments yet.") && !h.contains("pay-form"),
        "{h}"
    );
    let r = unchanged(srv, || attempt(srv, &inv, body(card(PAID), 1)));
    assert_error(&r, 400, "PAYMENT_FLOW_NOT_ALLOWED");
    assert!(
        r.body["error"]["additional_info"]
            .as_str()
            .unwrap()
            .contains("no payment gateway is configured"),
        "{:?}",
        r.body
    );
    let mut link_body = body(card(PAID), 1);
    link_body["customer"] = json!({"name": "Sara Al-Harbi", "phone_number": "+966501234567"});
    let r = unchanged(srv, || crate::link_checkout::attempt(srv, &l, link_body));
    assert_error(&r, 400, "PAYMENT_FLOW_NOT_ALLOWED");
    assert_eq!(statuses(&get_invoice(srv, &inv)), ["PENDING"]);
    // With a live gateway configured, it takes payments.
    srv.app.billing.engine().set_live_gateway(std::sync::Arc::new(SandboxGateway));
    assert_eq!(ok(attempt(srv, &inv, body(card(PAID), 1)))["status"], "paid");
}

fn failed_attempts_are_limited_per_client(srv: &TestServer) {
    let declined = || body(card("4123120001090000"), 1);
    let inv = invoice_at(srv, "100.00");
    for _ in 0..5 {
        assert_eq!(ok(attempt(srv, &inv, declined()))["status"], "failed");
    }
    // The sixth is refused before anything is written or charged, a good card too.
    let r = unchanged(srv, || attempt(srv, &inv, body(card(PAID), 1)));
    assert_error(&r, 429, "RATE_LIMITED");
    let info = r.body["error"]["additional_info"].as_str().unwrap();
    assert!(
        info.contains("Too many failed payment attempts") && info.contains("محاولات دفع فاشلة كثيرة"),
        "{info}"
    );
    // Per invoice: another one takes this client's payment.
    let other = invoice_at(srv, "100.00");
    assert_eq!(ok(attempt(srv, &other, body(card(PAID), 1)))["status"], "paid");
    // Per link, the same.
    let l = crate::link_checkout::link_at(srv, "100.00", json!({}));
    let link_body = |number: &str, k: u32| {
        let mut b = body(card(number), 1);
        b["customer"] = json!({"name": "Sara Al-Harbi", "phone_number": phone(600 + k)});
        b
    };
    for k in 0..5 {
        assert_eq!(ok(crate::link_checkout::attempt(srv, &l, link_body("4123120001090000", k)))["status"], "failed");
    }
    let r = unchanged(srv, || crate::link_checkout::attempt(srv, &l, link_body(PAID, 9)));
    assert_error(&r, 429, "RATE_LIMITED");
    // The page has its own words for it.
    let h = page(srv, &format!("/pay/invoices/{}", id_str(&inv))).text;
    assert!(h.contains("data-refusal-rate-limited=\"محاولات دفع فاشلة كثيرة"), "{h}");
    // Once the failures are 15 minutes old (the organization's clock), the client may pay.
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 15 * 60 + 1})));
    assert_eq!(ok(attempt(srv, &inv, body(card(PAID), 1)))["status"], "paid");
    assert_eq!(ok(crate::link_checkout::attempt(srv, &l, link_body(PAID, 9)))["status"], "paid");
}

/// A subscription made through the API, its first invoice paid by card from the invoice's page:
/// the page says the card is kept for the renewals, the subscription is ACTIVE, and the renewal
/// a month later is charged to that card (the consumer had none before).
fn subscription_invoice_keeps_the_card(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara Al-Harbi");
    let gym = id_of(&recurring_product(srv, "Gym", "120.00"));
    let now = ok(srv.get("/api/v2/sandbox/clock"))["now"].as_str().unwrap().to_string();
    let sub = ok(srv.post(
        "/api/v2/subscriptions",
        json!({"organization_consumer_id": c, "items": [{"product_id": gym, "quantity": 1}], "period_start": now}),
    ));
    let sid = id_of(&sub);
    let inv = ok(srv.get(&invoice_path(sub["latest_invoice_id"].as_str().unwrap())));
    let t = page(srv, &format!("/pay/invoices/{}?language=en", id_str(&inv))).text;
    assert!(
        t.contains("This invoice is for a subscription") && t.contains("every month") && t.contains("120.00 SAR"),
        "{t}"
    );
    let r = ok(attempt(srv, &inv, body(card(PAID), 1)));
    assert_eq!(r["status"], "paid", "{r}");
    assert_eq!(ok(srv.get(&format!("/api/v2/subscriptions/{sid}")))["status"], "ACTIVE");
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 32 * 86400})));
    let invs = ok(srv.get(&format!("/api/v2/invoices?subscription_id={sid}&sort_direction=asc&include_payments=true")));
    let invs = invs["data"].as_array().unwrap();
    assert_eq!(invs.len(), 2, "{invs:?}");
    assert_eq!(
        (invs[1]["status"].as_str(), invs[1]["payments"][0]["current_status"].as_str()),
        (Some("COMPLETED"), Some("SUCCEEDED")),
        "the renewal is charged to the card kept from the invoice's page"
    );
}
