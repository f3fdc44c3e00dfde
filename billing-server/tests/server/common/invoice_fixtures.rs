//! Setup steps for the invoice and payment tests, and a snapshot that includes invoices,
//! payments, events and notifications.
#![allow(dead_code)]

use super::fixtures::*;
use super::{Resp, TestServer};
use billing_core::invoice::{InvoiceSort, PaymentPlan};
use billing_core::list::{Direction, ListQuery};
use billing_core::store::Store;
use serde_json::{json, Value};

/// A consumer with an e-mail (so notify_consumer sends) and one without any channel.
pub fn consumer_with_email(srv: &TestServer, n: u32) -> String {
    id_of(&consumer(srv, json!({"name": format!("Payer {n}"), "email": format!("payer{n}@example.com")})))
}

pub fn quiet_consumer(srv: &TestServer, name: &str) -> String {
    id_of(&consumer(srv, json!({ "name": name })))
}

pub fn payment_methods(installment: bool) -> Value {
    json!({"mada": true, "visa": true, "mastercard": true, "amex": false, "bank_transfer": true, "installment": installment, "qurrah": false})
}

/// An InvoiceCreate body: `items` as (product id, quantity), no notification.
pub fn invoice_body(consumer: &str, items: &[(&str, u32)], coupons: &[&str]) -> Value {
    json!({
        "organization_consumer_id": consumer,
        "items": items.iter().map(|(p, q)| json!({"product_id": p, "quantity": q})).collect::<Vec<_>>(),
        "coupons": coupons,
        "payment_methods": payment_methods(true),
        "notify_consumer": false,
        "scheduled_on": "2026-12-01T00:00:00Z",
        "currency": "SAR",
    })
}

/// Creates an invoice; returns InvoiceDetailed.
pub fn create_invoice(srv: &TestServer, body: Value) -> Value {
    ok(srv.post("/api/v2/invoices", body))
}

/// A consumer, a 115.00 SAR product and an invoice for one of it; returns InvoiceDetailed.
pub fn simple_invoice(srv: &TestServer, price: &str) -> Value {
    let c = quiet_consumer(srv, "Simple Payer");
    let p = id_of(&one_off_product(srv, "Thing", price));
    create_invoice(srv, invoice_body(&c, &[(&p, 1)], &[]))
}

pub fn invoice_path(id: &str) -> String {
    format!("/api/v2/invoices/{id}")
}

pub fn payment_path(id: &str) -> String {
    format!("/api/v2/payments/{id}")
}

/// The id of the invoice's first payment.
pub fn first_payment(inv: &Value) -> String {
    inv["payments"][0]["id"].as_str().expect("a payment").to_string()
}

pub fn mark_paid(srv: &TestServer, payment: &str, method: &str) -> Resp {
    srv.post(&format!("{}/mark-paid", payment_path(payment)), json!({ "payment_method": method }))
}

/// The payer accepts in `n` installments (the hosted page does this through the same core call).
pub fn accept_installments(srv: &TestServer, invoice: &str, n: u8) {
    let scope = admin_scope(srv);
    srv.app
        .billing
        .invoices()
        .accept(&scope, invoice.parse().unwrap(), PaymentPlan::Installments(n))
        .expect("accept in installments");
}

pub fn admin_scope(srv: &TestServer) -> billing_core::auth::Scope {
    let cred = billing_core::auth::Credential::ApiKey {
        key: srv.boot.api_key.key.clone(),
        secret: srv.boot.api_key.secret.clone(),
    };
    srv.app.billing.auth().authenticate(&cred, None).expect("admin scope")
}

/// Switches auto-charge on demand on or off for the test organization.
pub fn set_auto_charge(srv: &TestServer, on: bool) {
    let org_id = srv.boot.org.id;
    srv.app
        .billing
        .engine()
        .store
        .write(|tx| {
            let mut org = tx.org(org_id)?.expect("org");
            org.settings.auto_charge_on_demand = on;
            tx.update_org(&org)?;
            Ok(())
        })
        .unwrap();
}

/// The event types written so far, in order, with their entity ids.
pub fn events(srv: &TestServer) -> Vec<(String, String)> {
    let org_id = srv.boot.org.id;
    srv.app
        .billing
        .engine()
        .store
        .read(|tx| Ok(tx.list_events(org_id)?))
        .unwrap()
        .into_iter()
        .map(|e| (e.event_type.as_str().to_string(), e.entity_id.to_string()))
        .collect()
}

/// The payloads of the events written so far.
pub fn event_payloads(srv: &TestServer) -> Vec<Value> {
    let org_id = srv.boot.org.id;
    srv.app
        .billing
        .engine()
        .store
        .read(|tx| Ok(tx.list_events(org_id)?))
        .unwrap()
        .into_iter()
        .map(|e| e.payload)
        .collect()
}

/// Everything `TestServer::snapshot` holds plus every invoice, item and payment of the branch.
pub fn snapshot(srv: &TestServer) -> String {
    let mut out = srv.snapshot();
    let branch = srv.boot.branch.id;
    srv.app
        .billing
        .engine()
        .store
        .read(|tx| {
            let mut page = 1;
            loop {
                let q = ListQuery {
                    page,
                    limit: 100,
                    sort: InvoiceSort::CreatedAt,
                    direction: Direction::Asc,
                    search: None,
                };
                let p = tx.list_invoices(branch, &q, &Default::default())?;
                for inv in &p.items {
                    out.push_str(&format!("{inv:?}\n{:?}\n", tx.invoice_payments(inv.id)?));
                }
                if p.items.len() < 100 {
                    break;
                }
                page += 1;
            }
            Ok(())
        })
        .unwrap();
    out
}

/// Asserts that `f` (a refused request) changes nothing, invoices and payments included.
pub fn unchanged<T>(srv: &TestServer, f: impl FnOnce() -> T) -> T {
    let before = snapshot(srv);
    let r = srv.unchanged(f);
    assert_eq!(before, snapshot(srv), "a refused request changed invoices or payments");
    r
}
