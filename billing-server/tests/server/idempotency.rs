//! `Idempotency-Key` on POST, PUT, PATCH and DELETE: a retry of the same request under the same
//! key gets the first response (status, headers, body byte for byte, plus `idempotent-replayed:
//! true`) and runs nothing; another request under the key is a 422; concurrent duplicates run
//! once (also across two processes on one PostgreSQL database); keys are per organization and
//! credential and are forgotten after 24 hours of the organization's (sandbox) clock.

use crate::common::fixtures::*;
use crate::common::{process, Resp, TestServer};
use billing_core::idempotency::{IdempotencyRecord, State};
use billing_core::store::Store;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Method;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const CONSUMERS: &str = "/api/v2/consumers";
const PRODUCTS: &str = "/api/v2/products";
const REPLAYED: &str = "idempotent-replayed";

/// A request as `key` with an `Idempotency-Key`, the body sent as these exact bytes.
fn keyed(srv: &TestServer, key: &str, idem: &str, method: Method, path: &str, body: Option<&[u8]>) -> Resp {
    let headers = [("x-api-key", key), ("content-type", "application/json"), ("idempotency-key", idem)];
    srv.raw(method, path, &headers, body.map(<[u8]>::to_vec))
}

fn post_keyed(srv: &TestServer, idem: &str, path: &str, body: &Value) -> Resp {
    keyed(srv, &srv.key, idem, Method::POST, path, Some(&serde_json::to_vec(body).unwrap()))
}

fn count(srv: &TestServer, path: &str) -> usize {
    ok(srv.get(&format!("{path}?limit=100")))["data"].as_array().unwrap().len()
}

/// The stored record of `idem` for the admin key of the test organization.
fn record(srv: &TestServer, idem: &str) -> Option<IdempotencyRecord> {
    let org = srv.boot.org.id;
    let scope = admin_scope(srv);
    let who = billing_core::idempotency::ops::scope_of(&scope);
    srv.app.billing.engine().store.read(|tx| Ok(tx.idempotency_record(org, &who, idem)?)).unwrap()
}

fn admin_scope(srv: &TestServer) -> billing_core::auth::Scope {
    let cred = billing_core::auth::Credential::from_api_key_header(&srv.key).unwrap();
    srv.app.billing.auth().authenticate(&cred, None).unwrap()
}

fn consumer_body(n: u32) -> Value {
    json!({"name": format!("Idem {n}"), "phone_number": phone(n), "email": format!("idem{n}@example.com")})
}

fn replays_the_first_response_byte_for_byte(srv: &TestServer) {
    let body = consumer_body(1);
    let first = post_keyed(srv, "create-1", CONSUMERS, &body);
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(first.headers.get(REPLAYED).is_none());
    let rec = record(srv, "create-1").expect("the key is recorded");
    assert_eq!(rec.state, State::Done);
    assert_eq!(rec.response.as_ref().unwrap().body, first.text.as_bytes());
    for _ in 0..2 {
        let again = post_keyed(srv, "create-1", CONSUMERS, &body);
        assert_eq!(again.status, first.status);
        assert_eq!(again.text, first.text, "the same bytes");
        assert_eq!(again.headers["content-type"], first.headers["content-type"]);
        assert_eq!(again.headers[REPLAYED], "true");
        // Each response has its own request id.
        assert_ne!(again.headers["x-request-id"], first.headers["x-request-id"]);
    }
    assert_eq!(count(srv, CONSUMERS), 1, "one consumer, not three");
    // Without a key, the same body is a new request (here: a duplicate consumer).
    assert_error(&srv.post(CONSUMERS, body), 422, "DUPLICATE_CONSUMER");
    // A GET ignores the header.
    let listed = keyed(srv, &srv.key, "create-1", Method::GET, CONSUMERS, None);
    assert_eq!(listed.status, 200);
    assert!(listed.headers.get(REPLAYED).is_none());
}

