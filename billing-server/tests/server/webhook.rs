//! Webhooks end to end: the endpoints API, and deliveries to a real HTTP receiver on
//! 127.0.0.1 (headers, body and signature as the specification says, the retry schedule driven
//! by the sandbox clock, manual retries, disabled and deleted endpoints, per-type subscriptions,
//! branch isolation, the delivery log).

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::{first_payment, mark_paid, simple_invoice};
use crate::common::raw_http::{read_request, Received};
use crate::common::TestServer;
use billing_core::event::{EntityType, Event, EventType};
use billing_core::ids::EventId;
use billing_core::org::Role;
use billing_core::store::Store;
use billing_core::webhook::verify;
use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use hyper::Method;
use serde_json::{json, Value};
use sha2::Sha256;
use std::collections::HashMap;
use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Instant;

// --- a tiny receiver ---------------------------------------------------------------------------

#[derive(Default)]
struct ReceiverState {
    got: Vec<Received>,
    /// Status answered per path (default 200).
    status: HashMap<String, u16>,
    /// Paths whose answers wait until they are released.
    held: std::collections::HashSet<String>,
}

struct Receiver {
    base: String,
    state: Arc<Mutex<ReceiverState>>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(ReceiverState::default()));
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let st = st.clone();
                std::thread::spawn(move || {
                    let Some(r) = read_request(&mut stream) else { return };
                    let (status, path) = {
                        let mut s = st.lock().unwrap();
                        let status = s.status.get(&r.path).copied().unwrap_or(200);
                        let path = r.path.clone();
                        s.got.push(r);
                        (status, path)
                    };
                    let held_since = Instant::now();
                    while st.lock().unwrap().held.contains(&path) && held_since.elapsed().as_secs() < 30 {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    let body = format!("{{\"answer\":{status}}}");
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        Receiver { base, state }
    }
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
    fn set_status(&self, path: &str, status: u16) {
        self.state.lock().unwrap().status.insert(path.to_string(), status);
    }
    /// Answers to `path` wait until [`Self::release`].
    fn hold(&self, path: &str) {
        self.state.lock().unwrap().held.insert(path.to_string());
    }
    fn release(&self, path: &str) {
        self.state.lock().unwrap().held.remove(path);
    }
    fn got(&self) -> Vec<Received> {
        self.state.lock().unwrap().got.clone()
    }
    fn count(&self, path: &str) -> usize {
        self.state.lock().unwrap().got.iter().filter(|r| r.path == path).count()
    }
    /// Waits until `path` received `n` requests (then a little longer, to catch extra ones).
    #[track_caller]
    fn wait(&self, path: &str, n: usize) {
        let start = Instant::now();
        while self.count(path) < n {
            assert!(start.elapsed().as_secs() < 20, "{path} received {} requests, expected {n}", self.count(path));
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        std::thread::sleep(std::time::Duration::from_millis(150));
        assert_eq!(self.count(path), n, "{path} received more requests than expected");
    }
}

// --- helpers ------------------------------------------------------------------------------------

const HOOKS: &str = "/api/v2/webhooks";

fn create(srv: &TestServer, body: Value) -> Value {
    ok(srv.post(HOOKS, body))
}

/// Writes an event to the outbox as the engine does, with a spec-shaped payload.
fn emit(srv: &TestServer, branch: &str, t: EventType) -> Event {
    let entity = uuid::Uuid::now_v7();
    let base = srv.app.billing.engine().public_url().to_string();
    let now = Utc::now();
    let ev = Event {
        id: EventId::new(),
        org_id: srv.boot.org.id,
        branch_id: branch.parse().unwrap(),
        event_type: t,
        entity_type: EntityType::Payment,
        entity_id: entity,
        payload: json!({
            "event_type": t,
            "entity_type": "PAYMENT",
            "entity_id": entity,
            "entity_url": format!("{base}/api/v2/payments/{entity}"),
            "status": "SUCCEEDED",
            "data": {"payment": {"id": entity, "url": format!("{base}/api/v2/payments/{entity}")}, "metadata": {"order": "ü-42"}},
            "timestamp": billing_core::clock::format_rfc3339(&billing_core::clock::truncate_micros(now)),
        }),
        created_at: billing_core::clock::truncate_micros(now),
    };
    srv.app.billing.engine().store.write(|tx| billing_core::event::record(tx, &ev)).unwrap();
    ev
}

fn deliveries(srv: &TestServer, endpoint: &str, query: &str) -> Vec<Value> {
    let r = ok(srv.get(&format!("{HOOKS}/{endpoint}/deliveries{query}")));
    r["data"].as_array().unwrap().clone()
}

fn advance(srv: &TestServer, seconds: i64) {
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({ "seconds": seconds })));
}

