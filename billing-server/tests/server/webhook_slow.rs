//! Receivers that never answer: a sandbox clock advance runs the attempts of each stop side by
//! side (it costs about one time-out per stop, not one per attempt), and one organization's
//! hanging receivers do not keep another organization's deliveries waiting beyond about one
//! time-out.

use crate::common::fixtures::ok;
use crate::common::TestServer;
use billing_core::event::{EntityType, Event, EventType};
use billing_core::fields::Email;
use billing_core::ids::{BranchId, EventId, OrgId};
use billing_core::org::BootstrapRequest;
use billing_core::store::Store;
use hyper::Method;
use serde_json::json;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const HOOKS: &str = "/api/v2/webhooks";
const TIMEOUT: Duration = Duration::from_millis(700);

/// Accepts connections and never answers; counts them.
struct Hanging {
    addr: SocketAddr,
    held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Hanging {
    fn start() -> Hanging {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let held = Arc::new(Mutex::new(Vec::new()));
        let h = held.clone();
        std::thread::spawn(move || {
            for s in listener.incoming().flatten() {
                h.lock().unwrap().push(s);
            }
        });
        Hanging { addr, held }
    }
    fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }
    fn connections(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

fn emit(srv: &TestServer, org: OrgId, branch: BranchId, at: chrono::DateTime<chrono::Utc>) {
    let entity = uuid::Uuid::now_v7();
    let ev = Event {
        id: EventId::new(),
        org_id: org,
        branch_id: branch,
        event_type: EventType::PaymentSucceeded,
        entity_type: EntityType::Payment,
        entity_id: entity,
        payload: json!({"event_type": "PAYMENT_SUCCEEDED", "entity_id": entity}),
        created_at: billing_core::clock::truncate_micros(at),
    };
    srv.app.billing.engine().store.write(|tx| billing_core::event::record(tx, &ev)).unwrap();
}

/// Six receivers that never answer, one event: a one-day advance makes every scheduled attempt
/// (the first and five retries, each a stop of the clock) to all six, side by side. One after
/// another that would be 36 time-outs; side by side it is about six.
#[test]
fn an_advance_with_hanging_receivers_costs_about_one_timeout_per_stop() {
    let srv = TestServer::sqlite_with(|c| {
        c.webhook_timeout = TIMEOUT;
        // The advance does the work, not the background worker.
        c.worker = false;
    });
    let receivers: Vec<Hanging> = (0..6).map(|_| Hanging::start()).collect();
    for r in &receivers {
        ok(srv.post(HOOKS, json!({"url": r.url(), "event_types": ["PAYMENT_SUCCEEDED"]})));
    }
    emit(&srv, srv.boot.org.id, srv.boot.branch.id, chrono::Utc::now());
    let started = Instant::now();
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 86_400})));
    let took = started.elapsed();
    let attempts: usize = receivers.iter().map(Hanging::connections).sum();
    assert_eq!(attempts, 6 * 6, "every receiver got the first attempt and five retries");
    let per_stop = took.as_secs_f64() / 6.0 / TIMEOUT.as_secs_f64();
    eprintln!("a one-day advance over 6 hanging receivers took {took:?} ({per_stop:.2} time-outs per stop)");
    assert!(took < TIMEOUT * 6 * 2, "took {took:?}: more than about one time-out per stop");
}

/// Organization A has many deliveries to a receiver that never answers, enough to fill every
/// runner several times over; organization B's delivery, due after all of them, arrives within
/// about one time-out (the time until a runner frees), not after A's backlog.
#[test]
fn one_organizations_hanging_receivers_do_not_hold_up_another() {
    let srv = TestServer::sqlite_with(|c| {
        c.webhook_timeout = TIMEOUT;
        c.worker_concurrency = 4;
    });
    let hanging = Hanging::start();
    ok(srv.post(HOOKS, json!({"url": hanging.url(), "event_types": ["PAYMENT_SUCCEEDED"]})));
    let b = srv
        .app
        .billing
        .org()
        .bootstrap(&BootstrapRequest {
            org_name: "Other Org".into(),
            admin_email: Email::parse("other@example.com").unwrap(),
            sandbox: false,
        })
        .unwrap();
    let b_key = b.api_key.header_value();
    let fast = TcpListener::bind("127.0.0.1:0").unwrap();
    let fast_url = format!("http://{}/fast", fast.local_addr().unwrap());
    let hook = srv.call_as(&b_key, None, Method::POST, HOOKS, Some(json!({"url": fast_url})));
    assert_eq!(hook.status, 200, "{}", hook.text);

    let now = chrono::Utc::now();
    for _ in 0..24 {
        emit(&srv, srv.boot.org.id, srv.boot.branch.id, now);
    }
    // Every runner is now waiting on the hanging receiver.
    let t = Instant::now();
    while hanging.connections() < 4 {
        assert!(t.elapsed() < Duration::from_secs(10), "A's deliveries did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    emit(&srv, b.org.id, b.branch.id, chrono::Utc::now());
    let emitted = Instant::now();
    let (mut s, _) = fast.accept().unwrap();
    let waited = emitted.elapsed();
    let got = crate::common::raw_http::read_request(&mut s).expect("B's delivery");
    assert_eq!(got.path, "/fast");
    eprintln!("B's delivery arrived after {waited:?} (A's backlog: 24 attempts of {TIMEOUT:?} on 4 runners)");
    // A's backlog alone would take 6 rounds of time-outs.
    assert!(waited < TIMEOUT * 2 + Duration::from_millis(500), "B waited {waited:?}");
}