fn another_request_under_the_key_is_refused(srv: &TestServer) {
    let first = post_keyed(srv, "k-2", CONSUMERS, &consumer_body(2));
    assert_eq!(first.status, 200, "{}", first.text);
    let other_branch = branch(srv, "Second");
    srv.unchanged(|| {
        // Another body, another path, another method, another branch, another query.
        assert_error(&post_keyed(srv, "k-2", CONSUMERS, &consumer_body(3)), 422, "IDEMPOTENCY_KEY_MISMATCH");
        assert_error(&post_keyed(srv, "k-2", PRODUCTS, &consumer_body(2)), 422, "IDEMPOTENCY_KEY_MISMATCH");
        let body = serde_json::to_vec(&consumer_body(2)).unwrap();
        let put = keyed(srv, &srv.key, "k-2", Method::PUT, &format!("{CONSUMERS}/{}", id_of(&first.body)), Some(&body));
        assert_error(&put, 422, "IDEMPOTENCY_KEY_MISMATCH");
        let headers = [
            ("x-api-key", srv.key.as_str()),
            ("content-type", "application/json"),
            ("idempotency-key", "k-2"),
            ("x-branch-id", other_branch.as_str()),
        ];
        assert_error(&srv.raw(Method::POST, CONSUMERS, &headers, Some(body.clone())), 422, "IDEMPOTENCY_KEY_MISMATCH");
        let query = keyed(srv, &srv.key, "k-2", Method::POST, &format!("{CONSUMERS}?x=1"), Some(&body));
        assert_error(&query, 422, "IDEMPOTENCY_KEY_MISMATCH");
        // Bytes count: the same JSON spaced differently is another request.
        let spaced = keyed(
            srv,
            &srv.key,
            "k-2",
            Method::POST,
            CONSUMERS,
            Some(&serde_json::to_vec_pretty(&consumer_body(2)).unwrap()),
        );
        assert_error(&spaced, 422, "IDEMPOTENCY_KEY_MISMATCH");
    });
    // The original is still replayed.
    assert_eq!(post_keyed(srv, "k-2", CONSUMERS, &consumer_body(2)).text, first.text);
}

