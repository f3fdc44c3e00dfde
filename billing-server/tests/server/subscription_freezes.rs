//! /api/v2/subscriptions/{id}/freeze and /freeze/{freeze_id}: create (FreezeSubscriptionBase),
//! list (paging, sorting), update and delete, driven on the sandbox clock (FROZEN at the start,
//! ACTIVE at the end, the period extended and the next invoice issued at the moved end), the
//! events with `data.freeze`, `latest_freeze` in SubscriptionDetailed; every refusal (bad
//! bodies 422, statuses and ended freezes 400 INVALID_STATUS, overlaps 400 FREEZE_OVERLAP,
//! unknown ids and another branch 404) with nothing written.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::TestServer;
use hyper::Method;
use serde_json::{json, Value};

const ADVANCE: &str = "/api/v2/sandbox/clock/advance";

const FREEZE_FIELDS: [&str; 9] = [
    "created_at",
    "updated_at",
    "id",
    "freeze_start_datetime",
    "freeze_end_datetime",
    "notes",
    "subscription_id",
    "invoice_id",
    "duration",
];

fn sub_path(id: &str) -> String {
    format!("/api/v2/subscriptions/{id}")
}

fn freeze_path(sub: &str) -> String {
    format!("/api/v2/subscriptions/{sub}/freeze")
}

fn one_freeze(sub: &str, freeze: &str) -> String {
    format!("/api/v2/subscriptions/{sub}/freeze/{freeze}")
}

fn to(srv: &TestServer, at: &str) {
    ok(srv.post(ADVANCE, json!({ "to": at })));
}

/// An ACTIVE monthly subscription from `period_start` (its first invoice marked paid), its
/// consumer with a card on file.
fn active_sub(srv: &TestServer, period_start: &str) -> Value {
    let c = quiet_consumer(srv, "Sara");
    srv.app
        .billing
        .payments()
        .save_card(&admin_scope(srv), c.parse().unwrap(), "4111111111111111", 12, 2040, true)
        .unwrap();
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let v = ok(srv.post(
        "/api/v2/subscriptions",
        json!({"organization_consumer_id": c, "items": [{"product_id": gym}], "period_start": period_start}),
    ));
    let inv = ok(srv.get(&invoice_path(v["latest_invoice_id"].as_str().unwrap())));
    ok(mark_paid(srv, &first_payment(&inv), "CASH"));
    ok(srv.get(&sub_path(&id_of(&v))))
}

pub(crate) fn sub_invoices(srv: &TestServer, id: &str) -> Vec<Value> {
    let r = ok(srv.get(&format!("/api/v2/invoices?subscription_id={id}&limit=100&sort_direction=asc")));
    r["data"].as_array().unwrap().clone()
}

/// The freeze events of a subscription, in order, with the freeze each carries.
fn freeze_events(srv: &TestServer, sub: &str) -> Vec<(String, Value)> {
    event_payloads(srv)
        .into_iter()
        .filter(|p| p["entity_id"] == sub && p["data"]["freeze"].is_object())
        .map(|p| (p["event_type"].as_str().unwrap().to_string(), p["data"]["freeze"]["id"].clone()))
        .collect()
}

