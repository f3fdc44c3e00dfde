//! The sandbox test clock: GET /api/v2/sandbox/clock and POST /api/v2/sandbox/clock/advance.
//! It only moves forward, exists only for sandbox organizations, is per organization, and is
//! the time every operation of the organization records.

use crate::common::fixtures::*;
use crate::common::TestServer;
use billing_core::fields::Email;
use billing_core::org::BootstrapRequest;
use chrono::{DateTime, Duration, Utc};
use hyper::Method;
use serde_json::{json, Value};

const CLOCK: &str = "/api/v2/sandbox/clock";
const ADVANCE: &str = "/api/v2/sandbox/clock/advance";

fn clock_now(srv: &TestServer, key: &str) -> DateTime<Utc> {
    let r = ok(srv.call_as(key, None, Method::GET, CLOCK, None));
    time_of(&r["now"])
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn get_clock(srv: &TestServer) {
    let before = Utc::now();
    let r = ok(srv.get(CLOCK));
    assert_eq!(r["organization_id"], json!(srv.boot.org.id));
    let now = time_of(&r["now"]);
    assert!(
        now >= before - Duration::seconds(1) && now <= Utc::now() + Duration::seconds(1),
        "a new sandbox clock is the server time: {now}"
    );
    assert!(r["now"].as_str().unwrap().contains('.'), "microseconds: {}", r["now"]);
}

fn advance_by_seconds(srv: &TestServer) {
    let start = clock_now(srv, &srv.key);
    let r = ok(srv.post(ADVANCE, json!({"seconds": 86400})));
    assert_eq!(r["organization_id"], json!(srv.boot.org.id));
    let moved = time_of(&r["now"]);
    assert!(
        moved >= start + Duration::days(1) && moved <= Utc::now() + Duration::days(1) + Duration::seconds(1),
        "{start} -> {moved}"
    );
    let now = clock_now(srv, &srv.key);
    assert!(now >= moved && now <= moved + Duration::seconds(5), "the clock stays advanced: {now}");
    // Zero seconds is a no-op, not an error.
    let r = ok(srv.post(ADVANCE, json!({"seconds": 0})));
    assert!(time_of(&r["now"]) >= now);
    // Numeric strings are integers too.
    let r = ok(srv.post(ADVANCE, json!({"seconds": "60"})));
    assert!(time_of(&r["now"]) >= now + Duration::seconds(60));
}

fn advance_to_a_date(srv: &TestServer) {
    let r = ok(srv.post(ADVANCE, json!({"to": "2040-01-01T00:00:00Z"})));
    assert_eq!(r["now"], "2040-01-01T00:00:00.000000Z");
    let now = clock_now(srv, &srv.key);
    assert!(now >= at("2040-01-01T00:00:00Z") && now <= at("2040-01-01T00:00:05Z"), "{now}");

    // Offsets are converted; a value without one is UTC.
    let r = ok(srv.post(ADVANCE, json!({"to": "2040-01-02T03:00:00+03:00"})));
    assert_eq!(r["now"], "2040-01-02T00:00:00.000000Z");
    let r = ok(srv.post(ADVANCE, json!({"to": "2040-06-01T12:00:00"})));
    assert_eq!(r["now"], "2040-06-01T12:00:00.000000Z");
    let r = ok(srv.post(ADVANCE, json!({"seconds": 3600})));
    let t = time_of(&r["now"]);
    assert!(t >= at("2040-06-01T13:00:00Z") && t <= at("2040-06-01T13:00:05Z"), "{t}");
}

fn the_clock_never_goes_back(srv: &TestServer) {
    ok(srv.post(ADVANCE, json!({"to": "2040-01-01T00:00:00Z"})));
    for to in ["2039-12-31T23:59:59Z", "2040-01-01T00:00:00+03:00", "2000-01-01T00:00:00Z"] {
        let r = srv.unchanged(|| srv.post(ADVANCE, json!({ "to": to })));
        assert_invalid(&r, json!(["body", "to"]), Some("value_error"));
    }
    let r = srv.unchanged(|| srv.post(ADVANCE, json!({"seconds": -1})));
    assert_invalid(&r, json!(["body", "seconds"]), Some("greater_than_equal"));
    let now = clock_now(srv, &srv.key);
    assert!(now >= at("2040-01-01T00:00:00Z") && now <= at("2040-01-01T00:00:05Z"), "{now}");
}

fn advance_refuses_bad_bodies(srv: &TestServer) {
    let cases: Vec<(Value, Value, &str)> = vec![
        (json!({}), json!(["body", "seconds"]), "missing"),
        (json!({"seconds": null, "to": null}), json!(["body", "seconds"]), "missing"),
        (json!({"seconds": 10, "to": "2040-01-01T00:00:00Z"}), json!(["body", "to"]), "value_error"),
        (json!({"seconds": "soon"}), json!(["body", "seconds"]), "int_type"),
        (json!({"seconds": 1.5}), json!(["body", "seconds"]), "int_type"),
        (json!({"seconds": 100i64 * 366 * 24 * 3600 + 1}), json!(["body", "seconds"]), "less_than_equal"),
        (json!({"to": "tomorrow"}), json!(["body", "to"]), "datetime_parsing"),
        (json!({"to": 2040}), json!(["body", "to"]), "string_type"),
        (json!(null), json!(["body"]), "missing"),
        (json!([1]), json!(["body"]), "model_attributes_type"),
    ];
    for (body, loc, kind) in cases {
        let r = srv.unchanged(|| srv.post(ADVANCE, body.clone()));
        assert_invalid(&r, loc, Some(kind));
    }
}

fn live_organizations_have_no_test_clock(srv: &TestServer) {
    let live = srv
        .app
        .billing
        .org()
        .bootstrap(&BootstrapRequest {
            org_name: "Live Org".into(),
            admin_email: Email::parse("live@example.com").unwrap(),
            sandbox: false,
        })
        .unwrap();
    let key = live.api_key.header_value();
    assert_eq!(ok(srv.call_as(&key, None, Method::GET, "/api/v2/me", None))["organization"]["sandbox"], false);

    let r = srv.call_as(&key, None, Method::GET, CLOCK, None);
    assert_error(&r, 403, "SANDBOX_ONLY");
    let r = srv.unchanged(|| srv.call_as(&key, None, Method::POST, ADVANCE, Some(json!({"seconds": 3600}))));
    assert_error(&r, 403, "SANDBOX_ONLY");
    let r = srv.unchanged(|| srv.call_as(&key, None, Method::POST, ADVANCE, Some(json!({"to": "2040-01-01T00:00:00Z"}))));
    assert_error(&r, 403, "SANDBOX_ONLY");
    // The live organization's data keeps the real time.
    let c = ok(srv.call_as(&key, None, Method::POST, "/api/v2/consumers", Some(json!({"name": "Live"}))));
    assert!(time_of(&c["created_at"]) <= Utc::now() + Duration::seconds(1));
}

fn each_organization_has_its_own_clock(srv: &TestServer) {
    let other = srv
        .app
        .billing
        .org()
        .bootstrap(&BootstrapRequest {
            org_name: "Other Sandbox".into(),
            admin_email: Email::parse("other@example.com").unwrap(),
            sandbox: true,
        })
        .unwrap();
    let other_key = other.api_key.header_value();
    ok(srv.post(ADVANCE, json!({"to": "2040-01-01T00:00:00Z"})));
    let theirs = clock_now(srv, &other_key);
    assert!(
        theirs <= Utc::now() + Duration::seconds(1),
        "another organization's clock did not move: {theirs}"
    );
    let r = ok(srv.call_as(&other_key, None, Method::GET, CLOCK, None));
    assert_eq!(r["organization_id"], json!(other.org.id));
}

fn operations_use_the_test_clock(srv: &TestServer) {
    let early = simple_consumer(srv, "Early", 1);
    ok(srv.post(ADVANCE, json!({"to": "2040-01-01T00:00:00Z"})));
    let window = |v: &Value| {
        let t = time_of(v);
        assert!(
            t >= at("2040-01-01T00:00:00Z") && t <= at("2040-01-01T00:00:10Z"),
            "recorded on the test clock: {t}"
        );
    };
    let c = consumer(srv, json!({"name": "Late", "phone_number": phone(2)}));
    window(&c["created_at"]);
    let p = one_off_product(srv, "Future product", "10");
    window(&p["created_at"]);
    window(&p["prices"][0]["created_at"]);
    let cp = percent_coupon(srv, "FUTURE", "10");
    window(&cp["created_at"]);
    let b = ok(srv.post("/api/v2/branch", json!({"name": "Future branch"})));
    window(&b["created_at"]);
    let u = ok(srv.put(&format!("/api/v2/consumers/{early}"), json!({"alias": "x"})));
    window(&u["updated_at"]);
    assert!(time_of(&u["created_at"]) < at("2030-01-01T00:00:00Z"), "created_at stays");

    // An invitation expires seven days after the test-clock time.
    let inv = ok(srv.post(
        "/api/v2/organization/invite",
        json!({"email": "future@example.com", "role": "branch_user", "branches": [srv.branch_id()]}),
    ));
    let exp = time_of(&inv["expire_at"]);
    assert!(exp >= at("2040-01-08T00:00:00Z") && exp <= at("2040-01-08T00:00:10Z"), "{exp}");

    // Sorting by created_at follows the test clock.
    let asc = ids(&srv.get("/api/v2/consumers?sort_field=created_at&sort_direction=asc"));
    assert_eq!(asc, vec![early, id_of(&c)]);
}

http_tests!(
    get_clock,
    advance_by_seconds,
    advance_to_a_date,
    the_clock_never_goes_back,
    advance_refuses_bad_bodies,
    live_organizations_have_no_test_clock,
    each_organization_has_its_own_clock,
    operations_use_the_test_clock,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(advance_by_seconds, operations_use_the_test_clock,);