fn at(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap().with_timezone(&Utc)
}

// --- tests --------------------------------------------------------------------------------------

fn endpoints_api(srv: &TestServer) {
    let created = create(
        srv,
        json!({"url": "https://example.com/hooks", "event_types": ["PAYMENT_SUCCEEDED", "INVOICE_CREATED"], "description": "orders"}),
    );
    let id = id_of(&created);
    let secret = created["secret_key"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"), "{created}");
    assert_eq!(created["enabled"], json!(true));
    assert_eq!(created["event_types"], json!(["PAYMENT_SUCCEEDED", "INVOICE_CREATED"]));
    let got = ok(srv.get(&format!("{HOOKS}/{id}")));
    assert!(got.get("secret_key").is_none(), "the secret is only shown on create and rotate: {got}");
    assert_eq!(got["description"], json!("orders"));
    let all = create(srv, json!({"url": "http://127.0.0.1:9/x", "event_types": "all", "enabled": false}));
    assert_eq!(all["all_event_types"], json!(true));
    assert_eq!(all["event_types"].as_array().unwrap().len(), EventType::ALL.len());
    let list = srv.get(HOOKS);
    assert_eq!(ids(&list), vec![id.clone(), id_of(&all)]);
    assert!(list.body["data"][0].get("secret_key").is_none());
    assert_eq!(list.body["pagination"]["total_count"], json!(2));

    let upd = ok(srv.put(&format!("{HOOKS}/{id}"), json!({"enabled": false, "url": "http://127.0.0.1:1/new"})));
    assert_eq!((upd["enabled"].clone(), upd["url"].clone()), (json!(false), json!("http://127.0.0.1:1/new")));
    assert_eq!(upd["event_types"], json!(["PAYMENT_SUCCEEDED", "INVOICE_CREATED"]));
    let rotated = ok(srv.post(&format!("{HOOKS}/{id}/rotate-secret"), json!({})));
    assert!(rotated["secret_key"].as_str().unwrap().starts_with("whsec_"));
    assert_ne!(rotated["secret_key"].as_str().unwrap(), secret);

    srv.unchanged(|| {
        for (body, loc) in [
            (json!({"url": "ftp://example.com/x"}), json!(["body", "url"])),
            (json!({"url": "example.com/x"}), json!(["body", "url"])),
            (json!({"url": "http://exa mple.com"}), json!(["body", "url"])),
            (json!({}), json!(["body", "url"])),
            (
                json!({"url": "https://a.b", "event_types": ["PAYMENT_SUCCEEDED", "NOPE"]}),
                json!(["body", "event_types", 1]),
            ),
            (json!({"url": "https://a.b", "enabled": "maybe"}), json!(["body", "enabled"])),
        ] {
            assert_invalid(&srv.post(HOOKS, body), loc, None);
        }
        assert_invalid(&srv.put(&format!("{HOOKS}/{id}"), json!({"url": "mailto:x@y.z"})), json!(["body", "url"]), None);
        assert_invalid(&srv.get(&format!("{HOOKS}/not-a-uuid")), json!(["path", "webhook_id"]), None);
        assert_error(&srv.get(&format!("{HOOKS}/{}", random_id())), 404, "NOT_FOUND");
    });

    // Endpoints belong to the request's branch.
    let other = ok(srv.post("/api/v2/branch", json!({"name": "Second"})));
    let ob = id_of(&other);
    let in_other = |m: Method, p: &str| srv.call_as(&srv.key, Some(&ob), m, p, None);
    assert_error(&in_other(Method::GET, &format!("{HOOKS}/{id}")), 404, "NOT_FOUND");
    assert_error(&in_other(Method::DELETE, &format!("{HOOKS}/{id}")), 404, "NOT_FOUND");
    assert!(ids(&in_other(Method::GET, HOOKS)).is_empty());

    ok(srv.delete(&format!("{HOOKS}/{id}")));
    assert_error(&srv.get(&format!("{HOOKS}/{id}")), 404, "NOT_FOUND");
    assert_eq!(ids(&srv.get(HOOKS)), vec![id_of(&all)]);
    assert_eq!(srv.call(Method::PATCH, HOOKS, None).status, 405);
}

fn delivery_headers_body_and_signature(srv: &TestServer) {
    let rx = Receiver::start();
    let hook = create(srv, json!({"url": rx.url("/hook"), "event_types": ["PAYMENT_SUCCEEDED"]}));
    let secret = hook["secret_key"].as_str().unwrap().to_string();
    let ev = emit(srv, &srv.branch_id(), EventType::PaymentSucceeded);
    rx.wait("/hook", 1);
    let r = &rx.got()[0];
    // The body is the event's payload as compact JSON.
    assert_eq!(r.body, serde_json::to_vec(&ev.payload).unwrap());
    assert!(!String::from_utf8_lossy(&r.body).contains(": "), "compact JSON");
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        body["entity_url"],
        json!(format!("{}/api/v2/payments/{}", srv.app.billing.engine().public_url(), ev.entity_id))
    );
    assert_eq!(r.h("Content-Type"), "application/json");
    assert_eq!(r.h("User-Agent"), "Billing-Webhook/1.0");
    assert_eq!(r.h("X-Webhook-Event"), "PAYMENT_SUCCEEDED");
    assert_eq!(r.h("X-Webhook-Entity-Type"), "PAYMENT");
    assert_eq!(r.h("X-Webhook-Entity-ID"), ev.entity_id.to_string());
    let ts: i64 = r.h("X-Webhook-Timestamp").parse().unwrap();
    assert!((Utc::now().timestamp() - ts).abs() < 60, "UNIX seconds: {ts}");
    let sig = r.h("X-Webhook-Signature");
    assert!(sig.starts_with(&format!("t={ts},v1=")), "{sig}");
    // verify() accepts it; an independent HMAC agrees.
    assert_eq!(verify(Some(sig), &r.body, &secret, 300), Ok(ts));
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{ts}.").as_bytes());
    mac.update(&r.body);
    let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(sig.split_once(",v1=").unwrap().1, hex);
    // A tampered body, another secret, a missing header fail.
    assert!(verify(Some(sig), b"{}", &secret, 300).is_err());
    assert!(verify(Some(sig), &r.body, "whsec_other", 300).is_err());
    assert!(verify(None, &r.body, &secret, 300).is_err());
    // The delivery id header names the logged delivery.
    let log = deliveries(srv, &id_of(&hook), "");
    assert_eq!(log.len(), 1);
    assert_eq!(r.h("X-Webhook-Delivery-ID"), log[0]["id"].as_str().unwrap());
    assert_eq!(log[0]["status"], json!("delivered"));
    assert_eq!(log[0]["event"]["id"], json!(ev.id));
    assert_eq!(log[0]["attempts"][0]["response_status"], json!(200));
    assert_eq!(log[0]["attempts"][0]["response_body"], json!("{\"answer\":200}"));
}