fn malformed_keys_are_refused(srv: &TestServer) {
    let body = serde_json::to_vec(&consumer_body(4)).unwrap();
    let long = "k".repeat(256);
    srv.unchanged(|| {
        for bad in ["", long.as_str(), "tab\there"] {
            let r = keyed(srv, &srv.key, bad, Method::POST, CONSUMERS, Some(&body));
            assert_invalid(&r, json!(["header", "idempotency-key"]), None);
        }
        // Non-ASCII bytes, and the header sent twice.
        let r = srv.raw(
            Method::POST,
            CONSUMERS,
            &[("x-api-key", &srv.key), ("idempotency-key", "a"), ("idempotency-key", "b")],
            Some(body.clone()),
        );
        assert_invalid(&r, json!(["header", "idempotency-key"]), None);
        // Credentials come first: a bad key of an unauthenticated request is a 401.
        let r = keyed(srv, "bad", "", Method::POST, CONSUMERS, Some(&body));
        assert_error(&r, 401, "UNAUTHORIZED");
    });
    let max = "k".repeat(255);
    assert_eq!(keyed(srv, &srv.key, &max, Method::POST, CONSUMERS, Some(&body)).status, 200);
    assert_eq!(
        keyed(
            srv,
            &srv.key,
            " !~",
            Method::POST,
            PRODUCTS,
            Some(br#"{"name":"P","type":"ONE_OFF","price":"1"}"#)
        )
        .status,
        200
    );
}

fn refusals_are_stored_and_replayed(srv: &TestServer) {
    // A validation error is an answer too: the retry gets it again, without running.
    let bad = json!({"name": "No contact", "phone_number": "not a phone"});
    let first = post_keyed(srv, "k-5", CONSUMERS, &bad);
    assert_eq!(first.status, 422, "{}", first.text);
    let again = post_keyed(srv, "k-5", CONSUMERS, &bad);
    assert_eq!((again.status, &again.text), (422, &first.text));
    assert_eq!(again.headers[REPLAYED], "true");
    // A rule refusal too.
    post_keyed(srv, "k-6", CONSUMERS, &consumer_body(6));
    let dup = json!({"name": "Twin", "phone_number": phone(6)});
    let refused = post_keyed(srv, "k-7", CONSUMERS, &dup);
    assert_error(&refused, 422, "DUPLICATE_CONSUMER");
    assert_eq!(post_keyed(srv, "k-7", CONSUMERS, &dup).text, refused.text);
    assert_eq!(count(srv, CONSUMERS), 1);
}

fn deletes_and_updates_replay(srv: &TestServer) {
    let id = simple_consumer(srv, "To delete", 8);
    let path = format!("{CONSUMERS}/{id}");
    let first = keyed(srv, &srv.key, "del-1", Method::DELETE, &path, None);
    assert_eq!(first.status, 200, "{}", first.text);
    let again = keyed(srv, &srv.key, "del-1", Method::DELETE, &path, None);
    assert_eq!((again.status, &again.text), (first.status, &first.text));
    assert_eq!(again.headers[REPLAYED], "true");
    let product = one_off_product(srv, "Widget", "10");
    let body = br#"{"name":"Renamed"}"#;
    let path = format!("{PRODUCTS}/{}", id_of(&product));
    let put = keyed(srv, &srv.key, "put-1", Method::PUT, &path, Some(body));
    assert_eq!(put.status, 200, "{}", put.text);
    // Changed meanwhile: the replay is still the first answer.
    ok(srv.put(&path, json!({"name": "Other"})));
    assert_eq!(keyed(srv, &srv.key, "put-1", Method::PUT, &path, Some(body)).text, put.text);
    assert_eq!(ok(srv.get(&path))["name"], "Other");
}

fn keys_are_per_organization_and_credential(srv: &TestServer) {
    let body = serde_json::to_vec(&consumer_body(9)).unwrap();
    let ours = keyed(srv, &srv.key, "shared", Method::POST, CONSUMERS, Some(&body));
    assert_eq!(ours.status, 200, "{}", ours.text);
    let other = srv
        .app
        .billing
        .org()
        .bootstrap(&billing_core::org::BootstrapRequest {
            org_name: "Other Org".into(),
            admin_email: billing_core::fields::Email::parse("other@example.com").unwrap(),
            sandbox: true,
        })
        .unwrap();
    let theirs = keyed(srv, &other.api_key.header_value(), "shared", Method::POST, CONSUMERS, Some(&body));
    assert_eq!(theirs.status, 200, "{}", theirs.text);
    assert!(theirs.headers.get(REPLAYED).is_none());
    assert_ne!(id_of(&theirs.body), id_of(&ours.body), "each organization ran its own request");
    // Another key of the same organization has keys of its own too.
    let second = all_branches_key(srv, None);
    let product = br#"{"name":"Per key","type":"ONE_OFF","price":"5"}"#;
    let a = keyed(srv, &srv.key, "per-key", Method::POST, PRODUCTS, Some(product));
    let b = keyed(srv, &second, "per-key", Method::POST, PRODUCTS, Some(product));
    assert_eq!((a.status, b.status), (200, 200));
    assert_ne!(id_of(&a.body), id_of(&b.body));
    assert_eq!(count(srv, PRODUCTS), 2);
}

/// Sends `n` copies of one request at once, each on its own connection.
fn at_once(srv: &TestServer, n: usize, idem: &str, path: &str, body: &Value) -> Vec<(u16, Option<String>, String)> {
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap();
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let body = serde_json::to_vec(body).unwrap();
    rt.block_on(async {
        let start = std::sync::Arc::new(tokio::sync::Barrier::new(n));
        let handles: Vec<_> = (0..n)
            .map(|_| {
                let req = hyper::Request::builder()
                    .method(Method::POST)
                    .uri(format!("{}{}", srv.base, path))
                    .header("x-api-key", &srv.key)
                    .header("content-type", "application/json")
                    .header("idempotency-key", idem)
                    .body(Full::new(Bytes::from(body.clone())))
                    .unwrap();
                let (client, start) = (client.clone(), start.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    let resp = client.request(req).await.expect("request sent");
                    let status = resp.status().as_u16();
                    let replayed = resp.headers().get(REPLAYED).map(|v| v.to_str().unwrap().to_string());
                    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
                    (status, replayed, String::from_utf8_lossy(&bytes).into_owned())
                })
            })
            .collect();
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    })
}

