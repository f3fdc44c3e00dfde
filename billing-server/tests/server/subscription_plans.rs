//! Subscription plans over HTTP: `PUT /api/v2/subscriptions/{id}` (fields applied at once, a
//! plan change scheduled with its PendingPlanChange, applied at the period end and billed as
//! previewed; an interval change renewing quarterly),
//! `DELETE /api/v2/subscriptions/{id}/pending-change`, the next invoice prepared ahead by the
//! organization's lead time (re-issued by a plan change, voided by a cancellation and prepared
//! again by uncancel), and the subscription settings of `/api/v2/organization/settings` (lead
//! time, renewal retry schedule driving a dunning), all on the sandbox clock; every refusal
//! with its status, code or `detail` location, and nothing written.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::TestServer;
use chrono::{DateTime, Duration, Utc};
use hyper::Method;
use serde_json::{json, Value};

const ADVANCE: &str = "/api/v2/sandbox/clock/advance";
const SETTINGS: &str = "/api/v2/organization/settings";

const PENDING_FIELDS: [&str; 14] = [
    "id",
    "effective_at",
    "invoice_was_reissued",
    "target_items",
    "target_subscription_coupon_ids",
    "target_recurring_interval",
    "target_recurring_interval_count",
    "target_amount",
    "currency",
    "current_amount",
    "delta_amount",
    "delta_amount_per_month",
    "changes",
    "next_invoice_preview",
];

fn sub_path(id: &str) -> String {
    format!("/api/v2/subscriptions/{id}")
}

fn pending_path(id: &str) -> String {
    format!("/api/v2/subscriptions/{id}/pending-change")
}

fn now(srv: &TestServer) -> DateTime<Utc> {
    time_of(&ok(srv.get("/api/v2/sandbox/clock"))["now"])
}

fn to(srv: &TestServer, at: DateTime<Utc>) {
    ok(srv.post(ADVANCE, json!({"to": at.to_rfc3339()})));
}

fn items(list: &[(&str, u32)]) -> Value {
    json!(list.iter().map(|(p, q)| json!({"product_id": p, "quantity": q})).collect::<Vec<_>>())
}

fn plan(list: &[(&str, u32)], coupons: &[&str]) -> Value {
    json!({"items": items(list), "coupons": coupons})
}

/// An ACTIVE monthly subscription starting now, its first invoice paid; with a card on file
/// unless `card` is `None`.
fn active_sub(srv: &TestServer, product: &str, card: Option<&str>) -> Value {
    let c = quiet_consumer(srv, "Sara");
    if let Some(number) = card {
        srv.app
            .billing
            .payments()
            .save_card(&admin_scope(srv), c.parse().unwrap(), number, 12, 2040, true)
            .unwrap();
    }
    let body = json!({
        "organization_consumer_id": c,
        "items": items(&[(product, 1)]),
        "period_start": now(srv).to_rfc3339(),
    });
    let v = ok(srv.post("/api/v2/subscriptions", body));
    let inv = ok(srv.get(&invoice_path(v["latest_invoice_id"].as_str().unwrap())));
    ok(mark_paid(srv, &first_payment(&inv), "CASH"));
    ok(srv.get(&sub_path(&id_of(&v))))
}

/// The subscription's invoices, oldest first (re-issued ones too).
fn sub_invoices(srv: &TestServer, id: &str) -> Vec<Value> {
    let r = ok(srv.get(&format!(
        "/api/v2/invoices?subscription_id={id}&limit=100&sort_direction=asc&include_payments=true"
    )));
    r["data"].as_array().unwrap().clone()
}

fn sub_events(srv: &TestServer, id: &str) -> Vec<String> {
    events(srv).into_iter().filter(|(_, e)| e == id).map(|(k, _)| k).collect()
}

