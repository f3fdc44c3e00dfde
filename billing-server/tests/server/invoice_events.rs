//! The outbox events of invoices and payments: the spec's "Which operation emits what" rows and
//! the lifecycle events, each with the spec's payload, written with the change they report.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::TestServer;
use hyper::Method;
use serde_json::{json, Value};

/// The event types (with entity ids) written after the first `skip`.
fn since(srv: &TestServer, skip: usize) -> Vec<(String, String)> {
    events(srv).into_iter().skip(skip).collect()
}

fn ev(t: &str, id: &str) -> (String, String) {
    (t.to_string(), id.to_string())
}

fn payload_shape(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let id = id_of(&inv);
    let pay = first_payment(&inv);
    ok(mark_paid(srv, &pay, "CASH"));
    let payloads = event_payloads(srv);
    let created = &payloads[0];
    assert_eq!(created["event_type"], "INVOICE_CREATED");
    assert_eq!(created["entity_type"], "INVOICE");
    assert_eq!(created["entity_id"], id);
    assert_eq!(created["entity_url"], format!("http://127.0.0.1/api/v2/invoices/{id}"));
    assert_eq!(created["status"], "CREATED");
    assert_eq!(
        created["data"]["invoice"],
        json!({"id": id, "url": format!("http://127.0.0.1/api/v2/invoices/{id}")})
    );
    assert_eq!(created["data"]["payment"], Value::Null);
    assert_eq!(created["data"]["payment_link"], Value::Null);
    assert_eq!(created["data"]["metadata"], json!({}));
    let ts = created["timestamp"].as_str().unwrap();
    assert!(ts.ends_with('Z') && ts.len() == "2026-11-21T10:15:30.123456Z".len(), "{ts}");
    let marked = &payloads[1];
    assert_eq!(marked["event_type"], "PAYMENT_MARKED_AS_PAID");
    assert_eq!(marked["entity_type"], "PAYMENT");
    assert_eq!(marked["entity_id"], pay);
    assert_eq!(marked["entity_url"], format!("http://127.0.0.1/api/v2/payments/{pay}"));
    assert_eq!(marked["status"], "SUCCEEDED");
    assert_eq!(
        marked["data"]["payment"],
        json!({"id": pay, "url": format!("http://127.0.0.1/api/v2/payments/{pay}")})
    );
    assert_eq!(marked["data"]["invoice"]["id"], id);
    assert_eq!(payloads[2]["event_type"], "INVOICE_COMPLETED");
    assert_eq!(payloads[2]["status"], "COMPLETED");
}

