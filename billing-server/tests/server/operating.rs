//! Running the real binary: health probes, graceful shutdown on SIGTERM, database URLs it
//! refuses, a database password kept out of the log, and `init --live`.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_billing-server");

/// A server process (killed when dropped) and its log lines.
struct Server {
    child: Child,
    port: u16,
    /// The log up to and with the "listening" line.
    started: Vec<String>,
    log: mpsc::Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child's standard error, line by line, as it comes.
fn log_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let (send, log) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    log
}

fn start(database_url: &str, extra: &[&str]) -> Server {
    let listen: &[&str] = if extra.contains(&"--listen") { &[] } else { &["--listen", "127.0.0.1:0"] };
    let mut child = Command::new(BIN)
        .args(listen)
        .args(["--no-worker", "--create", "--database-url", database_url])
        .args(extra)
        .env("BILLING_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = log_lines(&mut child);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut started = Vec::new();
    let port = loop {
        let line = log
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the server logs where it listens");
        started.push(line.clone());
        // Plain text (no colour codes in a pipe): `… billing-server listening address=127.0.0.1:PORT …`.
        if let Some(at) = line.find("address=127.0.0.1:").filter(|_| line.contains("listening")) {
            assert!(!line.contains('\u{1b}'), "no colour codes when the log is not a terminal: {line:?}");
            break line[at + 18..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap();
        }
    };
    Server { child, port, started, log }
}

impl Server {
    /// Log lines until one contains `text` (or ten seconds pass): all of them.
    fn log_until(&self, text: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while let Ok(line) = self.log.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            let done = line.contains(text);
            seen.push(line);
            if done {
                return seen;
            }
        }
        panic!("no log line with {text:?}; got {seen:#?}");
    }
}

fn request(port: u16, raw: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    read_response(&mut s)
}

fn read_response(s: &mut TcpStream) -> (u16, Value) {
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("ops.db").display())
}