/// PUT with only description, until_cycle_number and overrides (the items and coupons as
/// they are): applied at once, SUBSCRIPTION_PLAN_UPDATED, no pending change.
fn put_applies_immediate_fields(srv: &TestServer) {
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let v = active_sub(srv, &gym, None);
    let id = id_of(&v);
    let mut body = plan(&[(&gym, 1)], &[]);
    body["description"] = json!("Gym, upstairs");
    body["until_cycle_number"] = json!(4);
    body["override_payment_methods"] = json!({"subscription_auto_renewal": false, "bank_transfer": true});
    let r = ok(srv.put(&sub_path(&id), body));
    assert_eq!(r["description"], "Gym, upstairs");
    assert_eq!(r["until_cycle_number"], 4);
    assert_eq!(r["override_payment_methods"]["subscription_auto_renewal"], false);
    assert_eq!(r["override_payment_methods"]["bank_transfer"], true);
    assert_eq!(r["pending_change"], Value::Null);
    assert_eq!((r["amount"].as_str(), r["status"].as_str()), (Some("100.00"), Some("ACTIVE")));
    assert_eq!(ok(srv.get(&sub_path(&id)))["description"], "Gym, upstairs");
    assert_eq!(sub_events(srv, &id).last().map(String::as_str), Some("SUBSCRIPTION_PLAN_UPDATED"));
    let mut clear = plan(&[(&gym, 1)], &[]);
    clear["description"] = Value::Null;
    let r = ok(srv.put(&sub_path(&id), clear));
    assert_eq!((r["description"].clone(), r["until_cycle_number"].clone()), (Value::Null, json!(4)));
}

/// PUT with other items and a coupon: `pending_change` (every PendingPlanChange field, the
/// diff, the amounts, the preview); the subscription bills as before until the period end,
/// where the change is applied (SUBSCRIPTION_PLAN_CHANGED) and the new cycle's invoice is the
/// preview, to the minor unit.
fn put_schedules_a_change_applied_at_the_period_end(srv: &TestServer) {
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let towel = id_of(&recurring_product(srv, "Towel", "20.00"));
    let ten = id_of(&percent_coupon(srv, "TEN", "10"));
    let v = active_sub(srv, &gym, Some("4111111111111111"));
    let id = id_of(&v);
    let r = ok(srv.put(&sub_path(&id), plan(&[(&gym, 2), (&towel, 1)], &[&ten])));
    assert_eq!((r["amount"].as_str(), r["items"].as_array().unwrap().len()), (Some("100.00"), 1));
    let pc = &r["pending_change"];
    for f in PENDING_FIELDS {
        assert!(pc.get(f).is_some(), "PendingPlanChange lacks {f}: {pc}");
    }
    assert_eq!(pc["effective_at"], v["current_period_end"]);
    assert_eq!(pc["invoice_was_reissued"], false);
    assert_eq!(
        (pc["current_amount"].as_str(), pc["target_amount"].as_str(), pc["delta_amount"].as_str()),
        (Some("100.00"), Some("198.00"), Some("98.00"))
    );
    assert_eq!((pc["currency"].as_str(), pc["delta_amount_per_month"].as_str()), (Some("SAR"), Some("98.00")));
    assert_eq!(
        (pc["target_recurring_interval"].as_str(), pc["target_recurring_interval_count"].as_u64()),
        (Some("MONTH"), Some(1))
    );
    assert_eq!(pc["target_subscription_coupon_ids"], json!([ten]));
    assert_eq!(
        pc["target_items"],
        json!([
            {"product_id": gym, "product_name": "Gym", "quantity": 2, "original_amount": "200.00", "discounted_amount": "200.00"},
            {"product_id": towel, "product_name": "Towel", "quantity": 1, "original_amount": "20.00", "discounted_amount": "20.00"},
        ])
    );
    let kinds: Vec<&str> = pc["changes"].as_array().unwrap().iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["QUANTITY_INCREASED", "PRODUCT_ADDED", "COUPON_ADDED"]);
    assert_eq!(
        pc["changes"][0],
        json!({"kind": "QUANTITY_INCREASED", "label": "Gym: quantity 1 → 2", "product_id": gym, "from_value": "1", "to_value": "2"})
    );
    let pv = &pc["next_invoice_preview"];
    assert_eq!(
        (pv["period_start"].clone(), pv["due_at"].clone(), pv["issue_at"].clone()),
        (
            v["current_period_end"].clone(),
            v["current_period_end"].clone(),
            v["current_period_end"].clone()
        )
    );
    assert_eq!(
        (
            pv["subtotal"].as_str(),
            pv["discount_total"].as_str(),
            pv["total_amount"].as_str(),
            pv["currency"].as_str()
        ),
        (Some("220.00"), Some("22.00"), Some("198.00"), Some("SAR"))
    );
    assert_eq!(ok(srv.get(&sub_path(&id)))["pending_change"], *pc);
    assert_eq!(sub_events(srv, &id).last().map(String::as_str), Some("SUBSCRIPTION_PLAN_CHANGE_SCHEDULED"));
    let scheduled = event_payloads(srv)
        .into_iter()
        .find(|p| p["event_type"] == "SUBSCRIPTION_PLAN_CHANGE_SCHEDULED")
        .unwrap();
    assert_eq!(scheduled["data"]["pending_change"]["id"], pc["id"]);
    assert_eq!(scheduled["entity_type"], "SUBSCRIPTION");

    to(srv, time_of(&v["current_period_end"]) + Duration::seconds(1));
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!((got["amount"].as_str(), got["current_cycle_number"].as_u64()), (Some("198.00"), Some(2)));
    assert_eq!(got["pending_change"], Value::Null);
    assert_eq!(got["items"].as_array().unwrap().len(), 2);
    let invs = sub_invoices(srv, &id);
    assert_eq!(invs.len(), 2);
    assert_eq!(invs[1]["total_amount"], pv["total_amount"]);
    assert_eq!(invs[1]["total_amount"], "198.00");
    assert_eq!(invs[1]["scheduled_on"], pv["period_start"]);
    assert_eq!(invs[1]["status"], "COMPLETED");
    assert_eq!(got["latest_invoice_id"], invs[1]["id"]);
    assert!(sub_events(srv, &id).contains(&"SUBSCRIPTION_PLAN_CHANGED".to_string()));
}

