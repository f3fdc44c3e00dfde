//! /api/v2/payments: get, list with filters, mark-paid, refund (single and related payments),
//! auto-charge on demand, and every refusal (status, code, nothing changed).

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::TestServer;
use serde_json::{json, Value};

const PAYMENT_FIELDS: [&str; 13] = [
    "id",
    "amount",
    "currency",
    "scheduled_on",
    "type",
    "payment_method",
    "current_status",
    "payed_at",
    "refunded_at",
    "refund_reason",
    "refund_note",
    "latest_pgw_message",
    "amount_in_smallest_unit",
];

fn get_and_list_payments(srv: &TestServer) {
    let a = simple_invoice(srv, "115.00");
    let b = simple_invoice(srv, "20.00");
    let pa = first_payment(&a);
    let p = ok(srv.get(&payment_path(&pa)));
    for f in PAYMENT_FIELDS {
        assert!(p.get(f).is_some(), "PaymentResponse.{f}: {p}");
    }
    assert_eq!(
        (p["amount"].clone(), p["current_status"].clone(), p["payment_method"].clone()),
        (json!("115.00"), json!("PENDING"), Value::Null)
    );
    let list = |q: &str| ok(srv.get(&format!("/api/v2/payments?{q}")));
    let ids = |v: &Value| v["data"].as_array().unwrap().iter().map(id_of).collect::<Vec<_>>();
    assert_eq!(ids(&list("")).len(), 2);
    assert_eq!(ids(&list(&format!("invoice_id={}", id_of(&a)))), vec![pa.clone()]);
    assert_eq!(ids(&list(&format!("invoice_id={}&invoice_id={}", id_of(&a), id_of(&b)))).len(), 2);
    ok(srv.post(
        &format!("{}/mark-paid", payment_path(&pa)),
        json!({"payment_method": "CASH", "note": "Receipt ÜBER 7"}),
    ));
    assert_eq!(ids(&list("statuses=SUCCEEDED")), vec![pa.clone()]);
    assert_eq!(
        ids(&list(&format!("search_term={}", enc("über")))),
        vec![pa.clone()],
        "search folds case beyond ASCII"
    );
    assert_eq!(ids(&list("statuses=SUCCEEDED&statuses=PENDING")).len(), 2);
    assert_eq!(ids(&list("sort_field=amount&sort_direction=asc"))[1], pa);
    assert_eq!(list("limit=1")["pagination"]["has_next_page"], true);
    assert_eq!(ids(&list("from_date=2100-01-01T00:00:00Z")), Vec::<String>::new());
    assert_eq!(ids(&list("search_term=nothing-matches")), Vec::<String>::new());
    assert_invalid(&srv.get("/api/v2/payments?statuses=NOPE"), json!(["query", "statuses"]), Some("enum"));
    assert_invalid(&srv.get("/api/v2/payments?invoice_id=x"), json!(["query", "invoice_id"]), Some("uuid_parsing"));
    assert_error(&srv.get(&payment_path(&random_id())), 404, "NOT_FOUND");
}

fn mark_paid_completes_the_invoice(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let pay = first_payment(&inv);
    let r = ok(mark_paid(srv, &pay, "BANK_TRANSFER"));
    assert_eq!(r, json!({}), "PaymentMarkPaidResponse is an empty object");
    let p = ok(srv.get(&payment_path(&pay)));
    assert_eq!(
        (p["current_status"].clone(), p["payment_method"].clone()),
        (json!("SUCCEEDED"), json!("BANK_TRANSFER"))
    );
    time_of(&p["payed_at"]);
    let i = ok(srv.get(&invoice_path(&id_of(&inv))));
    assert_eq!(
        (i["status"].clone(), i["paid_amount"].clone(), i["remaining_amount"].clone()),
        (json!("COMPLETED"), json!("115.00"), json!("0.00"))
    );
    for m in ["CASH", "CARD", "QURRAH"] {
        let inv = simple_invoice(srv, "10.00");
        ok(mark_paid(srv, &first_payment(&inv), m));
    }
}

