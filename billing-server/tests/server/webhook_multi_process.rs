//! Two `billing-server` processes on one PostgreSQL database, both running the webhook worker:
//! every event is delivered, and no attempt is sent twice — the fan-out happens once per event
//! and each attempt is claimed by one process (`FOR UPDATE SKIP LOCKED` with a lease), also
//! while a sandbox clock advance in one process races the other's worker for the retries.
//!
//! Needs `BILLING_TEST_DATABASE_URL`; without it the test prints a SKIPPED line.

use crate::common::process;
use crate::common::raw_http;

use billing_core::event::{EntityType, Event, EventType};
use billing_core::ids::{BranchId, EventId, OrgId};
use billing_core::store::Store;
use billing_store_postgres::testing::{server_url, TempDatabase};
use billing_store_postgres::PgStore;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_billing-server");

/// Requests per delivery id. The first request of each delivery is answered 500, later ones 200.
type Seen = Arc<Mutex<HashMap<String, usize>>>;

fn receiver() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let st = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let st = st.clone();
            std::thread::spawn(move || {
                let Some(r) = raw_http::read_request(&mut stream) else { return };
                let id = r.h("X-Webhook-Delivery-ID").to_string();
                let n = {
                    let mut s = st.lock().unwrap();
                    let c = s.entry(id).or_default();
                    *c += 1;
                    *c
                };
                std::thread::sleep(Duration::from_millis(5));
                let status = if n == 1 { "500 Internal Server Error" } else { "200 OK" };
                let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            });
        }
    });
    (url, seen)
}

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a server on a port it binds itself (`127.0.0.1:0`, read back from its log) and waits
/// until it answers.
fn start(db: &str, dir: &Path, name: &str, key: &str) -> Server {
    let mut cmd = Command::new(BIN);
    cmd.args(["--database-url", db, "--worker-poll-ms", "10", "--worker-concurrency", "8"]);
    let (child, addr) = process::spawn_server(cmd, &dir.join(format!("{name}.log")));
    let server = Server { child, addr };
    let t = Instant::now();
    while !matches!(raw_http::request(addr, "GET", "/api/v2/me", key, None), Ok((200, _))) {
        assert!(t.elapsed() < Duration::from_secs(30), "{name} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(90), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_processes_send_each_attempt_once() {
    let Some(server) = server_url() else {
        eprintln!("SKIPPED two_processes_send_each_attempt_once: BILLING_TEST_DATABASE_URL is not set");
        return;
    };
    let db = TempDatabase::create(&server).expect("test database");
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN).args(["init", "--json", "--database-url", db.url()]).output().expect("init");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let creds: Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = creds["x_api_key"].as_str().unwrap().to_string();
    let org: OrgId = creds["organization_id"].as_str().unwrap().parse().unwrap();
    let branch: BranchId = creds["branch_id"].as_str().unwrap().parse().unwrap();

    let (url, seen) = receiver();
    let a = start(db.url(), dir.path(), "a", &key);
    let b = start(db.url(), dir.path(), "b", &key);
    let (status, hook) = raw_http::request(a.addr, "POST", "/api/v2/webhooks", &key, Some(&json!({"url": url}))).unwrap();
    assert_eq!(status, 200, "{hook}");

    let store = PgStore::connect(db.url()).unwrap();
    let total = 200usize;
    std::thread::scope(|s| {
        for t in 0..4 {
            let store = &store;
            s.spawn(move || {
                for n in 0..total / 4 {
                    let ev = Event {
                        id: EventId::new(),
                        org_id: org,
                        branch_id: branch,
                        event_type: EventType::InvoiceCreated,
                        entity_type: EntityType::Invoice,
                        entity_id: uuid::Uuid::now_v7(),
                        payload: json!({"event_type": "INVOICE_CREATED", "n": t * 1000 + n}),
                        created_at: billing_core::clock::truncate_micros(chrono::Utc::now()),
                    };
                    store.write(|tx| billing_core::event::record(tx, &ev)).expect("commit event");
                }
            });
        }
    });
    // First attempts: each delivery once (all answered 500, so each is now scheduled for a retry).
    wait_until("the first attempts", || seen.lock().unwrap().len() == total);
    std::thread::sleep(Duration::from_millis(500));
    assert!(seen.lock().unwrap().values().all(|c| *c == 1), "a first attempt was sent twice");

    // Retries fall due on the sandbox clock: process A's advance and both workers race for them.
    let (status, _) = raw_http::request(a.addr, "POST", "/api/v2/sandbox/clock/advance", &key, Some(&json!({"seconds": 301}))).unwrap();
    assert_eq!(status, 200);
    wait_until("the retries", || seen.lock().unwrap().values().all(|c| *c >= 2));
    std::thread::sleep(Duration::from_millis(500));
    let counts = seen.lock().unwrap().clone();
    assert_eq!(counts.len(), total, "one delivery per event");
    assert!(
        counts.values().all(|c| *c == 2),
        "an attempt was sent twice: {:?}",
        counts.values().filter(|c| **c != 2).collect::<Vec<_>>()
    );

    // Both processes see the same log: every delivery delivered on its second attempt.
    let hook_id = hook["id"].as_str().unwrap();
    for (name, server) in [("a", &a), ("b", &b)] {
        let mut delivered = 0;
        for page in 1..=2 {
            let path = format!("/api/v2/webhooks/{hook_id}/deliveries?status=delivered&limit=100&page={page}");
            let (_, log) = raw_http::request(server.addr, "GET", &path, &key, None).unwrap();
            for d in log["data"].as_array().unwrap() {
                assert_eq!(d["attempt_count"], json!(2), "{name}: {d}");
                delivered += 1;
            }
        }
        assert_eq!(delivered, total, "{name} sees every delivery delivered");
    }
}

// --- two stores on one database claiming at once -----------------------------------------------

/// Two store instances (as two processes would have) on one database claim the same due work
/// concurrently, in small batches from several threads each: every item is claimed exactly once.
fn two_stores_claim_each_item_once<S: Store>(a: S, b: S) {
    use billing_core::clock::{Clock, SystemClock};
    use billing_core::ids::WorkId;
    use billing_core::work::DueWork;
    let billing = billing_core::Billing::new(a, Arc::new(SystemClock));
    let boot = billing
        .org()
        .bootstrap(&billing_core::org::BootstrapRequest {
            org_name: "Claims".into(),
            admin_email: billing_core::fields::Email::parse("claims@example.com").unwrap(),
            sandbox: true,
        })
        .unwrap();
    let now = SystemClock.now();
    let total = 300;
    let mut ids = std::collections::BTreeSet::new();
    billing
        .engine()
        .store
        .write(|tx| {
            for i in 0..total {
                let w = DueWork::new(WorkId::new(), boot.org.id, "test.claim", now - chrono::Duration::milliseconds(i), json!({}));
                ids.insert(w.id);
                tx.insert_work(&w)?;
            }
            Ok(())
        })
        .unwrap();
    let taken = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for store in [&billing.engine().store as &S, &b] {
            for _ in 0..4 {
                let taken = &taken;
                s.spawn(move || loop {
                    let got = store
                        .write(|tx| Ok(tx.claim_due_work(None, &["test.claim"], now, now + chrono::Duration::hours(1), 5)?))
                        .expect("claim");
                    if got.is_empty() {
                        break;
                    }
                    taken.lock().unwrap().extend(got.into_iter().map(|w| w.id));
                });
            }
        }
    });
    let taken = taken.into_inner().unwrap();
    assert_eq!(taken.len(), total as usize, "each item claimed once");
    assert_eq!(taken.into_iter().collect::<std::collections::BTreeSet<_>>(), ids);
}

#[test]
fn two_postgres_stores_claim_each_item_once() {
    let Some(server) = server_url() else {
        eprintln!("SKIPPED two_postgres_stores_claim_each_item_once: BILLING_TEST_DATABASE_URL is not set");
        return;
    };
    let db = TempDatabase::create(&server).expect("test database");
    two_stores_claim_each_item_once(PgStore::connect(db.url()).unwrap(), PgStore::connect(db.url()).unwrap());
}

#[test]
fn two_sqlite_stores_claim_each_item_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claims.db");
    let a = billing_store_sqlite::SqliteStore::open(&path).unwrap();
    let b = billing_store_sqlite::SqliteStore::open(&path).unwrap();
    two_stores_claim_each_item_once(a, b);
}