fn marked_as_paid_then_completed(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let n = events(srv).len();
    ok(mark_paid(srv, &first_payment(&inv), "CASH"));
    assert_eq!(
        since(srv, n),
        vec![ev("PAYMENT_MARKED_AS_PAID", &first_payment(&inv)), ev("INVOICE_COMPLETED", &id_of(&inv))]
    );
    // An installment marked as paid that leaves others unpaid: no INVOICE_COMPLETED.
    let big = simple_invoice(srv, "400.00");
    accept_installments(srv, &id_of(&big), 2);
    let pays: Vec<String> = ok(srv.get(&invoice_path(&id_of(&big))))["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    let n = events(srv).len();
    ok(mark_paid(srv, &pays[0], "CASH"));
    assert_eq!(since(srv, n), vec![ev("PAYMENT_MARKED_AS_PAID", &pays[0])]);
    let n = events(srv).len();
    ok(mark_paid(srv, &pays[1], "CASH"));
    assert_eq!(
        since(srv, n),
        vec![ev("PAYMENT_MARKED_AS_PAID", &pays[1]), ev("INVOICE_COMPLETED", &id_of(&big))]
    );
}

fn payment_succeeds_and_fails(srv: &TestServer) {
    set_auto_charge(srv, true);
    let scope = admin_scope(srv);
    // Fails: PAYMENT_FAILED only.
    let inv = simple_invoice(srv, "115.00");
    let pay = first_payment(&inv);
    let consumer: billing_core::ids::ConsumerId = inv["organization_consumer_id"].as_str().unwrap().parse().unwrap();
    srv.app
        .billing
        .payments()
        .save_card(&scope, consumer, "4123120001090109", 1, 2031, true)
        .unwrap();
    let n = events(srv).len();
    assert_eq!(srv.post(&format!("/api/v2/payments/auto-charge-on-demand/{pay}"), json!({})).status, 400);
    assert_eq!(since(srv, n), vec![ev("PAYMENT_FAILED", &pay)]);
    assert_eq!(event_payloads(srv).last().unwrap()["status"], "FAILED");
    // Succeeds: PAYMENT_SUCCEEDED then INVOICE_COMPLETED.
    std::thread::sleep(std::time::Duration::from_millis(2));
    srv.app
        .billing
        .payments()
        .save_card(&scope, consumer, "4111111111111111", 1, 2031, true)
        .unwrap();
    let n = events(srv).len();
    ok(srv.post(&format!("/api/v2/payments/auto-charge-on-demand/{pay}"), json!({})));
    assert_eq!(since(srv, n), vec![ev("PAYMENT_SUCCEEDED", &pay), ev("INVOICE_COMPLETED", &id_of(&inv))]);
    // One installment succeeds: PAYMENT_SUCCEEDED, no INVOICE_COMPLETED until fully paid.
    let big = create_invoice(
        srv,
        invoice_body(
            inv["organization_consumer_id"].as_str().unwrap(),
            &[(inv["items"][0]["product_id"].as_str().unwrap(), 4)],
            &[],
        ),
    );
    accept_installments(srv, &id_of(&big), 2);
    let pays: Vec<String> = ok(srv.get(&invoice_path(&id_of(&big))))["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    let n = events(srv).len();
    ok(srv.post(&format!("/api/v2/payments/auto-charge-on-demand/{}", pays[0]), json!({})));
    assert_eq!(since(srv, n), vec![ev("PAYMENT_SUCCEEDED", &pays[0])]);
    let n = events(srv).len();
    ok(srv.post(&format!("/api/v2/payments/auto-charge-on-demand/{}", pays[1]), json!({})));
    assert_eq!(since(srv, n), vec![ev("PAYMENT_SUCCEEDED", &pays[1]), ev("INVOICE_COMPLETED", &id_of(&big))]);
}

fn refunded_without_invoice_change(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let pay = first_payment(&inv);
    ok(mark_paid(srv, &pay, "CASH"));
    let n = events(srv).len();
    ok(srv.post(&format!("{}/refund", payment_path(&pay)), json!({"refund_reason": "OTHER"})));
    assert_eq!(since(srv, n), vec![ev("PAYMENT_REFUNDED", &pay)]);
    assert_eq!(event_payloads(srv).last().unwrap()["status"], "REFUNDED");
}

fn lifecycle_events(srv: &TestServer) {
    let c = consumer_with_email(srv, 3);
    let p = id_of(&one_off_product(srv, "Gym", "115.00"));
    let mut body = invoice_body(&c, &[(&p, 1)], &[]);
    body["notify_consumer"] = json!(true);
    let inv = create_invoice(srv, body);
    let id = id_of(&inv);
    assert_eq!(since(srv, 0), vec![ev("INVOICE_CREATED", &id), ev("INVOICE_SENT", &id)]);
    ok(srv.post(&format!("{}/send", invoice_path(&id)), json!({})));
    ok(srv.call(Method::PATCH, &format!("{}/inplace", invoice_path(&id)), Some(json!({"description": "d"}))));
    assert_eq!(since(srv, 2), vec![ev("INVOICE_SENT", &id), ev("INVOICE_UPDATED", &id)]);
    let n = events(srv).len();
    srv.app
        .billing
        .invoices()
        .accept(&admin_scope(srv), id.parse().unwrap(), billing_core::invoice::PaymentPlan::Full)
        .unwrap();
    assert_eq!(since(srv, n), vec![ev("INVOICE_ACCEPTED", &id)]);
    let n = events(srv).len();
    ok(srv.post(&format!("{}/void", invoice_path(&id)), json!({})));
    assert_eq!(since(srv, n), vec![ev("PAYMENT_CANCELED", &first_payment(&inv)), ev("INVOICE_CANCELED", &id)]);
    // Refusals write no event.
    let n = events(srv).len();
    assert_eq!(srv.post(&format!("{}/void", invoice_path(&id)), json!({})).status, 400);
    assert_eq!(events(srv).len(), n);
}

fn several_payments_succeed_together(srv: &TestServer) {
    let inv = simple_invoice(srv, "600.00");
    let id = id_of(&inv);
    accept_installments(srv, &id, 3);
    let pays: Vec<String> = ok(srv.get(&invoice_path(&id)))["payments"].as_array().unwrap().iter().map(id_of).collect();
    let card = billing_core::payment::gateway::CardDetails {
        name: "Sara Harbi".into(),
        number: "4111111111111111".into(),
        expiry_month: 12,
        expiry_year: 2030,
        cvc: "123".into(),
    };
    let scope = admin_scope(srv);
    let pid = |s: &String| s.parse::<billing_core::ids::PaymentId>().unwrap();
    // Two of three together (the hosted page's call): one PAYMENT_SUCCEEDED each, not completed.
    let n = events(srv).len();
    srv.app
        .billing
        .payments()
        .pay_by_card(&scope, id.parse().unwrap(), &[pid(&pays[0]), pid(&pays[1])], &card)
        .unwrap();
    assert_eq!(since(srv, n), vec![ev("PAYMENT_SUCCEEDED", &pays[0]), ev("PAYMENT_SUCCEEDED", &pays[1])]);
    // Refunding one of them answers MultiplePaymentsInTransactionErrorResponse.
    let r = srv.post(&format!("{}/refund", payment_path(&pays[0])), json!({"refund_reason": "OTHER"}));
    assert_eq!(r.status, 400);
    assert_eq!(r.body["payment_ids"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["total_amount"], "400.00");
    // The last: PAYMENT_SUCCEEDED then INVOICE_COMPLETED.
    let n = events(srv).len();
    srv.app
        .billing
        .payments()
        .pay_by_card(&scope, id.parse().unwrap(), &[pid(&pays[2])], &card)
        .unwrap();
    assert_eq!(since(srv, n), vec![ev("PAYMENT_SUCCEEDED", &pays[2]), ev("INVOICE_COMPLETED", &id)]);
}

http_tests!(
    several_payments_succeed_together,
    payload_shape,
    marked_as_paid_then_completed,
    payment_succeeds_and_fails,
    refunded_without_invoice_change,
    lifecycle_events,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(payload_shape, payment_succeeds_and_fails, several_payments_succeed_together,);