fn retry_schedule_on_the_sandbox_clock(srv: &TestServer) {
    let rx = Receiver::start();
    rx.set_status("/fail", 500);
    let hook = create(srv, json!({"url": rx.url("/fail")}));
    let hid = id_of(&hook);
    emit(srv, &srv.branch_id(), EventType::InvoiceCreated);
    rx.wait("/fail", 1);
    for (i, minutes) in [5i64, 30, 120, 360, 720].into_iter().enumerate() {
        let d = &deliveries(srv, &hid, "")[0];
        assert_eq!(d["status"], json!("retrying"), "{d}");
        let last = at(&d["attempts"][i]["at"]);
        assert_eq!(
            at(&d["next_attempt_at"]),
            last + Duration::minutes(minutes),
            "retry {} after {minutes} minutes",
            i + 1
        );
        advance(srv, minutes * 60);
        rx.wait("/fail", i + 2);
        let d = &deliveries(srv, &hid, "")[0];
        let this = at(&d["attempts"][i + 1]["at"]);
        let gap = this - last;
        assert!(
            gap >= Duration::minutes(minutes) && gap < Duration::minutes(minutes) + Duration::seconds(30),
            "attempt {} came {gap} after the previous one",
            i + 2
        );
    }
    let d = &deliveries(srv, &hid, "")[0];
    assert_eq!(
        (d["status"].clone(), d["attempt_count"].clone(), d["next_attempt_at"].clone()),
        (json!("failed"), json!(6), Value::Null)
    );
    for a in d["attempts"].as_array().unwrap() {
        assert_eq!(a["response_status"], json!(500));
        assert!(a["error"].as_str().is_some_and(|e| e.contains("500")));
        assert!(a["duration_ms"].as_u64().is_some());
    }
    advance(srv, 30 * 86400);
    rx.wait("/fail", 6);
    // A manual retry sends a failed delivery again, as a new attempt.
    rx.set_status("/fail", 200);
    let did = d["id"].as_str().unwrap();
    let r = ok(srv.post(&format!("{HOOKS}/deliveries/{did}/retry"), json!({})));
    assert_eq!((r["status"].clone(), r["attempt_count"].clone()), (json!("delivered"), json!(7)));
    assert_eq!(r["attempts"][6]["manual"], json!(true));
    rx.wait("/fail", 7);
    assert_error(&srv.post(&format!("{HOOKS}/deliveries/{}/retry", random_id()), json!({})), 404, "NOT_FOUND");
}