/// DELETE pending-change: withdraws the change (an empty success body,
/// SUBSCRIPTION_PLAN_CHANGE_CANCELED); again, a no-op that writes nothing; unknown id 404, bad
/// id 422. A second PUT replaces a change.
fn delete_pending_change(srv: &TestServer) {
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let v = active_sub(srv, &gym, None);
    let id = id_of(&v);
    let first = ok(srv.put(&sub_path(&id), plan(&[(&gym, 2)], &[])))["pending_change"].clone();
    let second = ok(srv.put(&sub_path(&id), plan(&[(&gym, 3)], &[])))["pending_change"].clone();
    assert_ne!(first["id"], second["id"]);
    assert_eq!(second["target_amount"], "300.00");
    assert_eq!(ok(srv.delete(&pending_path(&id))), json!({}));
    assert_eq!(ok(srv.get(&sub_path(&id)))["pending_change"], Value::Null);
    assert_eq!(sub_events(srv, &id).last().map(String::as_str), Some("SUBSCRIPTION_PLAN_CHANGE_CANCELED"));
    let r = unchanged(srv, || srv.delete(&pending_path(&id)));
    assert_eq!(ok(r), json!({}));
    let r = unchanged(srv, || srv.delete(&pending_path(&random_id())));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.delete(&pending_path("nope"));
    assert_invalid(&r, json!(["path", "subscription_id"]), Some("uuid_parsing"));
    // Nothing changes at the period end.
    to(srv, time_of(&v["current_period_end"]) + Duration::seconds(1));
    assert_eq!(sub_invoices(srv, &id)[1]["total_amount"], "100.00");
}