fn freeze_lifecycle_on_the_sandbox_clock(srv: &TestServer) {
    to(srv, "2031-01-15T09:00:00Z");
    let v = active_sub(srv, "2031-01-15T09:00:00Z");
    let id = id_of(&v);
    assert_eq!(v["status"], "ACTIVE");
    assert_eq!(v["latest_freeze"], Value::Null);
    let f = ok(srv.post(
        &freeze_path(&id),
        json!({"freeze_start_datetime": "2031-01-20T12:00:00+03:00", "freeze_end_datetime": "2031-01-30T09:00:00Z", "notes": "Trip"}),
    ));
    for k in FREEZE_FIELDS {
        assert!(f.get(k).is_some(), "FreezeSubscriptionBase lacks {k}: {f}");
    }
    assert_eq!(f["freeze_start_datetime"], "2031-01-20T09:00:00.000000Z");
    assert_eq!(f["freeze_end_datetime"], "2031-01-30T09:00:00.000000Z");
    assert_eq!((f["duration"].as_i64(), f["notes"].as_str()), (Some(10), Some("Trip")));
    assert_eq!(f["subscription_id"], v["id"]);
    assert_eq!(f["invoice_id"], v["latest_invoice_id"]);
    assert_eq!(f["status"], "SCHEDULED");
    let fid = id_of(&f);
    let list = ok(srv.get(&freeze_path(&id)));
    assert_eq!(list["data"][0]["id"], f["id"]);
    assert_eq!(list["pagination"]["total_count"], 1);
    assert_eq!(ok(srv.get(&sub_path(&id)))["latest_freeze"]["id"], f["id"]);

    to(srv, "2031-01-20T09:00:00Z");
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!(got["status"], "FROZEN");
    assert_eq!(got["latest_freeze"]["status"], "IN_FORCE");
    // A later end for the freeze in force.
    let f2 = ok(srv.put(
        &one_freeze(&id, &fid),
        json!({"freeze_start_datetime": "2031-01-20T09:00:00Z", "freeze_end_datetime": "2031-02-01T09:00:00Z"}),
    ));
    assert_eq!((f2["duration"].as_i64(), f2["notes"].as_str()), (Some(12), Some("Trip")));
    to(srv, "2031-02-01T09:00:00Z");
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!(got["status"], "ACTIVE");
    // Feb 15 + the 12 days frozen.
    assert_eq!(got["current_period_end"], "2031-02-27T09:00:00.000000Z");
    assert_eq!(got["latest_freeze"]["status"], "ENDED");
    assert_eq!(sub_invoices(srv, &id).len(), 1);
    to(srv, "2031-02-27T09:00:00Z");
    let invs = sub_invoices(srv, &id);
    assert_eq!(invs.len(), 2);
    assert_eq!(invs[1]["scheduled_on"], "2031-02-27T09:00:00.000000Z");
    assert_eq!(invs[1]["status"], "COMPLETED");
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!(got["current_period_end"], "2031-03-27T09:00:00.000000Z");

    // A freeze that has not started, deleted: an empty success body, no longer listed.
    let g = ok(srv.post(&freeze_path(&id), json!({"freeze_start_datetime": "2031-03-01T00:00:00Z"})));
    assert_eq!((g["freeze_end_datetime"].clone(), g["duration"].clone()), (Value::Null, Value::Null));
    assert_eq!(ok(srv.delete(&one_freeze(&id, &id_of(&g)))), json!({}));
    let list = ok(srv.get(&format!("{}?sort_field=freeze_start_datetime&sort_direction=asc", freeze_path(&id))));
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert_eq!(list["data"][0]["id"], f["id"]);
    // A freeze in force, deleted: it ends now and stays listed.
    let h = ok(srv.post(
        &freeze_path(&id),
        json!({"freeze_start_datetime": "2031-03-01T00:00:00Z", "freeze_end_datetime": "2031-03-20T00:00:00Z"}),
    ));
    to(srv, "2031-03-03T00:00:00Z");
    assert_eq!(ok(srv.get(&sub_path(&id)))["status"], "FROZEN");
    assert_eq!(ok(srv.delete(&one_freeze(&id, &id_of(&h)))), json!({}));
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!(got["status"], "ACTIVE");
    // 2 days frozen (and the moments the request took: the sandbox clock runs on after an
    // advance).
    assert!(got["current_period_end"].as_str().unwrap().starts_with("2031-03-29T09:00:0"), "{got}");
    assert_eq!(got["latest_freeze"]["id"], h["id"]);
    assert!(got["latest_freeze"]["freeze_end_datetime"].as_str().unwrap().starts_with("2031-03-03T00:00:0"));
    let r = ok(srv.get(&format!("{}?limit=1&page=2&sort_field=freeze_start_datetime", freeze_path(&id))));
    assert_eq!(r["data"][0]["id"], f["id"]);
    assert_eq!(r["pagination"]["has_previous_page"], true);

    let kinds: Vec<(String, Value)> = freeze_events(srv, &id);
    let want = [
        ("SUBSCRIPTION_FROZEN", &f["id"]),
        ("SUBSCRIPTION_FREEZE_NOW", &f["id"]),
        ("SUBSCRIPTION_UNFREEZE_FUTURE", &f["id"]),
        ("SUBSCRIPTION_UNFREEZE_NOW", &f["id"]),
        ("SUBSCRIPTION_FROZEN", &g["id"]),
        ("SUBSCRIPTION_FREEZE_CANCEL", &g["id"]),
        ("SUBSCRIPTION_FROZEN", &h["id"]),
        ("SUBSCRIPTION_FREEZE_NOW", &h["id"]),
        ("SUBSCRIPTION_UNFREEZE_NOW", &h["id"]),
    ];
    assert_eq!(kinds, want.iter().map(|(k, v)| (k.to_string(), (*v).clone())).collect::<Vec<_>>());
    let frozen = event_payloads(srv).into_iter().find(|p| p["event_type"] == "SUBSCRIPTION_FREEZE_NOW").unwrap();
    assert_eq!(
        (frozen["entity_type"].as_str(), frozen["status"].as_str()),
        (Some("SUBSCRIPTION"), Some("FROZEN"))
    );
    assert_eq!(frozen["data"]["subscription"]["id"], v["id"]);
}

