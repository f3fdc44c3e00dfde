//! `GET /metrics` (Prometheus text format): requests by route template and status with their
//! duration histogram, the due-work queue by kind (depth, due, leased, lag in the
//! organization's time), the store's numbers; no credential needed, no ids or organization
//! data in it.

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
    let r = srv.raw(Method::GET, "/metrics", &[], None);
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
    let now = srv.app.billing.clock().now();
    for due in [now - chrono::Duration::seconds(30), now + chrono::Duration::days(1)] {
        let item = DueWork::new(WorkId::new(), org, "metrics.test", due, serde_json::json!({}));
        srv.app.billing.store.write(|tx| Ok(tx.insert_work(&item)?)).unwrap();
    }
    let text = scrape(srv);
    assert_eq!(sample(&text, r#"billing_due_work_items{kind="metrics.test"}"#), Some(2.0), "{text}");
    assert_eq!(sample(&text, r#"billing_due_work_due{kind="metrics.test"}"#), Some(1.0), "{text}");
    assert_eq!(sample(&text, r#"billing_due_work_leased{kind="metrics.test"}"#), Some(0.0), "{text}");
    let lag = sample(&text, r#"billing_due_work_lag_seconds{kind="metrics.test"}"#).unwrap();
    assert!((30.0..60.0).contains(&lag), "lag {lag}: {text}");
    assert_eq!(sample(&text, "billing_due_work_scrape_error"), Some(0.0), "{text}");
    assert!(sample(&text, r#"billing_webhook_attempts_total{result="delivered"}"#).is_some(), "{text}");
    // The scrape itself is counted, and needs no credential.
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

http_tests!(requests_and_queue, sqlite_commits);
postgres_smoke!(requests_and_queue, pool_use);