fn mark_paid_refusals_change_nothing(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let pay = first_payment(&inv);
    for m in ["VISA", "MADA", "APPLE_PAY", "MASTERCARD"] {
        let r = unchanged(srv, || mark_paid(srv, &pay, m));
        assert_error(&r, 400, "PAYMENT_FLOW_NOT_ALLOWED");
    }
    let r = unchanged(srv, || srv.post(&format!("{}/mark-paid", payment_path(&pay)), json!({})));
    assert_invalid(&r, json!(["body", "payment_method"]), Some("missing"));
    let r = unchanged(srv, || mark_paid(srv, &pay, "GOLD"));
    assert_invalid(&r, json!(["body", "payment_method"]), Some("enum"));
    let r = unchanged(srv, || mark_paid(srv, &random_id(), "CASH"));
    assert_error(&r, 404, "NOT_FOUND");
    ok(mark_paid(srv, &pay, "CASH"));
    let r = unchanged(srv, || mark_paid(srv, &pay, "CASH"));
    assert_error(&r, 400, "PAYMENT_FINALIZED");
    // An installment invoice must be ACCEPTED: put an accepted one back to SENT.
    let big = simple_invoice(srv, "400.00");
    accept_installments(srv, &id_of(&big), 2);
    let inv_id: billing_core::ids::InvoiceId = id_of(&big).parse().unwrap();
    let branch = srv.boot.branch.id;
    use billing_core::store::Store;
    srv.app
        .billing
        .engine()
        .store
        .write(|tx| {
            let mut i = tx.invoice(branch, inv_id)?.unwrap();
            i.status = billing_core::invoice::InvoiceStatus::Sent;
            tx.update_invoice(&i)?;
            Ok(())
        })
        .unwrap();
    let first = first_payment(&ok(srv.get(&invoice_path(&id_of(&big)))));
    let r = unchanged(srv, || mark_paid(srv, &first, "CASH"));
    assert_error(&r, 400, "INVOICE_INVALID_STATUS");
}

fn installments_are_paid_one_by_one(srv: &TestServer) {
    let inv = simple_invoice(srv, "400.00");
    accept_installments(srv, &id_of(&inv), 3);
    let got = ok(srv.get(&invoice_path(&id_of(&inv))));
    assert_eq!(got["status"], "ACCEPTED");
    assert_eq!(got["type"], "INSTALLMENTS");
    let pays = got["payments"].as_array().unwrap().clone();
    let amounts: Vec<&str> = pays.iter().map(|p| p["amount"].as_str().unwrap()).collect();
    assert_eq!(amounts, vec!["133.33", "133.33", "133.34"]);
    assert!(pays.iter().all(|p| p["type"] == "INSTALLMENT"));
    for (k, p) in pays.iter().enumerate() {
        ok(mark_paid(srv, &id_of(p), "CASH"));
        let st = ok(srv.get(&invoice_path(&id_of(&inv))))["status"].clone();
        assert_eq!(st, if k == 2 { "COMPLETED" } else { "ACCEPTED" });
    }
}

fn refund_full(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let pay = first_payment(&inv);
    let body = json!({"refund_reason": "REQUESTED_BY_CUSTOMER", "refund_note": "changed mind"});
    let r = unchanged(srv, || srv.post(&format!("{}/refund", payment_path(&pay)), body.clone()));
    assert_error(&r, 400, "INVALID_STATUS");
    ok(mark_paid(srv, &pay, "CASH"));
    let r = ok(srv.post(&format!("{}/refund", payment_path(&pay)), body.clone()));
    assert_eq!(r["current_status"], "REFUNDED");
    assert_eq!(r["refund_reason"], "REQUESTED_BY_CUSTOMER");
    assert_eq!(r["refund_note"], "changed mind");
    time_of(&r["refunded_at"]);
    assert_eq!(ok(srv.get(&invoice_path(&id_of(&inv))))["status"], "COMPLETED", "the invoice does not change");
    let r = unchanged(srv, || srv.post(&format!("{}/refund", payment_path(&pay)), body.clone()));
    assert_error(&r, 400, "PAYMENT_REFUNDED_ALREADY");
    let r = unchanged(srv, || srv.post(&format!("{}/refund", payment_path(&pay)), json!({"refund_reason": "BECAUSE"})));
    assert_invalid(&r, json!(["body", "refund_reason"]), Some("enum"));
    let r = unchanged(srv, || srv.post(&format!("{}/refund", payment_path(&pay)), json!({})));
    assert_invalid(&r, json!(["body", "refund_reason"]), Some("missing"));
    let r = unchanged(srv, || srv.post(&format!("{}/refund", payment_path(&random_id())), body.clone()));
    assert_error(&r, 404, "NOT_FOUND");
}