fn concurrent_duplicates_run_once(srv: &TestServer) {
    let body = json!({"name": "Concurrent", "type": "ONE_OFF", "price": "12.50"});
    let answers = at_once(srv, 10, "burst", PRODUCTS, &body);
    let firsts: Vec<_> = answers.iter().filter(|a| a.1.is_none()).collect();
    assert_eq!(firsts.len(), 1, "one request ran: {answers:?}");
    for (status, replayed, text) in &answers {
        assert_eq!(*status, 200, "{text}");
        assert_eq!(text, &firsts[0].2, "every answer is the first one");
        assert!(replayed.is_none() || replayed.as_deref() == Some("true"));
    }
    assert_eq!(count(srv, PRODUCTS), 1, "exactly one product");
}

fn keys_expire_after_24_hours_of_the_sandbox_clock(srv: &TestServer) {
    let body = json!({"name": "Daily", "type": "ONE_OFF", "price": "3"});
    let first = post_keyed(srv, "daily", PRODUCTS, &body);
    assert_eq!(first.status, 200);
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 86399})));
    let replay = post_keyed(srv, "daily", PRODUCTS, &body);
    assert_eq!(replay.text, first.text);
    assert_eq!(replay.headers[REPLAYED], "true");
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 2})));
    let fresh = post_keyed(srv, "daily", PRODUCTS, &body);
    assert_eq!(fresh.status, 200);
    assert!(fresh.headers.get(REPLAYED).is_none());
    assert_ne!(id_of(&fresh.body), id_of(&first.body));
    assert_eq!(count(srv, PRODUCTS), 2);
}

fn api_key_secrets_are_not_kept_for_replays(srv: &TestServer) {
    let body = br#"{"name":"Integration","is_all_branches":true}"#;
    let first = keyed(srv, &srv.key, "new-key", Method::POST, "/api/v2/api-keys", Some(body));
    assert_eq!(first.status, 200, "{}", first.text);
    let secret = first.body["api_secret"].as_str().expect("the secret, shown once").to_string();
    let header = first.body["x_api_key"].as_str().expect("the header value").to_string();
    let again = keyed(srv, &srv.key, "new-key", Method::POST, "/api/v2/api-keys", Some(body));
    assert_eq!(again.headers[REPLAYED], "true");
    assert_eq!(again.body["id"], first.body["id"], "the same key, not a second one");
    assert_eq!((&again.body["api_secret"], &again.body["x_api_key"]), (&Value::Null, &Value::Null));
    let keys = ok(srv.get("/api/v2/api-keys"))["data"].as_array().unwrap().len();
    assert_eq!(keys, 2, "the bootstrap key and one new key");
    // The secret is nowhere in the database (only its hash is kept).
    let stored = srv.database_bytes().unwrap_or_else(|| srv.snapshot().into_bytes());
    for s in [&secret, &header] {
        assert!(!stored.windows(s.len()).any(|w| w == s.as_bytes()), "a secret shown once was stored");
    }
    // The key works.
    assert_eq!(srv.call_as(&header, None, Method::GET, "/api/v2/me", None).status, 200);
}

