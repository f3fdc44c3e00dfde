//! Two real `billing-server` processes on one PostgreSQL database, as behind a load balancer:
//! writes through either process are durable and visible from the other, nothing is lost or
//! doubled under concurrent load, and the per-branch uniqueness of phone numbers holds when the
//! same consumer is created through both processes at once.
//!
//! Needs `BILLING_TEST_DATABASE_URL` (a server the tests may create databases on); without it
//! each test prints a SKIPPED line.

use crate::common::process;

use billing_core::consumer::ConsumerSort;
use billing_core::ids::BranchId;
use billing_core::list::{Direction, ListQuery};
use billing_core::store::Store;
use billing_store_postgres::testing::{server_url, TempDatabase, DATABASE_URL_ENV};
use billing_store_postgres::PgStore;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_billing-server");
const JWT_SECRET: &str = "multi-process-test-secret";

// --- a small blocking HTTP/1.1 client ----------------------------------------------------------

#[derive(Debug)]
struct Resp {
    status: u16,
    body: Value,
    text: String,
}

impl Resp {
    fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

/// Decodes a `Transfer-Encoding: chunked` body.
fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_line = String::from_utf8_lossy(&data[..eol]);
        let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        data = &data[eol + 2..];
        if size == 0 || data.len() < size {
            return out;
        }
        out.extend_from_slice(&data[..size]);
        data = data.get(size + 2..).unwrap_or_default();
    }
}

/// Sends one request on `stream` (closed afterwards) and reads the whole response.
fn send(mut stream: TcpStream, addr: SocketAddr, method: &str, path: &str, key: &str, body: Option<&Value>) -> std::io::Result<Resp> {
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    stream.set_nodelay(true)?;
    let body = body.map(|b| serde_json::to_vec(b).unwrap()).unwrap_or_default();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nx-api-key: {key}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    stream.write_all(&req)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("bad status line: {head}")))?;
    let chunked = head
        .lines()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.to_ascii_lowercase().contains("chunked"));
    let body = if chunked { dechunk(&raw[split + 4..]) } else { raw[split + 4..].to_vec() };
    let text = String::from_utf8_lossy(&body).into_owned();
    Ok(Resp {
        status,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        text,
    })
}

fn request(addr: SocketAddr, method: &str, path: &str, key: &str, body: Option<&Value>) -> std::io::Result<Resp> {
    send(TcpStream::connect(addr)?, addr, method, path, key, body)
}

// --- the processes ---------------------------------------------------------------------------

/// One `billing-server` process; killed when dropped (also when a test panics).
struct ServerProcess {
    name: &'static str,
    addr: SocketAddr,
    child: Child,
    log: PathBuf,
}

impl ServerProcess {
    /// Starts a server on a port it binds itself (`127.0.0.1:0`), read back from its log.
    fn start(name: &'static str, database_url: &str, dir: &Path) -> ServerProcess {
        let log = dir.join(format!("{name}.log"));
        let mut cmd = Command::new(BIN);
        cmd.args(["--database-url", database_url, "--jwt-secret", JWT_SECRET]);
        let (child, addr) = process::spawn_server(cmd, &log);
        ServerProcess { name, addr, child, log }
    }

    /// Waits until the server answers `GET /api/v2/me` with 200.
    fn wait_ready(&mut self, key: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("{} exited with {status} before answering:\n{}", self.name, self.log_text());
            }
            if let Ok(r) = request(self.addr, "GET", "/api/v2/me", key, None) {
                assert_eq!(r.status, 200, "{} GET /api/v2/me: {}", self.name, r.text);
                return;
            }
            assert!(Instant::now() < deadline, "{} did not answer within 60 s:\n{}", self.name, self.log_text());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- {} ({}) log ---\n{}", self.name, self.addr, self.log_text());
        }
    }
}

/// Credentials printed by `billing-server init --json`.
struct Creds {
    key: String,
    branch_id: BranchId,
}