/// Refused PUTs write nothing: missing items or coupons, a one-off product, another interval
/// or an interval field that is not the products', another consumer, an unknown product
/// (404), another branch (404), a CANCELED subscription (400 INVALID_STATUS), a bad id.
fn put_refusals_write_nothing(srv: &TestServer) {
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let towel = id_of(&one_off_product(srv, "Towel", "10.00"));
    let yearly = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Yearly", "type": "RECURRING", "recurring_interval": "YEAR", "price": "900"}),
    )));
    let v = active_sub(srv, &gym, None);
    let id = id_of(&v);
    let put = |body: Value| unchanged(srv, || srv.put(&sub_path(&id), body));
    let r = put(json!({}));
    assert_invalid(&r, json!(["body", "items"]), Some("missing"));
    assert_invalid(&r, json!(["body", "coupons"]), Some("missing"));
    let r = put(plan(&[(&gym, 1), (&towel, 1)], &[]));
    assert_invalid(&r, json!(["body", "items", 1, "product_id"]), Some("value_error"));
    let r = put(plan(&[(&gym, 1), (&yearly, 1)], &[]));
    assert_invalid(&r, json!(["body", "items"]), Some("value_error"));
    let mut b = plan(&[(&gym, 2)], &[]);
    b["recurring_interval"] = json!("YEAR");
    assert_invalid(&put(b), json!(["body", "recurring_interval"]), Some("value_error"));
    let mut b = plan(&[(&gym, 2)], &[]);
    b["organization_consumer_id"] = json!(quiet_consumer(srv, "Omar"));
    assert_invalid(&put(b), json!(["body", "organization_consumer_id"]), Some("value_error"));
    let mut b = plan(&[(&gym, 2)], &[]);
    b["until_cycle_number"] = json!(0);
    assert_invalid(&put(b), json!(["body", "until_cycle_number"]), None);
    assert_error(&put(plan(&[(&random_id(), 1)], &[])), 404, "NOT_FOUND");
    assert_error(&put(plan(&[(&gym, 2)], &[&random_id()])), 404, "NOT_FOUND");
    let r = unchanged(srv, || srv.put(&sub_path(&random_id()), plan(&[(&gym, 2)], &[])));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.put(&sub_path("nope"), plan(&[(&gym, 2)], &[]));
    assert_invalid(&r, json!(["path", "subscription_id"]), Some("uuid_parsing"));
    let other = branch(srv, "Other");
    let r = unchanged(srv, || in_branch(srv, &other, Method::PUT, &sub_path(&id), Some(plan(&[(&gym, 2)], &[]))));
    assert_error(&r, 404, "NOT_FOUND");
    let r = unchanged(srv, || in_branch(srv, &other, Method::DELETE, &pending_path(&id), None));
    assert_error(&r, 404, "NOT_FOUND");
    // CANCELED: refused.
    let c = quiet_consumer(srv, "Sara");
    let ended = ok(srv.post(
        "/api/v2/subscriptions",
        json!({"organization_consumer_id": c, "items": items(&[(&gym, 1)]), "period_start": now(srv).to_rfc3339()}),
    ));
    ok(srv.post(&format!("{}/cancel", sub_path(&id_of(&ended))), json!({})));
    let r = unchanged(srv, || srv.put(&sub_path(&id_of(&ended)), plan(&[(&gym, 2)], &[])));
    assert_error(&r, 400, "INVALID_STATUS");
}