#[test]
fn probes_answer_without_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&sqlite_url(&dir), &[]);
    let (status, body) = request(server.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!((status, body["status"].as_str()), (200, Some("ok")));
    let (status, body) = request(server.port, "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!((status, body["status"].as_str()), (200, Some("ready")));
    // The API itself still wants credentials.
    let (status, _) = request(server.port, "GET /api/v2/consumers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 401);
}

#[test]
fn readiness_fails_when_the_database_is_gone() {
    let Some(pg) = billing_store_postgres::testing::server_url() else {
        eprintln!("SKIPPED: {} is not set", billing_store_postgres::testing::DATABASE_URL_ENV);
        return;
    };
    let db = billing_store_postgres::testing::TempDatabase::create(&pg).unwrap();
    let server = start(db.url(), &[]);
    let ready = |port| request(port, "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").0;
    assert_eq!(ready(server.port), 200);
    let name = db.url().rsplit('/').next().unwrap().split('?').next().unwrap().to_string();
    drop(db); // DROP DATABASE … WITH (FORCE): every connection of the server is cut.
    let (status, _) = request(server.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200, "the process still answers");
    assert_eq!(ready(server.port), 503, "database {name} is gone");
}

#[test]
fn sigterm_finishes_the_request_in_flight_then_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let init = Command::new(BIN).args(["init", "--json", "--database-url", &url]).output().unwrap();
    let creds: Value = serde_json::from_slice(&init.stdout).unwrap();
    let key = creds["x_api_key"].as_str().unwrap().to_string();
    let mut server = start(&url, &["--shutdown-grace-ms", "10000"]);
    // A request whose body is still arriving when the signal comes.
    let body = r#"{"name":"Late","email":"late@example.com"}"#;
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let head = format!(
        "POST /api/v2/consumers HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-api-key: {key}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body.as_bytes()[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let lines = server.log_until("shutting down");
    assert!(lines.iter().any(|l| l.contains("SIGTERM") && l.contains("in_flight=1")), "{lines:#?}");
    // No new connection is taken once the signal is in.
    std::thread::sleep(Duration::from_millis(200));
    assert!(TcpStream::connect(("127.0.0.1", server.port)).is_err(), "the listener is closed");
    // The request in flight still gets its answer, and is committed.
    s.write_all(&body.as_bytes()[10..]).unwrap();
    let (status, created) = read_response(&mut s);
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["name"], "Late");
    server.log_until("every request in flight was answered");
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(code) = server.child.try_wait().unwrap() {
            break code;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(code.success(), "exit status {code}");
    // What it answered is on disk: a new process finds it.
    let again = start(&url, &[]);
    let (status, list) = request(
        again.port,
        &format!("GET /api/v2/consumers HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-api-key: {key}\r\n\r\n"),
    );
    assert_eq!(status, 200);
    assert_eq!(list["data"][0]["name"], "Late", "{list}");
}

#[test]
fn database_urls_of_other_schemes_are_refused_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for url in ["postgress://postgres@127.0.0.1/db", "mysql://root@127.0.0.1/test", "sqllite://x.db"] {
        let out = Command::new(BIN)
            .current_dir(dir.path())
            .args(["init", "--database-url", url])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{url} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        let scheme = url.split("://").next().unwrap();
        assert!(err.contains(&format!("'{scheme}://'")) && err.contains("postgres://"), "{url}: {err}");
        assert!(!err.contains("Backend") && !err.contains("{ "), "one sentence, not a debug dump: {err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no file was created");
}

#[test]
fn the_database_password_stays_out_of_the_log() {
    let Some(pg) = billing_store_postgres::testing::server_url() else {
        eprintln!("SKIPPED: {} is not set", billing_store_postgres::testing::DATABASE_URL_ENV);
        return;
    };
    // Trust authentication ignores the password; it must still not be printed.
    let db = billing_store_postgres::testing::TempDatabase::create(&pg).unwrap();
    let with_password = db.url().replacen("postgres://postgres@", "postgres://postgres:s3cret-Pa55@", 1);
    assert_ne!(with_password, db.url(), "the test URL names user postgres");
    let server = start(&with_password, &[]);
    let pid = server.child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let mut lines = server.started.clone();
    lines.extend(server.log_until("stopped"));
    let all = lines.join("\n");
    assert!(!all.contains("s3cret-Pa55"), "{all}");
    assert!(all.contains("postgres:***@"), "the URL is logged, without its password: {all}");
}

#[test]
fn init_live_says_live() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let out = Command::new(BIN).args(["init", "--live", "--database-url", &url]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Created live organization"), "{text}");
    let out = Command::new(BIN).args(["init", "--database-url", &url]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Created sandbox organization"));
}

/// `keys list` and `keys revoke` from the command line, while a server runs on the same SQLite
/// file and has just used the key: its next request is refused.
#[test]
fn a_key_revoked_from_the_command_line_is_refused_by_the_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    assert!(Command::new(BIN)
        .args(["init", "--json", "--database-url", &url])
        .output()
        .unwrap()
        .status
        .success());
    let made = Command::new(BIN)
        .args(["keys", "create", "--all-branches", "--json", "--name", "ops", "--database-url", &url])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let made: Value = serde_json::from_slice(&made.stdout).unwrap();
    let (id, key) = (made["id"].as_str().unwrap().to_string(), made["x_api_key"].as_str().unwrap().to_string());
    let server = start(&url, &[]);
    let get = |key: &str| {
        request(
            server.port,
            &format!("GET /api/v2/consumers HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-api-key: {key}\r\n\r\n"),
        )
        .0
    };
    assert_eq!((get(&key), get(&key)), (200, 200));
    let listed = Command::new(BIN).args(["keys", "list", "--json", "--database-url", &url]).output().unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let row = listed.as_array().unwrap().iter().find(|k| k["id"] == id.as_str()).unwrap().clone();
    assert!(row["revoked_at"].is_null() && row.get("api_secret").is_none(), "{row}");
    let out = Command::new(BIN)
        .args(["keys", "revoke", "--id", &id, "--database-url", &url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("revoked"));
    assert_eq!(get(&key), 401, "refused on its next request");
    let out = Command::new(BIN)
        .args(["keys", "revoke", "--id", &uuid::Uuid::new_v4().to_string(), "--database-url", &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not found") || err.contains("API key"), "{err}");
}

/// `--listen` takes a host name; an address in use is one clear sentence naming it.
#[test]
fn listen_takes_a_name_and_says_when_the_address_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = Command::new(BIN)
        .args(["--listen", &format!("127.0.0.1:{port}"), "--no-worker", "--create", "--database-url", &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("address 127.0.0.1:{port} is already in use")) && err.contains("--listen"),
        "{err}"
    );
    drop(taken);
    let out = Command::new(BIN)
        .args(["--listen", "nowhere.invalid:80", "--database-url", &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a host:port address"));
    // A name: the server comes up on localhost.
    let server = start(&url, &["--listen", "localhost:0"]);
    let (status, _) = request(server.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
}

/// A SQLite path with no database is refused (a misspelt path must not start a new, empty
/// database), and nothing is created; `--create` makes it; `init` needs no flag.
#[test]
fn a_missing_sqlite_file_is_created_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    for args in [vec!["--listen", "127.0.0.1:0"], vec!["keys", "list"]] {
        let out = Command::new(BIN).args(&args).args(["--database-url", &url]).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("there is no database at") && err.contains("--create") && err.contains("init"),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing created");
    }
    let server = start(&url, &[]); // with --create
    assert_eq!(request(server.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").0, 200);
    drop(server);
    let other = format!("sqlite://{}", dir.path().join("fresh.db").display());
    assert!(Command::new(BIN).args(["init", "--database-url", &other]).output().unwrap().status.success());
}

/// A key made from the command line on a new SQLite database: its `x-api-key` value and its
/// public name.
fn cli_key(url: &str) -> (String, String) {
    assert!(Command::new(BIN).args(["init", "--database-url", url]).output().unwrap().status.success());
    let made = Command::new(BIN)
        .args(["keys", "create", "--all-branches", "--json", "--name", "log", "--database-url", url])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let made: Value = serde_json::from_slice(&made.stdout).unwrap();
    (made["x_api_key"].as_str().unwrap().to_string(), made["api_key"].as_str().unwrap().to_string())
}

/// The secret half of an `x-api-key` value.
fn secret_of(x_api_key: &str) -> String {
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD.decode(x_api_key).unwrap();
    String::from_utf8(raw).unwrap().split_once(':').unwrap().1.to_string()
}

/// One access-log line per request at `info`: method, route template (not the path with its
/// id), status, duration, request id and the key's public name; never the secret.
#[test]
fn every_request_has_an_access_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let (x_api_key, name) = cli_key(&url);
    let server = start(&url, &[]);
    let id = "0190e5a0-0000-7000-8000-00000000abcd";
    let (status, _) = request(
        server.port,
        &format!("GET /api/v2/consumers/{id}?search=x HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-api-key: {x_api_key}\r\nx-request-id: req-log-1\r\n\r\n"),
    );
    assert_eq!(status, 404);
    let line = server.log_until("req-log-1").pop().unwrap();
    for part in [
        "access",
        "method=GET",
        "route=/api/v2/consumers/{consumer_id}",
        "status=404",
        "duration_ms=",
        &format!("key=\"{name}\""),
    ] {
        assert!(line.contains(part), "{part:?} missing from {line:?}");
    }
    assert!(!line.contains(id) && !line.contains("search=x"), "no path ids or query in the log: {line:?}");
    assert!(
        !line.contains(&secret_of(&x_api_key)) && !line.contains(&x_api_key),
        "no secret in the log: {line:?}"
    );
    // Unknown paths are logged under one name; a request without a key as `-`.
    let (status, _) = request(
        server.port,
        "GET /no/such/thing HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-request-id: req-log-2\r\n\r\n",
    );
    assert_eq!(status, 404);
    let line = server.log_until("req-log-2").pop().unwrap();
    assert!(
        line.contains("route=other") && line.contains("key=\"-\"") && !line.contains("/no/such"),
        "{line:?}"
    );
}

/// `BILLING_LOG_FORMAT=json`: every line is one JSON object, the access line with its fields;
/// another value is refused at start.
#[test]
fn json_logs_are_one_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let (x_api_key, name) = cli_key(&url);
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--no-worker", "--database-url", &url])
        .env("BILLING_LOG", "info")
        .env("BILLING_LOG_FORMAT", "json")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (send, lines) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    let next = || -> Value {
        let line = lines.recv_timeout(Duration::from_secs(20)).expect("a log line within 20 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not one JSON object ({e}): {line:?}"))
    };
    let port: u16 = loop {
        let v = next();
        if v["message"] == "billing-server listening" {
            break v["address"].as_str().unwrap().rsplit(':').next().unwrap().parse().unwrap();
        }
    };
    let (status, _) = request(
        port,
        &format!("GET /api/v2/consumers HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-api-key: {x_api_key}\r\nx-request-id: req-json-1\r\n\r\n"),
    );
    assert_eq!(status, 200);
    let access = loop {
        let v = next();
        if v["request_id"] == "req-json-1" {
            break v;
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(access["target"], "access", "{access}");
    assert_eq!(access["level"], "INFO", "{access}");
    assert_eq!(access["method"], "GET", "{access}");
    assert_eq!(access["route"], "/api/v2/consumers", "{access}");
    assert_eq!(access["status"], 200, "{access}");
    assert_eq!(access["key"], name.as_str(), "{access}");
    assert!(access["duration_ms"].as_f64().is_some_and(|d| d >= 0.0), "{access}");
    assert!(!access.to_string().contains(&secret_of(&x_api_key)), "{access}");

    let out = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--database-url", &url])
        .env("BILLING_LOG_FORMAT", "xml")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("BILLING_LOG_FORMAT must be text or json"), "{err}");
}

/// A command line clap refuses is one sentence on standard error (exit 2), not the usage dump;
/// `--help` still prints the help.
#[test]
fn command_line_mistakes_are_one_sentence() {
    for (args, says) in [
        (vec!["--frobnicate"], "unexpected argument '--frobnicate'"),
        (vec!["keys", "create", "--org-id", "zz"], "invalid value 'zz' for '--org-id"),
        (vec!["keys", "revoke"], "--id"),
        (vec!["--body-limit", "lots"], "invalid value 'lots'"),
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line, got {err:?}");
        assert!(
            lines[0].starts_with("error: ") && lines[0].contains(says) && lines[0].ends_with("(see `billing-server --help`)"),
            "{args:?}: {err:?}"
        );
        assert!(!err.contains("Usage:"), "{err:?}");
    }
    let help = Command::new(BIN).arg("--help").output().unwrap();
    assert!(help.status.success() && String::from_utf8_lossy(&help.stdout).contains("Usage:"));
}

/// Runs `init --json` on `url` while `release` is still to be called: the command must say in
/// its log that it waits for another process's lock, keep waiting, and finish once released.
fn init_waits_for_the_lock(url: &str, says: &str, release: impl FnOnce()) {
    let mut child = Command::new(BIN)
        .args(["init", "--json", "--database-url", url])
        .env("BILLING_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = log_lines(&mut child);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains(says)) {
        match log.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("no log line with {says:?}: {seen:#?}"),
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "it waits while the lock is held: {seen:#?}");
    release();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{seen:#?}");
    let creds: Value = serde_json::from_slice(&out.stdout).expect("init printed its JSON");
    assert!(creds["x_api_key"].is_string());
}

#[test]
fn init_says_when_it_waits_for_another_process_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    // Another process (here: this one) holds the file's write lock.
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE; CREATE TABLE other_work (x INTEGER);").unwrap();
    init_waits_for_the_lock(&format!("sqlite://{}", path.display()), "locked by another process; waiting", move || {
        other.execute_batch("COMMIT").unwrap();
        drop(other);
    });
}

#[test]
fn init_says_when_it_waits_for_another_process_migrating_postgres() {
    use diesel::{Connection, RunQueryDsl};
    let Some(pg) = billing_store_postgres::testing::server_url() else {
        eprintln!("SKIPPED: {} is not set", billing_store_postgres::testing::DATABASE_URL_ENV);
        return;
    };
    let db = billing_store_postgres::testing::TempDatabase::create(&pg).unwrap();
    // Another process holds the migration lock ("billing" in ASCII, as the store takes it).
    let mut other = diesel::PgConnection::establish(db.url()).unwrap();
    diesel::sql_query("SELECT pg_advisory_lock(27700462113877607)").execute(&mut other).unwrap();
    init_waits_for_the_lock(db.url(), "another process is migrating the database; waiting", move || {
        diesel::sql_query("SELECT pg_advisory_unlock(27700462113877607)").execute(&mut other).unwrap();
    });
}

/// Mistakes the command line takes but the database refuses are one human sentence too (exit
/// status 1), never a debug dump of the error, and change nothing.
#[test]
fn refused_commands_are_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    let init = Command::new(BIN).args(["init", "--json", "--database-url", &url]).output().unwrap();
    let creds: Value = serde_json::from_slice(&init.stdout).unwrap();
    let other_branch = uuid::Uuid::now_v7().to_string();
    for (args, says) in [
        (vec!["keys", "create"], "a key needs branches: pass --all-branches"),
        (vec!["keys", "create", "--branch", other_branch.as_str()], "not found"),
    ] {
        let out = Command::new(BIN).args(&args).args(["--database-url", &url]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty() && !l.contains(" INFO ")).collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line, got {err:?}");
        assert!(lines[0].starts_with("error: ") && lines[0].contains(says), "{args:?}: {err:?}");
        for dump in ["FieldError", "LocPart", "{ ", "Key(\""] {
            assert!(!err.contains(dump), "{args:?}: no debug dump: {err:?}");
        }
    }
    let out = Command::new(BIN).args(["keys", "list", "--json", "--database-url", &url]).output().unwrap();
    let keys: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(keys.as_array().map(Vec::len), Some(1), "only init's key: {keys}");
    assert!(creds["x_api_key"].is_string());
}
