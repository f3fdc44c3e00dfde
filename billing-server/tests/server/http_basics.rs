//! Protocol-level behaviour: routing, errors, limits, request ids, authentication.

use crate::common::TestServer;
use hyper::Method;
use serde_json::json;

fn unknown_path_is_404_in_the_envelope(srv: &TestServer) {
    let r = srv.get("/api/v2/does-not-exist");
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "NOT_FOUND");
}

fn wrong_method_is_405(srv: &TestServer) {
    let r = srv.call(Method::PATCH, "/api/v2/consumers", None);
    assert_eq!(r.status, 405);
    assert_eq!(r.code(), "METHOD_NOT_ALLOWED");
}

fn request_id_is_echoed_or_made(srv: &TestServer) {
    let r = srv.raw(Method::GET, "/api/v2/me", &[("x-api-key", &srv.key), ("x-request-id", "abc-123")], None);
    assert_eq!(r.headers["x-request-id"], "abc-123");
    let r = srv.get("/api/v2/me");
    assert!(!r.headers["x-request-id"].is_empty());
    let r = srv.raw(Method::GET, "/api/v2/me", &[], None);
    assert_eq!(r.status, 401);
    assert!(!r.headers["x-request-id"].is_empty(), "errors carry a request id too");
}

/// A body announced larger than the limit is refused before it is read. (Only the request's
/// head is sent: a client still writing a megabyte when the answer comes and the connection
/// closes would see a broken pipe instead of the answer.)
fn body_over_the_limit_is_413(srv: &TestServer) {
    use std::io::{Read, Write};
    let answer = srv.unchanged(|| {
        let addr: std::net::SocketAddr = srv.base.trim_start_matches("http://").parse().unwrap();
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
        let head = format!(
            "POST /api/v2/consumers HTTP/1.1\r\nhost: x\r\nx-api-key: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            srv.key,
            1024 * 1024 + 10
        );
        s.write_all(head.as_bytes()).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    });
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("\"code\":\"PAYLOAD_TOO_LARGE\""), "{answer}");
}

fn malformed_json_is_422_at_body(srv: &TestServer) {
    let r = srv.unchanged(|| srv.raw(Method::POST, "/api/v2/consumers", &[("x-api-key", &srv.key)], Some(b"{nope".to_vec())));
    assert_eq!(r.status, 422);
    assert_eq!(r.locs(), vec![json!(["body"])]);
    assert_eq!(r.body["detail"][0]["type"], "json_invalid");
}

fn missing_and_bad_credentials_are_401(srv: &TestServer) {
    for headers in [
        vec![],
        vec![("x-api-key", "not base64!")],
        vec![("x-api-key", "YWJjOmRlZg==")],
        vec![("authorization", "Bearer a.b.c")],
        vec![("authorization", "Basic abc")],
    ] {
        let r = srv.raw(Method::GET, "/api/v2/me", &headers, None);
        assert_eq!(r.status, 401, "{headers:?}");
        assert_eq!(r.code(), "UNAUTHORIZED");
    }
}

fn bearer_token_works(srv: &TestServer) {
    let token = srv.boot.token.clone();
    let r = srv.raw(Method::GET, "/api/v2/me", &[("authorization", &format!("Bearer {token}"))], None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["user"]["id"], json!(srv.boot.user.id));
    assert_eq!(r.body["organization"]["sandbox"], json!(true));
}

fn me_has_the_reference_shape(srv: &TestServer) {
    let r = srv.get("/api/v2/me");
    assert_eq!(r.status, 200);
    for f in ["id", "email", "first_name", "last_name", "en_first_name", "en_last_name", "created_at"] {
        assert!(r.body["user"].get(f).is_some(), "user.{f}");
    }
    for f in ["id", "name", "name_en", "sandbox", "created_at", "currency_config"] {
        assert!(r.body["organization"].get(f).is_some(), "organization.{f}");
    }
}

http_tests!(
    snapshot_covers_every_table,
    unknown_path_is_404_in_the_envelope,
    wrong_method_is_405,
    request_id_is_echoed_or_made,
    body_over_the_limit_is_413,
    malformed_json_is_422_at_body,
    missing_and_bad_credentials_are_401,
    bearer_token_works,
    me_has_the_reference_shape,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(request_id_is_echoed_or_made, snapshot_covers_every_table);

/// The "nothing written" snapshot reads every table from the database's own catalogue: a write
/// to a table no API list shows (the due-work queue) or to one added later is seen.
fn snapshot_covers_every_table(srv: &TestServer) {
    use billing_core::store::Store;
    let before = srv.snapshot();
    assert!(before.contains("== due_work (0 rows)"), "{before}");
    let org = srv.boot.org.id;
    let now = srv.app.billing.engine().clock().now();
    srv.app
        .billing
        .engine()
        .store
        .write(|tx| {
            let item = billing_core::work::DueWork::new(billing_core::ids::WorkId::new(), org, "test.kind", now, json!({}));
            Ok(tx.insert_work(&item)?)
        })
        .unwrap();
    let after = srv.snapshot();
    assert_ne!(before, after, "a write to the due-work queue is seen");
    assert!(after.contains("== due_work (1 rows)"));
}