/// One advance of a day replays the whole schedule, each attempt at its own test-clock time,
/// while the server's background worker runs too.
fn one_long_advance_replays_the_schedule(srv: &TestServer) {
    let rx = Receiver::start();
    rx.set_status("/down", 502);
    let hook = create(srv, json!({"url": rx.url("/down")}));
    let hid = id_of(&hook);
    emit(srv, &srv.branch_id(), EventType::PaymentFailed);
    rx.wait("/down", 1);
    advance(srv, 86400);
    rx.wait("/down", 6);
    let d = &deliveries(srv, &hid, "")[0];
    assert_eq!((d["status"].clone(), d["attempt_count"].clone()), (json!("failed"), json!(6)));
    let times: Vec<DateTime<Utc>> = d["attempts"].as_array().unwrap().iter().map(|a| at(&a["at"])).collect();
    for (i, minutes) in [5i64, 30, 120, 360, 720].into_iter().enumerate() {
        let gap = times[i + 1] - times[i];
        assert!(
            gap >= Duration::minutes(minutes) && gap < Duration::minutes(minutes) + Duration::seconds(30),
            "attempt {} came {gap} after the previous one, not {minutes} minutes",
            i + 2
        );
    }
}

/// Branch users read endpoints and the delivery log; only admins change them or send again.
fn branch_users_cannot_manage_webhooks(srv: &TestServer) {
    let rx = Receiver::start();
    rx.set_status("/h", 500);
    let hook = create(srv, json!({"url": rx.url("/h")}));
    let hid = id_of(&hook);
    emit(srv, &srv.branch_id(), EventType::PaymentFailed);
    rx.wait("/h", 1);
    // The snapshots below must not straddle the recording of that attempt.
    let started = Instant::now();
    while deliveries(srv, &hid, "")[0]["status"] != json!("retrying") {
        assert!(started.elapsed().as_secs() < 20, "the failed attempt was not recorded");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let did = deliveries(srv, &hid, "")[0]["id"].as_str().unwrap().to_string();
    let b = srv.branch_id();
    let (_, token) = user_token(srv, "clerk@example.com", Role::BranchUser, &[&b]);
    let as_user = |method: Method, path: &str, body: Option<Value>| call_bearer(srv, &token, None, method, path, body);
    for (method, path, body) in [
        (Method::POST, HOOKS.to_string(), Some(json!({"url": rx.url("/mine")}))),
        (Method::PUT, format!("{HOOKS}/{hid}"), Some(json!({"url": rx.url("/mine")}))),
        (Method::DELETE, format!("{HOOKS}/{hid}"), None),
        (Method::POST, format!("{HOOKS}/{hid}/rotate-secret"), Some(json!({}))),
        (Method::POST, format!("{HOOKS}/deliveries/{did}/retry"), Some(json!({}))),
    ] {
        let r = srv.unchanged(|| as_user(method.clone(), &path, body.clone()));
        assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    }
    assert_eq!(rx.count("/h"), 1, "the refused retry sent nothing");
    let listed = ok(as_user(Method::GET, HOOKS, None));
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1));
    let got = ok(as_user(Method::GET, &format!("{HOOKS}/{hid}"), None));
    assert!(got.get("secret_key").is_none(), "{got}");
    ok(as_user(Method::GET, &format!("{HOOKS}/{hid}/deliveries"), None));
    // A branch admin manages its branch's endpoints.
    let (_, admin) = user_token(srv, "lead@example.com", Role::BranchAdmin, &[&b]);
    let r = ok(call_bearer(
        srv,
        &admin,
        None,
        Method::POST,
        &format!("{HOOKS}/{hid}/rotate-secret"),
        Some(json!({})),
    ));
    assert_ne!(r["secret_key"], hook["secret_key"]);
}