/// Two processes on one new database. Fields drop in order: the processes stop before the
/// database is dropped.
struct Cluster {
    servers: [ServerProcess; 2],
    creds: Creds,
    db: TempDatabase,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// `None` (after a SKIPPED line) when no test server is configured.
    fn start(test: &str) -> Option<Cluster> {
        let Some(server) = server_url() else {
            eprintln!("SKIPPED multi_process::{test}: {DATABASE_URL_ENV} is not set");
            return None;
        };
        let db = TempDatabase::create(&server).expect("create a test database");
        let dir = tempfile::tempdir().unwrap();
        let init = Command::new(BIN)
            .args(["--jwt-secret", JWT_SECRET, "init", "--json", "--database-url", db.url()])
            .env("BILLING_LOG", "warn")
            .output()
            .expect("run billing-server init");
        assert!(
            init.status.success(),
            "init failed: {}\n{}",
            String::from_utf8_lossy(&init.stdout),
            String::from_utf8_lossy(&init.stderr)
        );
        let out: Value = serde_json::from_slice(&init.stdout).expect("init --json prints one JSON object");
        let creds = Creds {
            key: out["x_api_key"].as_str().expect("x_api_key").to_string(),
            branch_id: out["branch_id"].as_str().expect("branch_id").parse().expect("a branch id"),
        };
        let mut servers = [
            ServerProcess::start("server-a", db.url(), dir.path()),
            ServerProcess::start("server-b", db.url(), dir.path()),
        ];
        for s in &mut servers {
            s.wait_ready(&creds.key);
        }
        assert_ne!(servers[0].child.id(), servers[1].child.id());
        Some(Cluster { servers, creds, db, _dir: dir })
    }

    fn addr(&self, i: usize) -> SocketAddr {
        self.servers[i % 2].addr
    }

    fn call(&self, i: usize, method: &str, path: &str, body: Option<&Value>) -> Resp {
        request(self.addr(i), method, path, &self.creds.key, body).unwrap_or_else(|e| panic!("{} {method} {path}: {e}", self.servers[i % 2].name))
    }

    /// Every consumer id of the branch, paging through the list of process `i`.
    fn listed_ids(&self, i: usize) -> Vec<String> {
        let mut ids = Vec::new();
        for page in 1.. {
            let r = self.call(
                i,
                "GET",
                &format!("/api/v2/consumers?limit=100&page={page}&sort_field=created_at&sort_direction=asc"),
                None,
            );
            assert_eq!(r.status, 200, "list page {page}: {}", r.text);
            let data = r.body["data"].as_array().expect("data").clone();
            ids.extend(data.iter().map(|c| c["id"].as_str().unwrap().to_string()));
            if data.len() < 100 {
                break;
            }
        }
        ids
    }

    /// Every live consumer of the branch as (id, phone), read from the database directly.
    fn stored(&self) -> Vec<(String, Option<String>)> {
        let store = PgStore::connect(self.db.url()).expect("open the database");
        let mut out = Vec::new();
        for page in 1.. {
            let q = ListQuery {
                page,
                limit: 100,
                sort: ConsumerSort::CreatedAt,
                direction: Direction::Asc,
                search: None,
            };
            let items = store
                .read(|tx| Ok(tx.list_consumers(self.creds.branch_id, &q, &Default::default())?.items))
                .expect("list from the store");
            let n = items.len();
            out.extend(items.into_iter().map(|c| (c.id.to_string(), c.phone_number.map(|p| p.to_string()))));
            if n < 100 {
                break;
            }
        }
        out
    }
}

fn assert_unique(ids: &[String], what: &str) -> BTreeSet<String> {
    let set: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(set.len(), ids.len(), "{what}: an id is listed twice");
    set
}

// --- the tests -------------------------------------------------------------------------------

