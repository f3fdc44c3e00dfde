//! Trials through POST /api/v2/subscriptions with `trial: true`: TRIALING until
//! `period_start` with no invoice (`trial_end`, `trial_period_days`, cycle 0), then on the
//! sandbox clock the first paid cycle's invoice charged to the card (ACTIVE) or awaited
//! (TRIAL_PENDING); cancel of TRIALING and TRIAL_PENDING (CANCELED at once, the unpaid invoice
//! voided on request); the refusals (a `period_start` not in the future, a malformed `trial`,
//! uncancel or freeze of a trial) with nothing written.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::TestServer;
use crate::subscription_freezes::sub_invoices;
use hyper::Method;
use serde_json::{json, Value};

const ADVANCE: &str = "/api/v2/sandbox/clock/advance";

fn sub_path(id: &str) -> String {
    format!("/api/v2/subscriptions/{id}")
}

fn trial(consumer: &str, product: &str, period_start: &str) -> Value {
    json!({"organization_consumer_id": consumer, "items": [{"product_id": product}], "period_start": period_start, "trial": true})
}

fn trials_on_the_sandbox_clock(srv: &TestServer) {
    ok(srv.post(ADVANCE, json!({"to": "2031-05-01T10:00:00Z"})));
    let c = quiet_consumer(srv, "Sara");
    srv.app
        .billing
        .payments()
        .save_card(&admin_scope(srv), c.parse().unwrap(), "4111111111111111", 12, 2040, true)
        .unwrap();
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let v = ok(srv.post("/api/v2/subscriptions", trial(&c, &gym, "2031-05-15T10:00:00Z")));
    let id = id_of(&v);
    assert_eq!(v["status"], "TRIALING");
    assert_eq!((v["current_cycle_number"].as_u64(), v["trial_period_days"].as_u64()), (Some(0), Some(14)));
    assert_eq!(v["trial_end"], "2031-05-15T10:00:00.000000Z");
    // Created now: the sandbox clock moves on with real time after an advance.
    assert!(v["current_period_start"].as_str().unwrap().starts_with("2031-05-01T10:00:0"), "{v}");
    assert_eq!(v["current_period_end"], "2031-05-15T10:00:00.000000Z");
    assert_eq!((v["latest_invoice_id"].clone(), v["latest_invoice"].clone()), (Value::Null, Value::Null));
    assert!(sub_invoices(srv, &id).is_empty());
    assert_eq!(ids(&srv.get("/api/v2/subscriptions?statuses=TRIALING")), vec![id.clone()]);
    // Neither uncanceled nor frozen while in trial.
    let r = srv.unchanged(|| srv.call(Method::PUT, &format!("{}/uncancel", sub_path(&id)), None));
    assert_error(&r, 400, "INVALID_STATUS");
    let r = srv.unchanged(|| srv.post(&format!("{}/freeze", sub_path(&id)), json!({"freeze_start_datetime": "2031-05-03T00:00:00Z"})));
    assert_error(&r, 400, "INVALID_STATUS");

    ok(srv.post(ADVANCE, json!({"to": "2031-05-15T10:00:00Z"})));
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!((got["status"].as_str(), got["current_cycle_number"].as_u64()), (Some("ACTIVE"), Some(1)));
    assert_eq!(got["current_period_end"], "2031-06-15T10:00:00.000000Z");
    assert_eq!(got["trial_end"], "2031-05-15T10:00:00.000000Z");
    let invs = sub_invoices(srv, &id);
    assert_eq!(invs.len(), 1);
    assert_eq!(
        (invs[0]["status"].as_str(), invs[0]["scheduled_on"].as_str()),
        (Some("COMPLETED"), Some("2031-05-15T10:00:00.000000Z"))
    );
    let kinds: Vec<String> = events(srv).into_iter().filter(|(_, e)| *e == id).map(|(k, _)| k).collect();
    assert_eq!(kinds, ["SUBSCRIPTION_CREATED", "SUBSCRIPTION_ACTIVATED"]);

    // No card: TRIAL_PENDING at the trial's end; canceled then, its invoice voided.
    let c2 = quiet_consumer(srv, "Omar");
    let p = ok(srv.post("/api/v2/subscriptions", trial(&c2, &gym, "2031-05-20T10:00:00Z")));
    let t = ok(srv.post("/api/v2/subscriptions", trial(&c2, &gym, "2031-06-20T10:00:00Z")));
    ok(srv.post(ADVANCE, json!({"to": "2031-05-20T10:00:01Z"})));
    let got = ok(srv.get(&sub_path(&id_of(&p))));
    assert_eq!(got["status"], "TRIAL_PENDING");
    assert_eq!(got["latest_invoice"]["status"], "CREATED");
    let r = ok(srv.post(&format!("{}/cancel", sub_path(&id_of(&p))), json!({"cancel_related_invoices": true})));
    assert_eq!(r["status"], "CANCELED");
    assert_eq!(ok(srv.get(&invoice_path(got["latest_invoice_id"].as_str().unwrap())))["status"], "CANCELED");
    // TRIALING: canceled at once; its end issues nothing.
    let r = ok(srv.post(&format!("{}/cancel", sub_path(&id_of(&t))), json!({})));
    assert_eq!(r["status"], "CANCELED");
    assert!(r["ended_at"].as_str().unwrap().starts_with("2031-05-20T10:00:0"), "{r}");
    ok(srv.post(ADVANCE, json!({"to": "2031-07-01T00:00:00Z"})));
    assert!(sub_invoices(srv, &id_of(&t)).is_empty());
}

fn trial_refusals_write_nothing(srv: &TestServer) {
    ok(srv.post(ADVANCE, json!({"to": "2031-05-01T10:00:00Z"})));
    let c = quiet_consumer(srv, "Sara");
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    for at in ["2031-05-01T09:00:00Z", "2000-01-01T00:00:00Z", "2045-01-01T00:00:00Z"] {
        let r = srv.unchanged(|| srv.post("/api/v2/subscriptions", trial(&c, &gym, at)));
        assert_invalid(&r, json!(["body", "period_start"]), Some("value_error"));
    }
    let mut body = trial(&c, &gym, "2031-06-01T00:00:00Z");
    body["trial"] = json!("maybe");
    let r = srv.unchanged(|| srv.post("/api/v2/subscriptions", body.clone()));
    assert_invalid(&r, json!(["body", "trial"]), Some("bool_type"));
    // `trial: false` is an ordinary subscription.
    body["trial"] = json!(false);
    let v = ok(srv.post("/api/v2/subscriptions", body));
    assert_eq!((v["status"].as_str(), v["trial_end"].clone()), (Some("INACTIVE"), Value::Null));
}

http_tests!(trials_on_the_sandbox_clock, trial_refusals_write_nothing);

postgres_smoke!(trials_on_the_sandbox_clock);