/// A receiver that does not answer holds up its own delivery only: later events reach the
/// other endpoints while its request is still open.
fn a_slow_receiver_does_not_hold_up_others(srv: &TestServer) {
    let rx = Receiver::start();
    rx.hold("/slow");
    let slow_hook = id_of(&create(srv, json!({"url": rx.url("/slow"), "event_types": ["PAYMENT_FAILED"]})));
    create(srv, json!({"url": rx.url("/fast")}));
    emit(srv, &srv.branch_id(), EventType::PaymentFailed);
    rx.wait("/slow", 1);
    for n in 2..=4 {
        emit(srv, &srv.branch_id(), EventType::PaymentSucceeded);
        rx.wait("/fast", n);
    }
    let slow = deliveries(srv, &slow_hook, "");
    assert_eq!(slow[0]["attempt_count"], json!(0), "the slow request is still open: {slow:?}");
    rx.release("/slow");
    let started = Instant::now();
    while deliveries(srv, &slow_hook, "")[0]["status"] != json!("delivered") {
        assert!(started.elapsed().as_secs() < 20, "the slow delivery was not recorded");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Sends like the server's transport, but panics for URLs containing `/boom` (a bug).
struct PanickingTransport(billing_server::HttpTransport);

impl billing_core::webhook::WebhookTransport for PanickingTransport {
    fn post(&self, url: &str, headers: &[(String, String)], body: &[u8], timeout: std::time::Duration) -> billing_core::webhook::Outcome {
        assert!(!url.contains("/boom"), "a bug in sending");
        self.0.post(url, headers, body, timeout)
    }
}

/// A panic while running an item frees its runner: more panics than runners do not stop the
/// worker.
fn panics_do_not_stop_the_worker(srv: &TestServer) {
    let rx = Receiver::start();
    let mut transport = billing_server::HttpTransport::new(std::time::Duration::from_secs(5));
    transport.allow_private = true;
    srv.app
        .billing
        .engine()
        .set_webhook_transport(std::sync::Arc::new(PanickingTransport(transport)));
    create(srv, json!({"url": rx.url("/boom"), "event_types": ["PAYMENT_FAILED"]}));
    create(srv, json!({"url": rx.url("/ok")}));
    let runners = billing_server::DEFAULT_WORKER_CONCURRENCY;
    for n in 1..=runners + 4 {
        emit(srv, &srv.branch_id(), EventType::PaymentFailed);
        rx.wait("/ok", n);
    }
    emit(srv, &srv.branch_id(), EventType::PaymentSucceeded);
    rx.wait("/ok", runners + 5);
    assert_eq!(rx.count("/boom"), 0);
}

fn success_on_a_later_attempt(srv: &TestServer) {
    let rx = Receiver::start();
    rx.set_status("/flaky", 503);
    let hook = create(srv, json!({"url": rx.url("/flaky")}));
    emit(srv, &srv.branch_id(), EventType::PaymentFailed);
    rx.wait("/flaky", 1);
    rx.set_status("/flaky", 204);
    advance(srv, 300);
    rx.wait("/flaky", 2);
    let d = &deliveries(srv, &id_of(&hook), "")[0];
    assert_eq!((d["status"].clone(), d["attempt_count"].clone()), (json!("delivered"), json!(2)));
    advance(srv, 86400);
    rx.wait("/flaky", 2);
}

fn refused_connection_is_retried(srv: &TestServer) {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let hook = create(srv, json!({"url": format!("http://127.0.0.1:{port}/nobody")}));
    emit(srv, &srv.branch_id(), EventType::PaymentFailed);
    let start = Instant::now();
    let d = loop {
        let d = deliveries(srv, &id_of(&hook), "");
        if d.first().is_some_and(|d| d["attempt_count"] == json!(1)) {
            break d[0].clone();
        }
        assert!(start.elapsed().as_secs() < 20, "no attempt logged");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(d["status"], json!("retrying"));
    assert_eq!(d["attempts"][0]["response_status"], Value::Null);
    assert!(d["attempts"][0]["error"].as_str().is_some_and(|e| !e.is_empty()), "{d}");
}

fn subscriptions_disabled_deleted_and_branches(srv: &TestServer) {
    let rx = Receiver::start();
    create(srv, json!({"url": rx.url("/payments"), "event_types": ["PAYMENT_SUCCEEDED"]}));
    create(srv, json!({"url": rx.url("/all")}));
    create(srv, json!({"url": rx.url("/off"), "enabled": false}));
    let gone = create(srv, json!({"url": rx.url("/gone")}));
    ok(srv.delete(&format!("{HOOKS}/{}", id_of(&gone))));
    let other = id_of(&ok(srv.post("/api/v2/branch", json!({"name": "Second"}))));
    ok(srv.call_as(&srv.key, Some(&other), Method::POST, HOOKS, Some(json!({"url": rx.url("/second")}))));
    emit(srv, &srv.branch_id(), EventType::PaymentSucceeded);
    emit(srv, &srv.branch_id(), EventType::InvoiceCreated);
    rx.wait("/all", 2);
    rx.wait("/payments", 1);
    for p in ["/off", "/gone", "/second"] {
        assert_eq!(rx.count(p), 0, "{p} received something");
    }
    let to_payments: Vec<String> = rx
        .got()
        .iter()
        .filter(|r| r.path == "/payments")
        .map(|r| r.h("X-Webhook-Event").to_string())
        .collect();
    assert_eq!(to_payments, vec!["PAYMENT_SUCCEEDED"], "only the subscribed type");
    // The other branch's endpoint receives its branch's events only.
    emit(srv, &other, EventType::PaymentSucceeded);
    rx.wait("/second", 1);
    assert_eq!((rx.count("/all"), rx.count("/payments")), (2, 1));
}

fn delivery_log_filters_and_paging(srv: &TestServer) {
    let rx = Receiver::start();
    rx.set_status("/mixed", 500);
    let hook = create(srv, json!({"url": rx.url("/mixed")}));
    let hid = id_of(&hook);
    emit(srv, &srv.branch_id(), EventType::PaymentSucceeded);
    rx.wait("/mixed", 1);
    rx.set_status("/mixed", 200);
    emit(srv, &srv.branch_id(), EventType::InvoiceCreated);
    emit(srv, &srv.branch_id(), EventType::InvoiceCreated);
    rx.wait("/mixed", 3);
    assert_eq!(deliveries(srv, &hid, "").len(), 3);
    assert_eq!(deliveries(srv, &hid, "?status=retrying").len(), 1);
    assert_eq!(deliveries(srv, &hid, "?status=delivered").len(), 2);
    assert_eq!(deliveries(srv, &hid, "?status=failed").len(), 0);
    assert_eq!(deliveries(srv, &hid, "?event_type=INVOICE_CREATED").len(), 2);
    assert_eq!(deliveries(srv, &hid, "?event_type=PAYMENT_SUCCEEDED&status=retrying").len(), 1);
    let page = ok(srv.get(&format!("{HOOKS}/{hid}/deliveries?limit=2&page=2")));
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    assert_eq!(page["pagination"]["max_page"], json!(2));
    let future = enc(&(Utc::now() + Duration::days(1)).to_rfc3339());
    assert_eq!(deliveries(srv, &hid, &format!("?created_from={future}")).len(), 0);
    assert_eq!(deliveries(srv, &hid, &format!("?created_to={future}")).len(), 3);
    assert_invalid(
        &srv.get(&format!("{HOOKS}/{hid}/deliveries?status=lost")),
        json!(["query", "status"]),
        Some("enum"),
    );
    assert_invalid(
        &srv.get(&format!("{HOOKS}/{hid}/deliveries?event_type=X")),
        json!(["query", "event_type"]),
        Some("enum"),
    );
    assert_invalid(
        &srv.get(&format!("{HOOKS}/{hid}/deliveries?created_from=soon")),
        json!(["query", "created_from"]),
        None,
    );
    // A manual retry of the scheduled one, now succeeding, delivers it and ends its schedule.
    let retrying = &deliveries(srv, &hid, "?status=retrying")[0];
    let r = ok(srv.post(&format!("{HOOKS}/deliveries/{}/retry", retrying["id"].as_str().unwrap()), json!({})));
    assert_eq!(
        (r["status"].clone(), r["attempt_count"].clone(), r["next_attempt_at"].clone()),
        (json!("delivered"), json!(2), Value::Null)
    );
    rx.wait("/mixed", 4);
    advance(srv, 86400);
    rx.wait("/mixed", 4);
    let one = ok(srv.get(&format!("{HOOKS}/deliveries/{}", retrying["id"].as_str().unwrap())));
    assert_eq!(one["status"], json!("delivered"));
    // Another branch sees neither the log nor the delivery.
    let other = id_of(&ok(srv.post("/api/v2/branch", json!({"name": "Elsewhere"}))));
    let r = srv.call_as(&srv.key, Some(&other), Method::GET, &format!("{HOOKS}/{hid}/deliveries"), None);
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.call_as(
        &srv.key,
        Some(&other),
        Method::POST,
        &format!("{HOOKS}/deliveries/{}/retry", retrying["id"].as_str().unwrap()),
        Some(json!({})),
    );
    assert_error(&r, 404, "NOT_FOUND");
}

/// Events recorded by real operations (an invoice created, then paid) reach the receiver in
/// the order they were written, each signed, with the payload the operation wrote.
fn events_of_real_operations(srv: &TestServer) {
    let rx = Receiver::start();
    let hook = create(srv, json!({"url": rx.url("/ops")}));
    let secret = hook["secret_key"].as_str().unwrap().to_string();
    let inv = simple_invoice(srv, "115.00");
    let pay = first_payment(&inv);
    ok(mark_paid(srv, &pay, "CASH"));
    rx.wait("/ops", 3);
    let got = rx.got();
    let mut types: Vec<&str> = got.iter().map(|r| r.h("X-Webhook-Event")).collect();
    types.sort();
    assert_eq!(types, vec!["INVOICE_COMPLETED", "INVOICE_CREATED", "PAYMENT_MARKED_AS_PAID"]);
    let stored = srv.app.billing.engine().store.read(|tx| Ok(tx.list_events(srv.boot.org.id)?)).unwrap();
    for r in &got {
        assert!(verify(Some(r.h("X-Webhook-Signature")), &r.body, &secret, 300).is_ok());
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        let ev = stored.iter().find(|e| e.event_type.as_str() == r.h("X-Webhook-Event")).unwrap();
        assert_eq!(body, ev.payload);
        assert_eq!(r.h("X-Webhook-Entity-ID"), body["entity_id"].as_str().unwrap());
        assert_eq!(r.h("X-Webhook-Entity-Type"), body["entity_type"].as_str().unwrap());
    }
    let paid = got.iter().find(|r| r.h("X-Webhook-Event") == "PAYMENT_MARKED_AS_PAID").unwrap();
    assert_eq!(paid.h("X-Webhook-Entity-ID"), pay);
}

/// Found by schemathesis: the endpoints' page offset overflowed (`page × limit` in 32 bits) and
/// the request died without an answer.
fn a_far_page_is_an_empty_page(srv: &TestServer) {
    create(srv, json!({"url": "https://example.com/hook", "event_types": "all"}));
    let r = ok(srv.get("/api/v2/webhooks?limit=10&page=2972944846"));
    assert_eq!(r["data"], json!([]));
    assert_eq!(r["pagination"]["current_page"], 2972944846u64);
    assert_eq!(ok(srv.get("/api/v2/webhooks?limit=100&page=4294967295"))["data"], json!([]));
}

http_tests!(
    a_far_page_is_an_empty_page,
    events_of_real_operations,
    endpoints_api,
    delivery_headers_body_and_signature,
    retry_schedule_on_the_sandbox_clock,
    success_on_a_later_attempt,
    one_long_advance_replays_the_schedule,
    a_slow_receiver_does_not_hold_up_others,
    panics_do_not_stop_the_worker,
    branch_users_cannot_manage_webhooks,
    refused_connection_is_retried,
    subscriptions_disabled_deleted_and_branches,
    delivery_log_filters_and_paging,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(
    events_of_real_operations,
    delivery_headers_body_and_signature,
    retry_schedule_on_the_sandbox_clock,
);