/// Concurrent creations split across both processes: every answered 200 is at once readable
/// from the other process, and both processes and the database list exactly the created set.
#[test]
fn concurrent_creations_through_both_processes_are_all_visible_from_both() {
    let Some(cluster) = Cluster::start("concurrent_creations_through_both_processes_are_all_visible_from_both") else {
        return;
    };
    const THREADS: usize = 8;
    const PER_THREAD: usize = 40;
    let cluster = Arc::new(cluster);
    // id -> phone, for every 200; anything else is recorded as a failure.
    let created = Arc::new(Mutex::new(BTreeMap::<String, String>::new()));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let start = Arc::new(Barrier::new(THREADS));
    let began = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (cluster, created, failures, start) = (cluster.clone(), created.clone(), failures.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for k in 0..PER_THREAD {
                    let n = t * PER_THREAD + k;
                    let phone = format!("+96650{n:07}");
                    let writer = n % 2;
                    let body = json!({"name": format!("Load {n}"), "phone_number": phone, "external_metadata": {"n": n.to_string()}});
                    let r = cluster.call(writer, "POST", "/api/v2/consumers", Some(&body));
                    if r.status != 200 {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("POST #{n} via {}: {} {}", cluster.servers[writer].name, r.status, r.text));
                        continue;
                    }
                    let id = r.body["id"].as_str().expect("id").to_string();
                    assert_eq!(r.body["phone_number"], phone.as_str());
                    // Answered means committed: the other process sees it right away.
                    let other = cluster.call(writer + 1, "GET", &format!("/api/v2/consumers/{id}"), None);
                    assert_eq!(
                        other.status, 200,
                        "consumer {id} created via {} not readable from the other process: {}",
                        cluster.servers[writer].name, other.text
                    );
                    assert_eq!(other.body["phone_number"], phone.as_str());
                    assert_eq!(other.body["name"], format!("Load {n}"));
                    let previous = created.lock().unwrap().insert(id.clone(), phone);
                    assert!(previous.is_none(), "id {id} answered twice");
                }
            })
        })
        .collect();
    // Join every thread before failing, so that the processes are stopped only when no client
    // holds the cluster any more.
    let joined: Vec<_> = threads.into_iter().map(|t| t.join()).collect();
    assert!(joined.iter().all(Result::is_ok), "a client thread panicked");
    let elapsed = began.elapsed();
    let failures = failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "{} creations were not answered 200:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let created = created.lock().unwrap().clone();
    assert_eq!(created.len(), THREADS * PER_THREAD);
    let phones: BTreeSet<&String> = created.values().collect();
    assert_eq!(phones.len(), created.len(), "distinct phones");
    let want: BTreeSet<String> = created.keys().cloned().collect();
    for i in 0..2 {
        let listed = cluster.listed_ids(i);
        let got = assert_unique(&listed, cluster.servers[i].name);
        assert_eq!(got, want, "the list of {} is exactly the created consumers", cluster.servers[i].name);
    }
    let stored = cluster.stored();
    let stored_ids: Vec<String> = stored.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(assert_unique(&stored_ids, "database"), want, "the database holds exactly the created consumers");
    for (id, phone) in &stored {
        assert_eq!(phone.as_ref(), created.get(id), "consumer {id} kept its phone");
    }
    eprintln!(
        "{} consumers created through 2 processes by {THREADS} clients in {:.2?} (each read back from the other process); lists of both processes and the database agree",
        created.len(),
        elapsed
    );
}