/// With a lead time of 3 days (PATCH settings) the next invoice is prepared 3 days before the
/// period end; a PUT then voids it and issues it again for the new plan
/// (SUBSCRIPTION_PLAN_CHANGE_SCHEDULED and SUBSCRIPTION_PLAN_CHANGE_INVOICE_REISSUED,
/// `invoice_was_reissued`), and the re-issued invoice bills the next cycle.
fn lead_time_prepares_and_a_change_reissues(srv: &TestServer) {
    let r = ok(srv.call(Method::PATCH, SETTINGS, Some(json!({"subscription_invoice_lead_days": 3}))));
    assert_eq!(r["subscription_invoice_lead_days"], 3);
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let v = active_sub(srv, &gym, Some("4111111111111111"));
    let id = id_of(&v);
    let end = time_of(&v["current_period_end"]);
    to(srv, end - Duration::days(3) - Duration::seconds(5));
    assert_eq!(sub_invoices(srv, &id).len(), 1);
    to(srv, end - Duration::days(3) + Duration::seconds(5));
    let invs = sub_invoices(srv, &id);
    assert_eq!(invs.len(), 2);
    assert_eq!(
        (invs[1]["status"].as_str(), invs[1]["scheduled_on"].clone()),
        (Some("CREATED"), v["current_period_end"].clone())
    );
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!(
        (got["current_cycle_number"].as_u64(), got["latest_invoice_id"].clone()),
        (Some(1), v["latest_invoice_id"].clone())
    );
    let r = ok(srv.put(&sub_path(&id), plan(&[(&gym, 2)], &[])));
    let pc = &r["pending_change"];
    assert_eq!(pc["invoice_was_reissued"], true);
    let invs = sub_invoices(srv, &id);
    assert_eq!(invs.len(), 3);
    assert_eq!(invs[1]["status"], "CANCELED");
    assert_eq!(
        (invs[2]["status"].as_str(), invs[2]["total_amount"].clone()),
        (Some("CREATED"), pc["next_invoice_preview"]["total_amount"].clone())
    );
    assert_eq!(pc["next_invoice_preview"]["issue_at"], invs[2]["created_at"]);
    let evs = sub_events(srv, &id);
    assert_eq!(
        evs[evs.len() - 2..],
        ["SUBSCRIPTION_PLAN_CHANGE_SCHEDULED", "SUBSCRIPTION_PLAN_CHANGE_INVOICE_REISSUED"]
    );
    let reissued = event_payloads(srv)
        .into_iter()
        .find(|p| p["event_type"] == "SUBSCRIPTION_PLAN_CHANGE_INVOICE_REISSUED")
        .unwrap();
    assert_eq!(reissued["data"]["invoice"]["id"], invs[2]["id"]);
    assert_eq!(reissued["data"]["canceled_invoice"]["id"], invs[1]["id"]);
    to(srv, end + Duration::seconds(1));
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!(
        (got["latest_invoice_id"].clone(), got["amount"].as_str()),
        (invs[2]["id"].clone(), Some("200.00"))
    );
    assert_eq!(ok(srv.get(&invoice_path(invs[2]["id"].as_str().unwrap())))["status"], "COMPLETED");
    assert_eq!(sub_invoices(srv, &id).len(), 3);
}

/// A cancellation at the period end voids a prepared invoice at once; uncancel prepares it
/// again; at the end nothing is left to pay.
fn cancel_voids_a_prepared_invoice_and_uncancel_prepares_it(srv: &TestServer) {
    ok(srv.call(Method::PATCH, SETTINGS, Some(json!({"subscription_invoice_lead_days": 2}))));
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let v = active_sub(srv, &gym, None);
    let id = id_of(&v);
    let end = time_of(&v["current_period_end"]);
    to(srv, end - Duration::days(1));
    assert_eq!(sub_invoices(srv, &id).len(), 2);
    ok(srv.post(&format!("{}/cancel", sub_path(&id)), json!({})));
    let invs = sub_invoices(srv, &id);
    assert_eq!(invs[1]["status"], "CANCELED");
    assert_eq!(ok(srv.call(Method::PUT, &format!("{}/uncancel", sub_path(&id)), None)), json!({}));
    let invs = sub_invoices(srv, &id);
    assert_eq!((invs.len(), invs[2]["status"].as_str()), (3, Some("CREATED")));
    ok(srv.post(&format!("{}/cancel", sub_path(&id)), json!({})));
    to(srv, end + Duration::seconds(1));
    assert_eq!(ok(srv.get(&sub_path(&id)))["status"], "CANCELED");
    let invs = sub_invoices(srv, &id);
    assert!(invs[1..].iter().all(|i| i["status"] == "CANCELED"), "{invs:?}");
}