fn refund_related_payments(srv: &TestServer) {
    let inv = simple_invoice(srv, "400.00");
    accept_installments(srv, &id_of(&inv), 2);
    // Both installments paid by card in one gateway transaction (as the hosted page will).
    let inv_id: billing_core::ids::InvoiceId = id_of(&inv).parse().unwrap();
    let txn = uuid::Uuid::now_v7();
    use billing_core::store::Store;
    srv.app
        .billing
        .engine()
        .store
        .write(|tx| {
            for mut p in tx.invoice_payments(inv_id)? {
                p.status = billing_core::payment::PaymentStatus::Succeeded;
                p.method = Some(billing_core::payment::PaymentMethod::Mada);
                p.transaction_id = Some(txn);
                tx.update_payment(&p)?;
            }
            Ok(())
        })
        .unwrap();
    let pays: Vec<String> = ok(srv.get(&invoice_path(&id_of(&inv))))["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    let body = json!({"refund_reason": "DUPLICATE"});
    let r = unchanged(srv, || srv.post(&format!("{}/refund", payment_path(&pays[0])), body.clone()));
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.body["error"]["code"].is_string(), "{}", r.text);
    let mut listed: Vec<String> = r.body["payment_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    listed.sort();
    let mut expected = pays.clone();
    expected.sort();
    assert_eq!(listed, expected);
    assert_eq!(r.body["total_amount"], "400.00");
    let r = ok(srv.post(
        &format!("{}/refund", payment_path(&pays[0])),
        json!({"refund_reason": "DUPLICATE", "allow_refund_multiple_related_payments": true}),
    ));
    assert_eq!(r["current_status"], "REFUNDED");
    assert_eq!(ok(srv.get(&payment_path(&pays[1])))["current_status"], "REFUNDED");
}

fn auto_charge_on_demand(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let pay = first_payment(&inv);
    let path = format!("/api/v2/payments/auto-charge-on-demand/{pay}");
    let r = unchanged(srv, || srv.post(&path, json!({})));
    assert_error(&r, 401, "FEATURE_DISABLED");
    set_auto_charge(srv, true);
    let r = unchanged(srv, || srv.post(&format!("/api/v2/payments/auto-charge-on-demand/{}", random_id()), json!({})));
    assert_error(&r, 404, "NOT_FOUND");
    let r = unchanged(srv, || srv.post(&path, json!({})));
    assert_error(&r, 400, "INVALID_PARAMETERS");
    let scope = admin_scope(srv);
    let consumer: billing_core::ids::ConsumerId = inv["organization_consumer_id"].as_str().unwrap().parse().unwrap();
    // No consent to charge: 404.
    srv.app
        .billing
        .payments()
        .save_card(&scope, consumer, "4111111111111111", 12, 2030, false)
        .unwrap();
    let r = unchanged(srv, || srv.post(&path, json!({})));
    assert_error(&r, 404, "NOT_FOUND");
    // A declined card: 400, the payment FAILED.
    srv.app
        .billing
        .payments()
        .save_card(&scope, consumer, "4201320000311101", 12, 2030, true)
        .unwrap();
    let r = srv.post(&path, json!({}));
    assert_error(&r, 400, "INVALID_PARAMETERS");
    let p = ok(srv.get(&payment_path(&pay)));
    assert_eq!(p["current_status"], "FAILED");
    assert!(p["latest_pgw_message"].as_str().unwrap().starts_with("51"));
    // An approved card: paid.
    std::thread::sleep(std::time::Duration::from_millis(2));
    srv.app
        .billing
        .payments()
        .save_card(&scope, consumer, "5421080101000000", 12, 2030, true)
        .unwrap();
    let r = ok(srv.post(&path, json!({})));
    assert_eq!(r, json!({"payment_id": pay, "invoice_id": id_of(&inv)}));
    let p = ok(srv.get(&payment_path(&pay)));
    assert_eq!(
        (p["current_status"].clone(), p["payment_method"].clone()),
        (json!("SUCCEEDED"), json!("MASTERCARD"))
    );
    assert_eq!(ok(srv.get(&invoice_path(&id_of(&inv))))["status"], "COMPLETED");
    let r = unchanged(srv, || srv.post(&path, json!({})));
    assert_error(&r, 400, "PAYMENT_FINALIZED");
    // A card payment is refunded through the (sandbox) gateway.
    let r = ok(srv.post(&format!("{}/refund", payment_path(&pay)), json!({"refund_reason": "OTHER"})));
    assert_eq!(r["current_status"], "REFUNDED");
}

http_tests!(
    get_and_list_payments,
    mark_paid_completes_the_invoice,
    mark_paid_refusals_change_nothing,
    installments_are_paid_one_by_one,
    refund_full,
    refund_related_payments,
    auto_charge_on_demand,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(
    get_and_list_payments,
    mark_paid_completes_the_invoice,
    refund_related_payments,
    auto_charge_on_demand,
);
