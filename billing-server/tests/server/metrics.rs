//! `GET /metrics` (Prometheus text format): requests by route template and status with their
//! duration histogram, the due-work queue by kind (depth, due, leased, lag in the
//! organization's time), the store's numbers; no ids or organization data in it. Only with the
//! configured token; every label bounded whatever clients send.

use crate::common::fixtures::*;
use crate::common::TestServer;
use billing_core::ids::WorkId;
use billing_core::store::Store;
use billing_core::work::DueWork;
use hyper::Method;

/// The value of the sample `name{labels}` (labels exactly as written), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .map(|v| v.trim().parse().unwrap())
}

fn scrape(srv: &TestServer) -> String {
    let auth = format!("Bearer {}", crate::common::METRICS_TOKEN);
    let r = srv.raw(Method::GET, "/metrics", &[("authorization", &auth)], None);
    assert_eq!(r.status, 200, "{}", r.text);
    let ct = r.headers.get("content-type").unwrap().to_str().unwrap();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    r.text
}

fn requests_and_queue(srv: &TestServer) {
    let before = scrape(srv);
    let series = r#"billing_http_requests_total{method="GET",route="/api/v2/consumers/{consumer_id}",status="404"}"#;
    let base = sample(&before, series).unwrap_or(0.0);
    let id = "0190e5a0-0000-7000-8000-00000000abcd";
    for _ in 0..3 {
        assert_eq!(srv.get(&format!("/api/v2/consumers/{id}")).status, 404);
    }
    ok(srv.get("/api/v2/consumers"));
    let text = scrape(srv);
    assert_eq!(sample(&text, series), Some(base + 3.0), "{text}");
    assert!(
        sample(&text, r#"billing_http_requests_total{method="GET",route="/api/v2/consumers",status="200"}"#).is_some_and(|n| n >= 1.0),
        "{text}"
    );
    let count = sample(&text, r#"billing_http_request_duration_seconds_count{route="/api/v2/consumers/{consumer_id}"}"#).unwrap();
    let inf = sample(
        &text,
        r#"billing_http_request_duration_seconds_bucket{route="/api/v2/consumers/{consumer_id}",le="+Inf"}"#,
    )
    .unwrap();
    let fast = sample(
        &text,
        r#"billing_http_request_duration_seconds_bucket{route="/api/v2/consumers/{consumer_id}",le="10"}"#,
    )
    .unwrap();
    assert!(count >= 3.0 && inf == count && fast <= inf, "{text}");
    assert!(!text.contains(id), "no ids in the metrics");
    assert!(text.contains("# TYPE billing_http_request_duration_seconds histogram"), "{text}");

    // Two items of a test kind: one 30 s late, one tomorrow.
    let org = srv.boot.org.id;
    let now = srv.app.billing.engine().clock().now();
    for due in [now - chrono::Duration::seconds(30), now + chrono::Duration::days(1)] {
        let item = DueWork::new(WorkId::new(), org, "metrics.test", due, serde_json::json!({}));
        srv.app.billing.engine().store.write(|tx| Ok(tx.insert_work(&item)?)).unwrap();
    }
    let text = scrape(srv);
    assert_eq!(sample(&text, r#"billing_due_work_items{kind="metrics.test"}"#), Some(2.0), "{text}");
    assert_eq!(sample(&text, r#"billing_due_work_due{kind="metrics.test"}"#), Some(1.0), "{text}");
    assert_eq!(sample(&text, r#"billing_due_work_leased{kind="metrics.test"}"#), Some(0.0), "{text}");
    let lag = sample(&text, r#"billing_due_work_lag_seconds{kind="metrics.test"}"#).unwrap();
    assert!((30.0..60.0).contains(&lag), "lag {lag}: {text}");
    assert_eq!(sample(&text, "billing_due_work_scrape_error"), Some(0.0), "{text}");
    assert!(sample(&text, r#"billing_webhook_attempts_total{result="delivered"}"#).is_some(), "{text}");
    // The scrape itself is counted.
    assert!(
        sample(&text, r#"billing_http_requests_total{method="GET",route="/metrics",status="200"}"#).is_some_and(|n| n >= 2.0),
        "{text}"
    );
}

/// The store's own numbers: group commit on SQLite.
fn sqlite_commits(srv: &TestServer) {
    ok(srv.post(
        "/api/v2/consumers",
        serde_json::json!({"name": "Metric Person", "phone_number": "+966500000123"}),
    ));
    let text = scrape(srv);
    let txs = sample(&text, "billing_sqlite_transactions_total").unwrap();
    let commits = sample(&text, "billing_sqlite_commits_total").unwrap();
    assert!(txs >= 1.0 && commits >= 1.0 && commits <= txs, "{text}");
}

/// The pool's numbers on PostgreSQL.
fn pool_use(srv: &TestServer) {
    let text = scrape(srv);
    assert!(sample(&text, "billing_db_pool_max_connections").is_some_and(|n| n >= 1.0), "{text}");
    assert!(sample(&text, r#"billing_db_pool_connections{state="idle"}"#).is_some(), "{text}");
    assert!(sample(&text, r#"billing_db_pool_connections{state="in_use"}"#).is_some(), "{text}");
}

/// Without the token, or with another, a scrape is refused with the API's envelope, and it
/// reads nothing (the refusals are counted like any request).
fn the_token_is_required(srv: &TestServer) {
    for headers in [
        vec![],
        vec![("authorization", "Bearer wrong-token")],
        vec![("authorization", "integration-metrics-token")],
    ] {
        let r = srv.raw(Method::GET, "/metrics", &headers, None);
        assert_eq!(r.status, 401, "{headers:?}: {}", r.text);
        assert_eq!(r.body["error"]["code"], "UNAUTHORIZED", "{}", r.text);
        assert!(!r.text.contains("billing_"), "{}", r.text);
    }
    let text = scrape(srv);
    assert!(
        sample(&text, r#"billing_http_requests_total{method="GET",route="/metrics",status="401"}"#).is_some_and(|n| n >= 3.0),
        "{text}"
    );
}

/// Made-up methods and paths do not make series: they count as `other`, however many.
fn made_up_methods_and_paths_stay_bounded(srv: &TestServer) {
    scrape(srv);
    let before = scrape(srv).lines().filter(|l| l.starts_with("billing_http_")).count();
    for i in 0..200 {
        let method = Method::from_bytes(format!("M{i}X").as_bytes()).unwrap();
        srv.raw(method, &format!("/made/up/{i}"), &[], None);
        srv.raw(Method::GET, &format!("/made/up/{i}"), &[], None);
    }
    let text = scrape(srv);
    assert!(!text.contains("M7X") && !text.contains("/made/up"), "{text}");
    assert!(
        sample(&text, r#"billing_http_requests_total{method="other",route="other",status="405"}"#)
            .or_else(|| sample(&text, r#"billing_http_requests_total{method="other",route="other",status="404"}"#))
            .is_some_and(|n| n >= 200.0),
        "{text}"
    );
    let after = text.lines().filter(|l| l.starts_with("billing_http_")).count();
    // At most two new request series (GET and `other` on the route `other`) and the histogram
    // of the route `other` (its buckets, sum and count).
    assert!(after <= before + 2 + BUCKETS + 2, "{before} -> {after} lines:\n{text}");
}

/// Number of histogram buckets (with `+Inf`).
const BUCKETS: usize = 13;

/// A server without a token has no `/metrics`: the route answers as an unknown one.
#[test]
fn metrics_are_off_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("billing.db").display());
    let srv = TestServer::start_with(url, Box::new(dir), |c| c.metrics_token = None);
    let auth = format!("Bearer {}", crate::common::METRICS_TOKEN);
    for headers in [vec![], vec![("authorization", auth.as_str())]] {
        let r = srv.raw(Method::GET, "/metrics", &headers, None);
        assert_eq!(r.status, 404, "{}", r.text);
        assert_eq!(r.body["error"]["code"], "NOT_FOUND", "{}", r.text);
        assert!(!r.text.contains("billing_"), "{}", r.text);
    }
}

http_tests!(
    requests_and_queue,
    sqlite_commits,
    the_token_is_required,
    made_up_methods_and_paths_stay_bounded
);
postgres_smoke!(requests_and_queue, pool_use);