/// The subscription settings: defaults in GET, patched by an admin, refused out of bounds
/// (422 at the field, nothing written); a retry schedule of `[2]` makes a declined renewal
/// retried once, 2 days later, then INACTIVE.
fn subscription_settings_drive_the_dunning(srv: &TestServer) {
    let s = ok(srv.get(SETTINGS));
    assert_eq!(
        (s["subscription_invoice_lead_days"].clone(), s["subscription_renewal_retry_days"].clone()),
        (json!(0), json!([1, 3, 7]))
    );
    for (body, loc) in [
        (json!({"subscription_invoice_lead_days": 31}), json!(["body", "subscription_invoice_lead_days"])),
        (json!({"subscription_invoice_lead_days": -1}), json!(["body", "subscription_invoice_lead_days"])),
        (
            json!({"subscription_renewal_retry_days": [3, 1]}),
            json!(["body", "subscription_renewal_retry_days"]),
        ),
        (
            json!({"subscription_renewal_retry_days": [0]}),
            json!(["body", "subscription_renewal_retry_days", 0]),
        ),
        (
            json!({"subscription_renewal_retry_days": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}),
            json!(["body", "subscription_renewal_retry_days"]),
        ),
    ] {
        let r = unchanged(srv, || srv.call(Method::PATCH, SETTINGS, Some(body.clone())));
        assert_invalid(&r, loc, None);
    }
    let r = ok(srv.call(Method::PATCH, SETTINGS, Some(json!({"subscription_renewal_retry_days": [2]}))));
    assert_eq!(r["subscription_renewal_retry_days"], json!([2]));
    assert_eq!(ok(srv.get(SETTINGS))["subscription_renewal_retry_days"], json!([2]));
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let v = active_sub(srv, &gym, Some("4123120001090000"));
    let id = id_of(&v);
    let end = time_of(&v["current_period_end"]);
    to(srv, end + Duration::seconds(1));
    let failed = |srv: &TestServer| sub_events(srv, &id).iter().filter(|e| *e == "SUBSCRIPTION_CYCLE_RENEWAL_FAILED").count();
    assert_eq!(failed(srv), 1);
    to(srv, end + Duration::days(1) + Duration::seconds(1));
    assert_eq!((failed(srv), ok(srv.get(&sub_path(&id)))["status"].clone()), (1, json!("ACTIVE")));
    to(srv, end + Duration::days(2) + Duration::seconds(1));
    assert_eq!((failed(srv), ok(srv.get(&sub_path(&id)))["status"].clone()), (2, json!("INACTIVE")));
    let inactivated = sub_events(srv, &id).iter().filter(|e| *e == "SUBSCRIPTION_INACTIVATED").count();
    assert_eq!(inactivated, 1, "{:?}", sub_events(srv, &id));
    // Nothing more is tried once it is INACTIVE.
    to(srv, end + Duration::days(20));
    assert_eq!((failed(srv), ok(srv.get(&sub_path(&id)))["status"].clone()), (2, json!("INACTIVE")));
}

/// A monthly product replaced by a quarterly one: INTERVAL_CHANGED and PRODUCT_REPLACED in the
/// diff, the monthly delta, and from the period end quarterly cycles billed the new amount.
fn interval_change_renews_quarterly(srv: &TestServer) {
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let quarterly = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Gym quarterly", "type": "RECURRING", "recurring_interval": "QUARTER", "price": "270"}),
    )));
    let v = active_sub(srv, &gym, Some("4111111111111111"));
    let id = id_of(&v);
    let mut body = plan(&[(&quarterly, 1)], &[]);
    body["recurring_interval"] = json!("QUARTER");
    let pc = ok(srv.put(&sub_path(&id), body))["pending_change"].clone();
    let kinds: Vec<&str> = pc["changes"].as_array().unwrap().iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["INTERVAL_CHANGED", "PRODUCT_REPLACED"]);
    assert_eq!(
        (pc["changes"][0]["from_value"].as_str(), pc["changes"][0]["to_value"].as_str()),
        (Some("1 MONTH"), Some("1 QUARTER"))
    );
    assert_eq!(pc["changes"][1]["label"], "Gym replaced by Gym quarterly");
    assert_eq!(
        (pc["delta_amount"].as_str(), pc["delta_amount_per_month"].as_str()),
        (Some("170.00"), Some("-10.00"))
    );
    let end = time_of(&v["current_period_end"]);
    to(srv, end + Duration::seconds(1));
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!(got["recurring_interval"], "QUARTER");
    assert_eq!(got["current_period_start"], v["current_period_end"]);
    assert_eq!(got["current_period_end"], pc["next_invoice_preview"]["period_end"]);
    to(srv, time_of(&got["current_period_end"]) + Duration::seconds(1));
    let invs = sub_invoices(srv, &id);
    assert_eq!(invs.len(), 3);
    assert!(
        invs[1..].iter().all(|i| i["total_amount"] == "270.00" && i["status"] == "COMPLETED"),
        "{invs:?}"
    );
}

