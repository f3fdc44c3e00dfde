//! POST /pay/{short_id}/attempts (the public checkout, no credentials): every sandbox card
//! outcome and wallet range, exact installments, what is created (and on failure that nothing
//! is), the events with `payment_link` and `metadata`, the redirect parameters, max-payments
//! completion, inactive and expired links, concurrent attempts, and that a card number is never
//! stored.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::{Resp, TestServer};
use crate::payment_links::{create_link, link_body, link_path};
use billing_core::money::Money;
use billing_core::payment::gateway::{CardDetails, GatewayOutcome, PaymentGateway, SandboxGateway};
use hyper::Method;
use serde_json::{json, Value};

const PAID: &str = "4111111111111111";

fn card(number: &str) -> Value {
    json!({"type": "card", "number": number, "name": "Sara Al-Harbi", "expiry_month": 12, "expiry_year": 2030, "cvc": "123"})
}

fn body(method: Value, phone: &str) -> Value {
    json!({"customer": {"name": "Sara Al-Harbi", "phone_number": phone}, "method": method, "installments": 1, "language": "en"})
}

/// The attempt, with no credentials at all.
pub fn attempt(srv: &TestServer, link: &Value, body: Value) -> Resp {
    let short = link["short_id"].as_str().unwrap();
    srv.raw(
        Method::POST,
        &format!("/pay/{short}/attempts"),
        &[("content-type", "application/json")],
        Some(serde_json::to_vec(&body).unwrap()),
    )
}

/// A link of one product at `price` (VAT-inclusive: the amount is the price).
pub fn link_at(srv: &TestServer, price: &str, extra: Value) -> Value {
    let p = id_of(&one_off_product(srv, "Thing", price));
    let mut b = link_body(&[(&p, 1)]);
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    create_link(srv, b)
}

/// The query parameters of a redirect URL, decoded.
fn params(url: &str) -> Vec<(String, String)> {
    let q = url.split_once('?').map(|x| x.1).unwrap_or("");
    let q = q.split('#').next().unwrap();
    billing_core::list::QueryParams::parse(q).0
}

fn param(url: &str, k: &str) -> Option<String> {
    params(url).into_iter().find(|(n, _)| n == k).map(|(_, v)| v)
}

fn card_outcomes_and_redirects(srv: &TestServer) {
    // The table fails more often on one link than a client may (card testing).
    srv.app.billing.engine().set_failed_attempts_allowed(100);
    let l = link_at(
        srv,
        "115.00",
        json!({"success_redirect_url": "https://shop.example/ok?o=1", "failure_redirect_url": "https://shop.example/ko", "custom_metadata": {"cart": {"id": 9}}}),
    );
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
    for (k, (number, status, message)) in table.into_iter().enumerate() {
        let phone = phone(100 + k as u32);
        let invoices_before = ids(&srv.get("/api/v2/invoices"));
        let consumers_before = ids(&srv.get("/api/v2/consumers"));
        let events_before = events(srv).len();
        let r = ok(attempt(srv, &l, body(card(number), &phone)));
        assert_eq!((r["status"].as_str(), r["message"].as_str()), (Some(status), Some(message)), "{number}");
        let url = r["redirect_url"].as_str().unwrap();
        assert_eq!(param(url, "payment_link_id").unwrap(), id_of(&l));
        assert_eq!(param(url, "status").unwrap(), status);
        assert_eq!(param(url, "message").unwrap(), message);
        assert_eq!(param(url, "login_method").unwrap(), "PHONE");
        assert!(param(url, "id").is_some_and(|id| !id.is_empty()));
        if status == "paid" {
            assert!(url.starts_with("https://shop.example/ok?o=1&id="), "{url}");
            let names: Vec<String> = params(url).into_iter().map(|p| p.0).collect();
            assert_eq!(
                names,
                [
                    "o",
                    "id",
                    "payment_link_id",
                    "status",
                    "message",
                    "login_method",
                    "invoice_id",
                    "consent_id",
                    "payment_id",
                    "organization_consumer_id"
                ]
            );
            // The parameters are enough to fetch and verify the invoice.
            let inv = ok(srv.get(&invoice_path(&param(url, "invoice_id").unwrap())));
            assert_eq!(
                (inv["status"].clone(), inv["total_amount"].clone(), inv["currency"].clone()),
                (json!("COMPLETED"), json!("115.00"), json!("SAR"))
            );
            assert_eq!(inv["payment_link_id"], l["id"]);
            assert_eq!(inv["organization_consumer_id"].as_str(), param(url, "organization_consumer_id").as_deref());
            assert_eq!(inv["payments"][0]["id"].as_str(), param(url, "payment_id").as_deref());
            assert_eq!(inv["payments"][0]["current_status"], "SUCCEEDED");
        } else {
            assert!(url.starts_with("https://shop.example/ko?id="), "{url}");
            assert_eq!(param(url, "invoice_id"), None);
            assert_eq!(ids(&srv.get("/api/v2/invoices")), invoices_before, "a failure creates no invoice");
            assert_eq!(ids(&srv.get("/api/v2/consumers")), consumers_before, "nor a consumer");
            let new = &event_payloads(srv)[events_before..];
            assert_eq!(new.len(), 1);
            assert_eq!(new[0]["event_type"], "PAYMENT_LINK_PAY_ATTEMPT_FAILED");
            assert_eq!(new[0]["data"]["payment_link"]["id"], l["id"]);
            assert_eq!(new[0]["data"]["metadata"], json!({"cart": {"id": 9}}));
        }
    }
    let link = ok(srv.get(&link_path(&id_of(&l))));
    assert_eq!(
        (link["number_of_payments"].clone(), link["amount_collected"].clone()),
        (json!(3), json!("345.00"))
    );
}