/// The server's store marks the claimed key in every write transaction run under it, with no
/// help from the operation (the seam that makes "committed" durable with the operation).
fn the_servers_store_marks_every_write_under_a_key(srv: &TestServer) {
    use billing_core::idempotency::{Begin, Fingerprint, IdempotencyKey};
    let scope = admin_scope(srv);
    let billing = &srv.app.billing;
    let key = IdempotencyKey::parse(b"seam").unwrap();
    let print = Fingerprint::of("POST", PRODUCTS, "", scope.branch_id(), b"{}");
    let Ok(Begin::Run(claim)) = billing.engine().idempotency_begin(&scope, &key, &print) else {
        panic!("the key is free")
    };
    assert_eq!(record(srv, "seam").unwrap().state, State::Running);
    // A failed write under the key marks nothing.
    {
        let _marking = billing.engine().idempotency_marking(&claim);
        let failed: billing_core::Result<()> = billing
            .engine()
            .store
            .write(|_| Err(billing_core::Error::code(billing_core::Code::INVALID_STATUS)));
        assert!(failed.is_err());
    }
    assert_eq!(record(srv, "seam").unwrap().state, State::Running);
    // Outside the guard, nothing is marked either.
    billing.engine().store.write(|_| Ok(())).unwrap();
    assert_eq!(record(srv, "seam").unwrap().state, State::Running);
    {
        let _marking = billing.engine().idempotency_marking(&claim);
        billing.engine().store.write(|_| Ok(())).unwrap();
    }
    assert_eq!(record(srv, "seam").unwrap().state, State::Committed);
}

/// What a crashed process leaves behind, as a retry through the API meets it: a claim that wrote
/// nothing is taken over once its lease has run out; one whose operation committed is never run
/// again (409 `IDEMPOTENCY_OUTCOME_UNKNOWN`); a live claim is waited for, then 409
/// `IDEMPOTENCY_KEY_IN_USE`.
fn leftovers_of_a_crash_are_taken_over_or_refused(srv: &TestServer) {
    use billing_core::idempotency::Fingerprint;
    let scope = admin_scope(srv);
    let body = br#"{"name":"After a crash","type":"ONE_OFF","price":"9"}"#;
    let now = chrono::Utc::now();
    let leftover = |key: &str, state: State, lease: chrono::Duration| IdempotencyRecord {
        org_id: srv.boot.org.id,
        scope: billing_core::idempotency::ops::scope_of(&scope),
        key: key.into(),
        fingerprint: Fingerprint::of("POST", PRODUCTS, "", scope.branch_id(), body).0,
        state,
        owner: uuid::Uuid::now_v7(),
        created_at: now,
        lease_until: now + lease,
        response: None,
    };
    for r in [
        leftover("dead-before-writing", State::Running, chrono::Duration::seconds(-1)),
        leftover("dead-after-commit", State::Committed, chrono::Duration::seconds(-1)),
        leftover("still-running", State::Running, chrono::Duration::seconds(60)),
    ] {
        srv.app.billing.engine().store.write(|tx| Ok(tx.insert_idempotency_record(&r)?)).unwrap();
    }
    let send = |key: &str| keyed(srv, &srv.key, key, Method::POST, PRODUCTS, Some(body));
    srv.unchanged(|| assert_error(&send("dead-after-commit"), 409, "IDEMPOTENCY_OUTCOME_UNKNOWN"));
    let began = std::time::Instant::now();
    srv.unchanged(|| assert_error(&send("still-running"), 409, "IDEMPOTENCY_KEY_IN_USE"));
    assert!(began.elapsed() >= Duration::from_secs(9), "it waited for the running request first");
    let taken = send("dead-before-writing");
    assert_eq!(taken.status, 200, "{}", taken.text);
    assert!(taken.headers.get(REPLAYED).is_none());
    assert_eq!(record(srv, "dead-before-writing").unwrap().state, State::Done);
    assert_eq!(send("dead-before-writing").text, taken.text);
    assert_eq!(count(srv, PRODUCTS), 1);
}

http_tests!(
    leftovers_of_a_crash_are_taken_over_or_refused,
    the_servers_store_marks_every_write_under_a_key,
    api_key_secrets_are_not_kept_for_replays,
    replays_the_first_response_byte_for_byte,
    another_request_under_the_key_is_refused,
    malformed_keys_are_refused,
    refusals_are_stored_and_replayed,
    deletes_and_updates_replay,
    keys_are_per_organization_and_credential,
    concurrent_duplicates_run_once,
    keys_expire_after_24_hours_of_the_sandbox_clock,
);