/// The same phone number created through both processes at the same moment, round after
/// round: exactly one 200 and one 422 DUPLICATE_CONSUMER each time, and one consumer per phone.
#[test]
fn one_phone_created_through_both_processes_at_once_is_created_once() {
    let Some(cluster) = Cluster::start("one_phone_created_through_both_processes_at_once_is_created_once") else {
        return;
    };
    const ROUNDS: usize = 20;
    let mut winners = BTreeMap::new();
    let mut won_by = [0usize; 2];
    for round in 0..ROUNDS {
        let phone = format!("+96655{round:07}");
        let barrier = Arc::new(Barrier::new(2));
        let answers: Vec<Resp> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|i| {
                    let (barrier, phone, cluster) = (barrier.clone(), phone.clone(), &cluster);
                    s.spawn(move || {
                        let addr = cluster.addr(i);
                        // Connect first, so that both requests leave together.
                        let stream = TcpStream::connect(addr).unwrap();
                        let body = json!({"name": format!("Round {round} via {i}"), "phone_number": phone});
                        barrier.wait();
                        send(stream, addr, "POST", "/api/v2/consumers", &cluster.creds.key, Some(&body)).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
        statuses.sort_unstable();
        assert_eq!(
            statuses,
            vec![200, 422],
            "round {round}: one creation and one refusal: {:?}",
            answers.iter().map(|r| &r.text).collect::<Vec<_>>()
        );
        let (winner, loser) = if answers[0].status == 200 { (0, 1) } else { (1, 0) };
        assert_eq!(answers[loser].code(), "DUPLICATE_CONSUMER", "round {round}: {}", answers[loser].text);
        won_by[winner] += 1;
        winners.insert(phone.clone(), answers[winner].body["id"].as_str().unwrap().to_string());
        // Exactly one consumer with that phone, seen alike by both processes.
        for i in 0..2 {
            let phone_q: String = phone.bytes().map(|b| format!("%{b:02X}")).collect();
            let r = cluster.call(i, "GET", &format!("/api/v2/consumers?search_term={phone_q}"), None);
            assert_eq!(r.status, 200, "{}", r.text);
            let ids: Vec<&str> = r.body["data"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
            assert_eq!(
                ids,
                vec![winners[&phone].as_str()],
                "round {round}: one consumer with {phone} via {}",
                cluster.servers[i].name
            );
        }
    }
    let stored = cluster.stored();
    assert_eq!(stored.len(), ROUNDS, "one consumer per round in the database");
    let stored_phones: BTreeMap<String, String> = stored.into_iter().map(|(id, p)| (p.expect("a phone"), id)).collect();
    assert_eq!(stored_phones, winners, "the stored consumer of each phone is the one answered 200");
    for i in 0..2 {
        assert_eq!(cluster.listed_ids(i).len(), ROUNDS);
    }
    eprintln!(
        "{ROUNDS} rounds: one 200 and one 422 DUPLICATE_CONSUMER each (won by server-a {} times, server-b {} times); one consumer per phone",
        won_by[0], won_by[1]
    );
}

/// A key revoked through one process is refused by the other on its very next request, though
/// that process had just authenticated it (and kept the authentication); so is a rotated one,
/// and its replacement works in both at once. A sandbox clock advanced through one process is
/// the time the other uses next.
#[test]
fn a_key_revoked_through_one_process_is_refused_by_the_other_at_once() {
    let Some(c) = Cluster::start("a_key_revoked_through_one_process_is_refused_by_the_other_at_once") else {
        return;
    };
    for round in 0..3 {
        let made = c.call(
            0,
            "POST",
            "/api/v2/api-keys",
            Some(&json!({"name": format!("round {round}"), "is_all_branches": true})),
        );
        assert_eq!(made.status, 200, "{}", made.text);
        let key = made.body["x_api_key"].as_str().unwrap().to_string();
        let id = made.body["id"].as_str().unwrap().to_string();
        // Process b authenticates it (twice: kept).
        for _ in 0..2 {
            assert_eq!(request(c.addr(1), "GET", "/api/v2/consumers", &key, None).unwrap().status, 200);
        }
        let revoked = c.call(0, "DELETE", &format!("/api/v2/api-keys/{id}"), None);
        assert_eq!(revoked.status, 200, "{}", revoked.text);
        assert!(revoked.body["revoked_at"].is_string());
        let after = request(c.addr(1), "GET", "/api/v2/consumers", &key, None).unwrap();
        assert_eq!((after.status, after.code()), (401, "UNAUTHORIZED"), "round {round}: {}", after.text);
    }
    // Rotation through b; the old key refused by a at once, the new one accepted by both.
    let made = c.call(1, "POST", "/api/v2/api-keys", Some(&json!({"name": "rotating", "is_all_branches": true})));
    let (old_key, id) = (
        made.body["x_api_key"].as_str().unwrap().to_string(),
        made.body["id"].as_str().unwrap().to_string(),
    );
    assert_eq!(request(c.addr(0), "GET", "/api/v2/consumers", &old_key, None).unwrap().status, 200);
    let rotated = c.call(1, "POST", &format!("/api/v2/api-keys/{id}/rotate"), None);
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    let new_key = rotated.body["x_api_key"].as_str().unwrap().to_string();
    assert_eq!(request(c.addr(0), "GET", "/api/v2/consumers", &old_key, None).unwrap().status, 401);
    for i in 0..2 {
        assert_eq!(request(c.addr(i), "GET", "/api/v2/consumers", &new_key, None).unwrap().status, 200);
    }
    // The sandbox clock: advanced through a, read through b.
    let before = c.call(1, "GET", "/api/v2/sandbox/clock", None);
    assert_eq!(before.status, 200, "{}", before.text);
    let adv = c.call(0, "POST", "/api/v2/sandbox/clock/advance", Some(&json!({"seconds": 86400})));
    assert_eq!(adv.status, 200, "{}", adv.text);
    let made = c.call(1, "POST", "/api/v2/consumers", Some(&json!({"name": "After the advance"})));
    assert_eq!(made.status, 200, "{}", made.text);
    let created = made.body["created_at"].as_str().unwrap().to_string();
    let now_b = c.call(1, "GET", "/api/v2/sandbox/clock", None);
    assert!(
        created.as_str() >= adv.body["now"].as_str().unwrap_or(""),
        "created {created} before the advanced time {}",
        adv.body
    );
    assert_eq!(now_b.status, 200);
}