fn wallet_ranges(srv: &TestServer) {
    for (price, status) in [("250.00", "paid"), ("1150.00", "failed"), ("1650.00", "failed"), ("99.99", "failed")] {
        let l = link_at(srv, price, json!({}));
        let r = ok(attempt(srv, &l, body(json!({"type": "wallet", "phone_number": "+966501234567"}), &phone(7))));
        assert_eq!(r["status"], status, "{price}");
    }
}

fn installments_exact_and_minimum(srv: &TestServer) {
    let l = link_at(srv, "400.00", json!({}));
    let mut b = body(card(PAID), &phone(1));
    b["installments"] = json!(3);
    let r = ok(attempt(srv, &l, b.clone()));
    let inv = ok(srv.get(&invoice_path(&param(r["redirect_url"].as_str().unwrap(), "invoice_id").unwrap())));
    let amounts: Vec<&Value> = inv["payments"].as_array().unwrap().iter().map(|p| &p["amount"]).collect();
    assert_eq!(amounts, [&json!("133.33"), &json!("133.33"), &json!("133.34")]);
    let statuses: Vec<&Value> = inv["payments"].as_array().unwrap().iter().map(|p| &p["current_status"]).collect();
    assert_eq!(statuses, [&json!("SUCCEEDED"), &json!("PENDING"), &json!("PENDING")]);
    assert_eq!(
        (inv["status"].clone(), inv["type"].clone(), inv["paid_amount"].clone()),
        (json!("ACCEPTED"), json!("INSTALLMENTS"), json!("133.33"))
    );
    // 4 × 87.50 is below the 100 SAR minimum; the link does not change, nothing is charged.
    let small = link_at(srv, "350.00", json!({}));
    b["installments"] = json!(4);
    let r = unchanged(srv, || attempt(srv, &small, b.clone()));
    assert_error(&r, 400, "INVALID_PARAMETERS");
    b["installments"] = json!(5);
    assert_invalid(&unchanged(srv, || attempt(srv, &small, b.clone())), json!(["body", "installments"]), None);
}

fn events_carry_the_link_and_its_metadata(srv: &TestServer) {
    let meta = json!({"order": {"id": 77, "lines": [{"sku": "A", "qty": 2}]}});
    let l = link_at(srv, "100.00", json!({"custom_metadata": meta}));
    let before = event_payloads(srv).len();
    ok(attempt(srv, &l, body(card(PAID), &phone(2))));
    let new = &event_payloads(srv)[before..];
    let types: Vec<&str> = new.iter().map(|e| e["event_type"].as_str().unwrap()).collect();
    assert_eq!(types, ["INVOICE_CREATED", "INVOICE_ACCEPTED", "PAYMENT_SUCCEEDED", "INVOICE_COMPLETED"]);
    for e in new {
        assert_eq!(
            e["data"]["payment_link"],
            json!({"id": l["id"], "url": format!("http://127.0.0.1/api/v2/payment_links/{}", id_of(&l))})
        );
        assert_eq!(e["data"]["metadata"], meta);
    }
    assert_eq!(
        new[2]["data"]["payment"]["url"],
        format!("http://127.0.0.1/api/v2/payments/{}", new[2]["entity_id"].as_str().unwrap())
    );
}