postgres_smoke!(
    leftovers_of_a_crash_are_taken_over_or_refused,
    the_servers_store_marks_every_write_under_a_key,
    api_key_secrets_are_not_kept_for_replays,
    replays_the_first_response_byte_for_byte,
    another_request_under_the_key_is_refused,
    refusals_are_stored_and_replayed,
    concurrent_duplicates_run_once,
    keys_expire_after_24_hours_of_the_sandbox_clock,
);

// --- two processes on one PostgreSQL database ------------------------------------------------

const BIN: &str = env!("CARGO_BIN_EXE_billing-server");
const JWT: &str = "idempotency-test-secret";

/// One request on a new connection: (status, `idempotent-replayed` present, body).
fn send(addr: SocketAddr, key: &str, idem: &str, path: &str, body: &[u8]) -> (u16, bool, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\nx-api-key: {key}\r\nidempotency-key: {idem}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("headers end");
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(!head.contains("transfer-encoding: chunked"), "{head}");
    (
        status,
        head.contains(&format!("{REPLAYED}: true")),
        String::from_utf8_lossy(&raw[split + 4..]).into_owned(),
    )
}

/// Two `billing-server` processes on one new PostgreSQL database get the same request under one
/// key, 5 copies each, all at once: one runs, every other answer is its replay, one product.
#[test]
fn two_processes_on_postgresql_run_a_key_once() {
    let Some(server) = billing_store_postgres::testing::server_url() else {
        eprintln!("SKIPPED idempotency::two_processes_on_postgresql_run_a_key_once: BILLING_TEST_DATABASE_URL is not set");
        return;
    };
    let db = billing_store_postgres::testing::TempDatabase::create(&server).expect("create a test database");
    let dir = tempfile::tempdir().unwrap();
    let init = std::process::Command::new(BIN)
        .args(["--jwt-secret", JWT, "init", "--json", "--database-url", db.url()])
        .env("BILLING_LOG", "warn")
        .output()
        .expect("run init");
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let creds: Value = serde_json::from_slice(&init.stdout).unwrap();
    let key = creds["x_api_key"].as_str().unwrap().to_string();
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut procs = Vec::new();
    let mut addrs = Vec::new();
    for name in ["a", "b"] {
        let mut cmd = std::process::Command::new(BIN);
        cmd.args(["--database-url", db.url(), "--jwt-secret", JWT]);
        let (child, addr) = process::spawn_server(cmd, &dir.path().join(format!("{name}.log")));
        procs.push(Killed(child));
        addrs.push(addr);
    }
    let body = br#"{"name":"Across processes","type":"ONE_OFF","price":"7.00"}"#;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(10));
    let answers: Vec<(u16, bool, String)> = (0..10)
        .map(|i| {
            let (addr, key, barrier) = (addrs[i % 2], key.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                send(addr, &key, "cross-process", "/api/v2/products", body)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let firsts: Vec<_> = answers.iter().filter(|a| !a.1).collect();
    assert_eq!(firsts.len(), 1, "one request ran: {answers:?}");
    for (status, _, text) in &answers {
        assert_eq!(*status, 200, "{text}");
        assert_eq!(text, &firsts[0].2);
    }
    // One product in the database, seen from either process.
    for addr in &addrs {
        let r = raw_get(*addr, &key, "/api/v2/products?limit=100");
        assert_eq!(r["data"].as_array().unwrap().len(), 1, "{r}");
    }
    drop(procs);
}

fn raw_get(addr: SocketAddr, key: &str, path: &str) -> Value {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nhost: {addr}\r\nx-api-key: {key}\r\nconnection: close\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("headers end");
    serde_json::from_slice(&raw[split + 4..]).unwrap_or(Value::Null)
}
