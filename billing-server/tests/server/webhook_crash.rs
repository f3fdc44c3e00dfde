//! At-least-once across a crash: the `billing-server` binary is killed with SIGKILL while
//! webhook deliveries are in flight and started again on the same database; every event
//! committed (before, during and after the crash) reaches the receiver at least once.

use crate::common::process;
use crate::common::raw_http;

use billing_core::event::{EntityType, Event, EventType};
use billing_core::ids::{BranchId, EventId, OrgId};
use billing_core::store::Store;
use billing_store_sqlite::SqliteStore;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_billing-server");

/// Received event numbers (`n` of the payload), and requests in flight.
#[derive(Default)]
struct Seen {
    got: Mutex<BTreeMap<u64, usize>>,
    in_flight: AtomicUsize,
}

fn receiver(delay: Duration) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let st = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let st = st.clone();
            std::thread::spawn(move || {
                let Some(body) = raw_http::read_request(&mut stream).map(|r| r.body) else {
                    return;
                };
                st.in_flight.fetch_add(1, Ordering::SeqCst);
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                if let Some(n) = v["n"].as_u64() {
                    *st.got.lock().unwrap().entry(n).or_default() += 1;
                }
                std::thread::sleep(delay);
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
                st.in_flight.fetch_sub(1, Ordering::SeqCst);
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

/// Starts a server on a port it binds itself (`127.0.0.1:0`, read back from its log; a restarted
/// server gets a new one) and waits until it answers.
fn start(db: &str, dir: &Path, name: &str, key: &str) -> Server {
    let mut cmd = Command::new(BIN);
    cmd.args(["--database-url", db]).args([
        "--webhook-timeout-ms",
        "2000",
        "--worker-poll-ms",
        "20",
        "--work-lease-margin-ms",
        "1500",
        "--worker-concurrency",
        "8",
    ]);
    let (child, addr) = process::spawn_server(cmd, &dir.join(format!("{name}.log")));
    let server = Server { child, addr };
    let t = Instant::now();
    while !matches!(raw_http::request(addr, "GET", "/api/v2/me", key, None), Ok((200, _))) {
        assert!(t.elapsed() < Duration::from_secs(30), "{name} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// Waits until the delivery log of endpoint `hook_id` shows `total` deliveries delivered.
fn wait_all_delivered(addr: SocketAddr, key: &str, hook_id: &str, total: u64) {
    let t = Instant::now();
    loop {
        let path = format!("/api/v2/webhooks/{hook_id}/deliveries?status=delivered&limit=100");
        let (_, log) = raw_http::request(addr, "GET", &path, key, None).unwrap();
        if log["data"].as_array().map(Vec::len) == Some(total as usize) {
            return;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "the log does not show {total} delivered: {log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn emit(store: &SqliteStore, org: OrgId, branch: BranchId, n: u64) {
    let ev = Event {
        id: EventId::new(),
        org_id: org,
        branch_id: branch,
        event_type: EventType::PaymentSucceeded,
        entity_type: EntityType::Payment,
        entity_id: uuid::Uuid::now_v7(),
        payload: json!({"event_type": "PAYMENT_SUCCEEDED", "n": n}),
        created_at: billing_core::clock::truncate_micros(chrono::Utc::now()),
    };
    store.write(|tx| billing_core::event::record(tx, &ev)).expect("commit event");
}

#[test]
fn every_committed_event_survives_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("billing.db");
    let db = path.display().to_string();
    let out = Command::new(BIN).args(["init", "--json", "--database-url", &db]).output().expect("init");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let creds: Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = creds["x_api_key"].as_str().unwrap().to_string();
    let org: OrgId = creds["organization_id"].as_str().unwrap().parse().unwrap();
    let branch: BranchId = creds["branch_id"].as_str().unwrap().parse().unwrap();

    let (url, seen) = receiver(Duration::from_millis(300));
    let first = start(&db, dir.path(), "first", &key);
    let (status, hook) = raw_http::request(first.addr, "POST", "/api/v2/webhooks", &key, Some(&json!({"url": url}))).unwrap();
    assert_eq!(status, 200, "{hook}");

    // Events are committed by another process on the same database file.
    let store = SqliteStore::open(&path).unwrap();
    let total = 80u64;
    for n in 0..60 {
        emit(&store, org, branch, n);
    }
    let t = Instant::now();
    while seen.got.lock().unwrap().len() < 10 || seen.in_flight.load(Ordering::SeqCst) == 0 {
        assert!(t.elapsed() < Duration::from_secs(30), "deliveries did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
    let in_flight = seen.in_flight.load(Ordering::SeqCst);
    let mut first = first;
    first.child.kill().expect("SIGKILL");
    first.child.wait().unwrap();
    let before = seen.got.lock().unwrap().len();
    assert!(
        in_flight > 0 && (before as u64) < 60,
        "killed with {in_flight} requests in flight, {before} events received"
    );
    // Committed while no server runs.
    for n in 60..total {
        emit(&store, org, branch, n);
    }
    let second = start(&db, dir.path(), "second", &key);
    let t = Instant::now();
    loop {
        let got = seen.got.lock().unwrap().len() as u64;
        if got == total {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(90), "only {got} of {total} events arrived after the restart");
        std::thread::sleep(Duration::from_millis(50));
    }
    let got = seen.got.lock().unwrap().clone();
    assert!((0..total).all(|n| got.get(&n).is_some_and(|c| *c >= 1)));
    let duplicates: usize = got.values().map(|c| c - 1).sum();
    eprintln!("killed with {in_flight} in flight after {before} events; {total} events delivered, {duplicates} delivered twice (at-least-once)");
    // The log agrees: every delivery ends delivered.
    wait_all_delivered(second.addr, &key, hook["id"].as_str().unwrap(), total);
}

/// SIGTERM while deliveries are in flight: the server claims nothing more, lets the deliveries
/// it holds finish (their attempts recorded as delivered), logs it and exits 0; what it had not
/// claimed is delivered by the next start, once.
#[test]
fn sigterm_lets_the_deliveries_in_flight_finish() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("billing.db");
    let db = path.display().to_string();
    let out = Command::new(BIN).args(["init", "--json", "--database-url", &db]).output().expect("init");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let creds: Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = creds["x_api_key"].as_str().unwrap().to_string();
    let org: OrgId = creds["organization_id"].as_str().unwrap().parse().unwrap();
    let branch: BranchId = creds["branch_id"].as_str().unwrap().parse().unwrap();

    // Each delivery takes 1.5 s at the receiver; 4 runners; the lease is long, so a delivery
    // cut short would not come back within this test.
    let (url, seen) = receiver(Duration::from_millis(1500));
    let mut cmd = Command::new(BIN);
    cmd.args(["--database-url", &db]).args([
        "--webhook-timeout-ms",
        "5000",
        "--worker-poll-ms",
        "20",
        "--work-lease-margin-ms",
        "60000",
        "--worker-concurrency",
        "4",
        "--shutdown-grace-ms",
        "10000",
    ]);
    let log = dir.path().join("first.log");
    let (child, addr) = process::spawn_server(cmd, &log);
    let mut first = Server { child, addr };
    let (status, hook) = raw_http::request(first.addr, "POST", "/api/v2/webhooks", &key, Some(&json!({"url": url}))).unwrap();
    assert_eq!(status, 200, "{hook}");
    let store = SqliteStore::open(&path).unwrap();
    let total = 12u64;
    for n in 0..total {
        emit(&store, org, branch, n);
    }
    let t = Instant::now();
    while seen.in_flight.load(Ordering::SeqCst) < 4 {
        assert!(t.elapsed() < Duration::from_secs(30), "deliveries did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = first.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let code = first.child.wait().unwrap();
    assert!(code.success(), "exit status {code}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("finishing the due work in flight") && text.contains("running=4"), "{text}");
    assert!(text.contains("no due work in flight") && text.contains("finished=4"), "{text}");
    // The four in flight were answered by the receiver, and nothing more was sent.
    assert_eq!(seen.in_flight.load(Ordering::SeqCst), 0);
    let got = seen.got.lock().unwrap().clone();
    assert_eq!(got.len(), 4, "only what was in flight at the signal: {got:?}");

    // The log says those four were delivered (not left to their lease), so the next start
    // sends only the other eight, each once.
    let mut cmd = Command::new(BIN);
    cmd.args(["--database-url", &db, "--worker-poll-ms", "20", "--worker-concurrency", "8"]);
    let (child, addr) = process::spawn_server(cmd, &dir.path().join("second.log"));
    let second = Server { child, addr };
    let t = Instant::now();
    while (seen.got.lock().unwrap().len() as u64) < total {
        assert!(t.elapsed() < Duration::from_secs(60), "the rest did not arrive after the restart");
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_all_delivered(second.addr, &key, hook["id"].as_str().unwrap(), total);
    let got = seen.got.lock().unwrap().clone();
    assert!(got.values().all(|c| *c == 1), "each event once: {got:?}");
}