fn refusals_write_nothing(srv: &TestServer) {
    let l = link_at(srv, "100.00", json!({"max_number_of_payments": 1}));
    let no_route = srv.raw(Method::POST, "/pay/not-a-link/attempts", &[], Some(b"{}".to_vec()));
    assert_invalid(&no_route, json!(["body", "method"]), Some("missing"));
    let r = unchanged(srv, || {
        srv.raw(
            Method::POST,
            "/pay/not-a-link/attempts",
            &[],
            Some(serde_json::to_vec(&body(card(PAID), &phone(3))).unwrap()),
        )
    });
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.raw(Method::GET, &format!("/pay/{}/attempts", l["short_id"].as_str().unwrap()), &[], None);
    assert_error(&r, 405, "METHOD_NOT_ALLOWED");
    let r = unchanged(srv, || {
        srv.raw(
            Method::POST,
            &format!("/pay/{}/attempts", l["short_id"].as_str().unwrap()),
            &[],
            Some(b"{".to_vec()),
        )
    });
    assert_invalid(&r, json!(["body"]), Some("json_invalid"));
    for (field, value) in [
        ("number", json!("4111111111111112")),
        ("cvc", json!("1")),
        ("name", json!("Sara")),
        ("expiry_year", json!(2020)),
    ] {
        let mut c = card(PAID);
        c[field] = value;
        let r = unchanged(srv, || attempt(srv, &l, body(c, &phone(4))));
        assert_invalid(&r, json!(["body", "method", field]), None);
    }
    let r = unchanged(srv, || attempt(srv, &l, json!({"method": card(PAID)})));
    assert_invalid(&r, json!(["body", "customer"]), Some("missing"));
    // Inactive, then completed, then expired.
    let status = format!("{}/status", link_path(&id_of(&l)));
    ok(srv.call(Method::PATCH, &status, Some(json!({"status": "INACTIVE"}))));
    assert_error(&unchanged(srv, || attempt(srv, &l, body(card(PAID), &phone(5)))), 400, "INVALID_STATUS");
    ok(srv.call(Method::PATCH, &status, Some(json!({"status": "ACTIVE"}))));
    assert_eq!(ok(attempt(srv, &l, body(card(PAID), &phone(5))))["status"], "paid");
    assert_eq!(ok(srv.get(&link_path(&id_of(&l))))["status"], "COMPLETED", "max_number_of_payments reached");
    assert_error(&unchanged(srv, || attempt(srv, &l, body(card(PAID), &phone(6)))), 400, "INVALID_STATUS");
    let soon = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let e = link_at(srv, "100.00", json!({"valid_until": soon}));
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 7200})));
    let r = unchanged(srv, || attempt(srv, &e, body(card(PAID), &phone(6))));
    assert_error(&r, 400, "INVALID_STATUS");
    assert_eq!(ok(srv.get(&link_path(&id_of(&e))))["status"], "ACTIVE", "an expired link keeps its status");
}

/// A gateway that answers like the sandbox after a pause, so attempts overlap.
struct Slow;