fn freeze_refusals_write_nothing(srv: &TestServer) {
    to(srv, "2031-01-15T09:00:00Z");
    let v = active_sub(srv, "2031-01-15T09:00:00Z");
    let id = id_of(&v);
    let f = ok(srv.post(
        &freeze_path(&id),
        json!({"freeze_start_datetime": "2031-02-01T00:00:00Z", "freeze_end_datetime": "2031-02-05T00:00:00Z"}),
    ));
    let fid = id_of(&f);
    let path = freeze_path(&id);
    let bad = |body: Value, loc: Value, kind: Option<&str>| {
        let r = srv.unchanged(|| srv.post(&path, body));
        assert_invalid(&r, loc, kind);
    };
    bad(json!({}), json!(["body", "freeze_start_datetime"]), Some("missing"));
    bad(
        json!({"freeze_start_datetime": "soon"}),
        json!(["body", "freeze_start_datetime"]),
        Some("value_error"),
    );
    bad(
        json!({"freeze_start_datetime": 5}),
        json!(["body", "freeze_start_datetime"]),
        Some("string_type"),
    );
    bad(
        json!({"freeze_start_datetime": "2031-03-01T00:00:00Z", "freeze_end_datetime": "2031-02-28T00:00:00Z"}),
        json!(["body", "freeze_end_datetime"]),
        Some("value_error"),
    );
    bad(
        json!({"freeze_start_datetime": "2031-03-01T00:00:00Z", "notes": "x".repeat(1001)}),
        json!(["body", "notes"]),
        Some("string_too_long"),
    );
    bad(json!([1]), json!(["body"]), None);
    bad(
        json!({"freeze_start_datetime": "2031-01-01T00:00:00Z"}),
        json!(["body", "freeze_start_datetime"]),
        Some("value_error"),
    );
    let r = srv.unchanged(|| srv.put(&one_freeze(&id, &fid), json!({"freeze_start_datetime": "2031-02-02T00:00:00Z"})));
    assert_invalid(&r, json!(["body", "freeze_end_datetime"]), Some("missing"));
    let r = srv.unchanged(|| srv.post(&path, json!({"freeze_start_datetime": "2031-02-04T00:00:00Z"})));
    assert_error(&r, 400, "FREEZE_OVERLAP");
    let r = srv.unchanged(|| srv.get(&format!("{path}?sort_field=notes")));
    assert_invalid(&r, json!(["query", "sort_field"]), None);
    // Unknown ids, another subscription's freeze, a malformed id.
    let later = json!({"freeze_start_datetime": "2031-03-01T00:00:00Z", "freeze_end_datetime": null});
    let r = srv.unchanged(|| srv.post(&freeze_path(&random_id()), later.clone()));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.get(&freeze_path(&random_id())));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.put(&one_freeze(&id, &random_id()), later.clone()));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.delete(&one_freeze(&id, &random_id())));
    assert_error(&r, 404, "NOT_FOUND");
    let other = id_of(&active_sub(srv, "2031-01-15T09:00:00Z"));
    let r = srv.unchanged(|| srv.delete(&one_freeze(&other, &fid)));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.delete(&one_freeze(&id, "nope")));
    assert_invalid(&r, json!(["path", "freeze_id"]), Some("uuid_parsing"));
    // An INACTIVE subscription cannot be frozen.
    let c = quiet_consumer(srv, "Omar");
    let gym = id_of(&recurring_product(srv, "Pool", "50.00"));
    let inactive = ok(srv.post(
        "/api/v2/subscriptions",
        json!({"organization_consumer_id": c, "items": [{"product_id": gym}], "period_start": "2031-02-01T00:00:00Z"}),
    ));
    let r = srv.unchanged(|| srv.post(&freeze_path(&id_of(&inactive)), later.clone()));
    assert_error(&r, 400, "INVALID_STATUS");
    // Another branch sees neither the subscription nor its freezes.
    let b = branch(srv, "Other");
    for (m, p, body) in [
        (Method::POST, path.clone(), Some(later.clone())),
        (Method::GET, path.clone(), None),
        (Method::PUT, one_freeze(&id, &fid), Some(later.clone())),
        (Method::DELETE, one_freeze(&id, &fid), None),
    ] {
        let r = srv.unchanged(|| in_branch(srv, &b, m.clone(), &p, body.clone()));
        assert_error(&r, 404, "NOT_FOUND");
    }
    // An ended freeze cannot be changed or deleted.
    to(srv, "2031-02-06T00:00:00Z");
    let r = srv.unchanged(|| srv.delete(&one_freeze(&id, &fid)));
    assert_error(&r, 400, "INVALID_STATUS");
    let r = srv.unchanged(|| srv.put(&one_freeze(&id, &fid), later.clone()));
    assert_error(&r, 400, "INVALID_STATUS");
    assert_eq!(ok(srv.get(&sub_path(&id)))["current_period_end"], "2031-02-19T09:00:00.000000Z");
}

http_tests!(freeze_lifecycle_on_the_sandbox_clock, freeze_refusals_write_nothing);

postgres_smoke!(freeze_lifecycle_on_the_sandbox_clock, freeze_refusals_write_nothing);