/// A smaller plan: PUT with a lower quantity, a product and the coupon dropped lists
/// QUANTITY_DECREASED, PRODUCT_REMOVED and COUPON_REMOVED (with their values and labels) and a
/// negative delta; applied at the period end, the new cycle bills the target amount.
fn put_reducing_the_plan_lists_what_goes(srv: &TestServer) {
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let towel = id_of(&recurring_product(srv, "Towel", "20.00"));
    let ten = id_of(&percent_coupon(srv, "TEN", "10"));
    let c = quiet_consumer(srv, "Sara");
    let mut body = json!({"organization_consumer_id": c, "items": items(&[(&gym, 3), (&towel, 1)]), "period_start": now(srv).to_rfc3339()});
    body["coupons"] = json!([ten]);
    let v = ok(srv.post("/api/v2/subscriptions", body));
    let inv = ok(srv.get(&invoice_path(v["latest_invoice_id"].as_str().unwrap())));
    assert_eq!(inv["total_amount"], "288.00");
    ok(mark_paid(srv, &first_payment(&inv), "CASH"));
    let id = id_of(&v);
    let pc = ok(srv.put(&sub_path(&id), plan(&[(&gym, 1)], &[])))["pending_change"].clone();
    assert_eq!(
        pc["changes"],
        json!([
            {"kind": "QUANTITY_DECREASED", "label": "Gym: quantity 3 → 1", "product_id": gym, "from_value": "3", "to_value": "1"},
            {"kind": "PRODUCT_REMOVED", "label": "Towel removed (quantity 1)", "product_id": towel, "from_value": "1", "to_value": null},
            {"kind": "COUPON_REMOVED", "label": "Coupon TEN removed", "product_id": null, "from_value": ten, "to_value": null},
        ])
    );
    assert_eq!(
        (pc["current_amount"].as_str(), pc["target_amount"].as_str(), pc["delta_amount"].as_str()),
        (Some("288.00"), Some("100.00"), Some("-188.00"))
    );
    assert_eq!(pc["target_subscription_coupon_ids"], json!([]));
    to(srv, time_of(&v["current_period_end"]) + Duration::seconds(1));
    let invs = sub_invoices(srv, &id);
    assert_eq!(invs.len(), 2);
    assert_eq!(invs[1]["total_amount"], pc["next_invoice_preview"]["total_amount"]);
    assert_eq!(invs[1]["total_amount"], "100.00");
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!((got["amount"].as_str(), got["items"].as_array().unwrap().len()), (Some("100.00"), 1));
}

http_tests!(
    put_applies_immediate_fields,
    put_schedules_a_change_applied_at_the_period_end,
    put_reducing_the_plan_lists_what_goes,
    delete_pending_change,
    put_refusals_write_nothing,
    lead_time_prepares_and_a_change_reissues,
    cancel_voids_a_prepared_invoice_and_uncancel_prepares_it,
    subscription_settings_drive_the_dunning,
    interval_change_renews_quarterly,
);

postgres_smoke!(
    put_schedules_a_change_applied_at_the_period_end,
    delete_pending_change,
    lead_time_prepares_and_a_change_reissues,
    subscription_settings_drive_the_dunning,
);