impl PaymentGateway for Slow {
    fn charge_card(&self, reference: &str, card: &CardDetails, amount: Money) -> GatewayOutcome {
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
    srv.app.billing.engine().set_sandbox_gateway(std::sync::Arc::new(Slow));
    // A double-clicked pay button: one payer, one link, two attempts at once.
    let l = link_at(srv, "100.00", json!({}));
    let path = format!("/pay/{}/attempts", l["short_id"].as_str().unwrap());
    let b = body(card(PAID), &phone(8));
    let out = concurrently(
        srv,
        vec![(Method::POST, path.clone(), Some(b.clone())), (Method::POST, path.clone(), Some(b.clone()))],
    );
    let mut statuses: Vec<u16> = out.iter().map(|o| o.0).collect();
    statuses.sort();
    assert_eq!(statuses, [200, 422], "{out:?}");
    let dup = out.iter().find(|o| o.0 == 422).unwrap();
    assert_eq!(dup.1["error"]["code"], "DUPLICATE_PAYMENT");
    // A link with one payment: many payers at once, one pays.
    let one = link_at(srv, "100.00", json!({"max_number_of_payments": 1}));
    let path = format!("/pay/{}/attempts", one["short_id"].as_str().unwrap());
    let out = concurrently(
        srv,
        (0..6).map(|k| (Method::POST, path.clone(), Some(body(card(PAID), &phone(20 + k))))).collect(),
    );
    let paid = out.iter().filter(|o| o.0 == 200 && o.1["status"] == "paid").count();
    assert_eq!(paid, 1, "{out:?}");
    assert!(
        out.iter()
            .all(|o| o.0 == 200 || o.1["error"]["code"] == "DUPLICATE_PAYMENT" || o.1["error"]["code"] == "INVALID_STATUS"),
        "{out:?}"
    );
    let invoices = ids(&srv.get(&format!("/api/v2/invoices?payment_link_id={}", id_of(&one))));
    assert_eq!(invoices.len(), 1);
}

fn card_numbers_are_never_stored(srv: &TestServer) {
    let l = link_at(srv, "100.00", json!({}));
    ok(attempt(srv, &l, body(card("5421080101000000"), &phone(9))));
    ok(attempt(srv, &l, body(card("5457210001000092"), &phone(10))));
    // Every byte the database holds (SQLite: the file and its log; PostgreSQL: every row).
    let stored = srv.database_bytes().unwrap_or_else(|| srv.snapshot().into_bytes());
    let holds = |needle: &str| stored.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(holds("MASTERCARD"), "the saved card is stored");
    for n in ["5421080101000000", "5457210001000092", "542108010100", "545721000100"] {
        assert!(!holds(n), "{n} is stored");
    }
}

http_tests!(
    card_outcomes_and_redirects,
    wallet_ranges,
    installments_exact_and_minimum,
    events_carry_the_link_and_its_metadata,
    refusals_write_nothing,
    concurrent_attempts_charge_once,
    card_numbers_are_never_stored,
    custom_quantities,
    recurring_links_start_subscriptions,
);

postgres_smoke!(
    card_outcomes_and_redirects,
    concurrent_attempts_charge_once,
    refusals_write_nothing,
    card_numbers_are_never_stored,
    recurring_links_start_subscriptions
);

fn custom_quantities(srv: &TestServer) {
    let p = id_of(&one_off_product(srv, "Ticket", "100.00"));
    let mut b = link_body(&[(&p, 1)]);
    b["items"][0]["allow_custom_quantity"] = json!(true);
    b["items"][0]["min_quantity"] = json!(1);
    b["items"][0]["max_quantity"] = json!(3);
    let l = create_link(srv, b);
    let item = l["items"][0]["id"].as_str().unwrap().to_string();
    let with = |q: Value| {
        let mut b = body(card(PAID), &phone(700));
        b["items"] = json!([{"payment_link_item_id": item, "quantity": q}]);
        b
    };
    // The page, priced with the chosen quantity; the link keeps its own.
    let short = l["short_id"].as_str().unwrap();
    let h = srv.raw(Method::GET, &format!("/pay/{short}?language=en&quantity.{item}=2"), &[], None).text;
    assert!(
        h.contains(&format!("id=\"qty-{item}\"")) && h.contains("value=\"2\"") && h.contains("Pay <bdi>200.00 SAR</bdi>"),
        "{h}"
    );
    let h = srv.raw(Method::GET, &format!("/pay/{short}?language=en&quantity.{item}=9"), &[], None).text;
    assert!(h.contains("Pay <bdi>100.00 SAR</bdi>"), "out of bounds: the link's own quantity: {h}");
    // Out of bounds, unknown or fixed items: 422 at the item, nothing written.
    assert_invalid(
        &unchanged(srv, || attempt(srv, &l, with(json!(4)))),
        json!(["body", "items", 0, "quantity"]),
        None,
    );
    assert_invalid(
        &unchanged(srv, || attempt(srv, &l, with(json!(0)))),
        json!(["body", "items", 0, "quantity"]),
        None,
    );
    let mut unknown = with(json!(2));
    unknown["items"][0]["payment_link_item_id"] = json!(uuid::Uuid::new_v4());
    assert_invalid(
        &unchanged(srv, || attempt(srv, &l, unknown)),
        json!(["body", "items", 0, "payment_link_item_id"]),
        None,
    );
    let fixed = link_at(srv, "100.00", json!({}));
    let mut b = body(card(PAID), &phone(701));
    b["items"] = json!([{"payment_link_item_id": fixed["items"][0]["id"], "quantity": 2}]);
    assert_invalid(&unchanged(srv, || attempt(srv, &fixed, b)), json!(["body", "items", 0, "quantity"]), None);
    // Paid with 3: the invoice bills 3, the link keeps 1.
    let r = ok(attempt(srv, &l, with(json!(3))));
    assert_eq!(r["status"], "paid");
    let inv = ok(srv.get(&invoice_path(&param(r["redirect_url"].as_str().unwrap(), "invoice_id").unwrap())));
    assert_eq!((inv["total_amount"].as_str(), inv["items"][0]["quantity"].as_u64()), (Some("300.00"), Some(3)));
    let link = ok(srv.get(&link_path(&id_of(&l))));
    assert_eq!((link["amount"].as_str(), link["items"][0]["quantity"].as_u64()), (Some("100.00"), Some(1)));
    assert_eq!(link["amount_collected"], "300.00");
}

/// A link of recurring products: paying it by card makes the subscription, its first invoice
/// and payment in one go, and keeps the card, which the renewal a period later is charged to.
/// A wallet, installments and a declined card make nothing.
fn recurring_links_start_subscriptions(srv: &TestServer) {
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let meta = json!({"plan": {"tier": "gold"}});
    let mut b = link_body(&[(&gym, 2)]);
    b["custom_metadata"] = meta.clone();
    let l = create_link(srv, b);
    let r = unchanged(srv, || attempt(srv, &l, body(json!({"type": "wallet", "phone_number": phone(40)}), &phone(40))));
    assert_error(&r, 400, "PAYMENT_FLOW_NOT_ALLOWED");
    let mut two = body(card(PAID), &phone(40));
    two["installments"] = json!(2);
    assert_error(&unchanged(srv, || attempt(srv, &l, two.clone())), 400, "PAYMENT_FLOW_NOT_ALLOWED");
    // Declined: nothing but the attempt's event.
    let subs = ids(&srv.get("/api/v2/subscriptions"));
    let invoices = ids(&srv.get("/api/v2/invoices"));
    let before = event_payloads(srv).len();
    let r = ok(attempt(srv, &l, body(card("4201321234411220"), &phone(41))));
    assert_eq!(r["status"], "failed");
    assert_eq!(ids(&srv.get("/api/v2/subscriptions")), subs);
    assert_eq!(ids(&srv.get("/api/v2/invoices")), invoices);
    let types: Vec<Value> = event_payloads(srv)[before..].iter().map(|e| e["event_type"].clone()).collect();
    assert_eq!(types, [json!("PAYMENT_LINK_PAY_ATTEMPT_FAILED")]);
    // Paid.
    let before = event_payloads(srv).len();
    let r = ok(attempt(srv, &l, body(card(PAID), &phone(42))));
    assert_eq!(r["status"], "paid", "{r}");
    let url = r["redirect_url"].as_str().unwrap();
    let inv = ok(srv.get(&invoice_path(&param(url, "invoice_id").unwrap())));
    assert_eq!(
        (inv["status"].clone(), inv["total_amount"].clone(), inv["payment_link_id"].clone()),
        (json!("COMPLETED"), json!("200.00"), l["id"].clone())
    );
    let sid = inv["subscription_id"].as_str().expect("the invoice is the subscription's").to_string();
    let s = ok(srv.get(&format!("/api/v2/subscriptions/{sid}")));
    assert_eq!(s["status"], "ACTIVE");
    assert_eq!(s["current_cycle_number"], 1);
    assert_eq!(s["amount"], "200.00");
    assert_eq!(s["recurring_interval"], "MONTH");
    assert_eq!(s["items"][0]["quantity"], 2);
    assert_eq!(s["latest_invoice_id"], inv["id"]);
    assert_eq!(s["organization_consumer_id"].as_str(), param(url, "organization_consumer_id").as_deref());
    assert!(param(url, "consent_id").is_some(), "the card is kept with consent");
    let new = &event_payloads(srv)[before..];
    let types: Vec<&str> = new.iter().map(|e| e["event_type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "SUBSCRIPTION_CREATED",
            "INVOICE_CREATED",
            "INVOICE_ACCEPTED",
            "PAYMENT_SUCCEEDED",
            "INVOICE_COMPLETED",
            "SUBSCRIPTION_ACTIVATED"
        ]
    );
    for e in new.iter().filter(|e| e["entity_type"] != "SUBSCRIPTION") {
        assert_eq!(e["data"]["payment_link"]["id"], l["id"], "{e}");
        assert_eq!(e["data"]["metadata"], meta);
    }
    let link = ok(srv.get(&link_path(&id_of(&l))));
    assert_eq!(
        (link["number_of_payments"].clone(), link["amount_collected"].clone()),
        (json!(1), json!("200.00"))
    );
    // A month on: the renewal is charged to the card kept at checkout.
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 32 * 86400})));
    let invs = ok(srv.get(&format!("/api/v2/invoices?subscription_id={sid}&sort_direction=asc&include_payments=true")));
    let invs = invs["data"].as_array().unwrap();
    assert_eq!(invs.len(), 2, "{invs:?}");
    assert_eq!(invs[1]["status"], "COMPLETED");
    assert_eq!(invs[1]["payments"][0]["current_status"], "SUCCEEDED");
    assert_eq!(invs[1]["payment_link_id"], Value::Null, "a renewal is not a payment of the link");
    let link = ok(srv.get(&link_path(&id_of(&l))));
    assert_eq!(link["amount_collected"], "200.00");
}
