//! The command line, through the real binary: first run on an empty database, `init --json`,
//! `keys create`, and flags / environment variables.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_billing-server");

/// A server process, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The port a server started with `--listen 127.0.0.1:0` bound, read from its log line
/// ("billing-server listening address=127.0.0.1:PORT"); the rest of its log is drained. Binding
/// port 0 in the server itself leaves no window for two tests to pick the same port.
fn listening_port(child: &mut Child) -> u16 {
    let stderr = child.stderr.take().expect("stderr piped");
    let mut lines = BufReader::new(stderr).lines();
    let port = loop {
        let line = lines.next().expect("the server logs where it listens").unwrap();
        if let Some(at) = line.find("127.0.0.1:").filter(|_| line.contains("listening")) {
            let digits: String = line[at + 10..].chars().take_while(char::is_ascii_digit).collect();
            // No --public-url given: the default names the bound port, not port 0.
            let public = line.find("http://127.0.0.1:").expect("the public URL is logged") + 17;
            let public: String = line[public..].chars().take_while(char::is_ascii_digit).collect();
            assert_eq!(public, digits, "the default public URL names the bound port: {line}");
            break digits.parse().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    port
}

/// A minimal HTTP/1.1 GET with optional headers: (status, body).
fn get(port: u16, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn wait_ready(port: u16) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(20), "server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn run_json(args: &[&str]) -> Value {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn first_run_bootstraps_and_prints_a_working_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("first.db");
    // Database URL and listen address from the environment this time.
    let mut child = Command::new(BIN)
        .env("BILLING_DATABASE_URL", &db)
        .env("BILLING_CREATE", "true")
        .env("BILLING_LISTEN", "127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let port = listening_port(&mut child);
    let server = Server(child);
    let key = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .map(|l| l.trim().to_string())
        .find(|l| l.len() > 60 && !l.contains(' '))
        .expect("the key is printed");
    wait_ready(port);
    let (status, me) = get(port, "/api/v2/me", &[("x-api-key", &key)]);
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["organization"]["sandbox"], true);
    drop(server);

    // A second start on the same database creates nothing and prints no key.
    let mut child = Command::new(BIN)
        .args(["--database-url", db.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let port = listening_port(&mut child);
    let _server = Server(child);
    wait_ready(port);
    let (status, _) = get(port, "/api/v2/me", &[("x-api-key", &key)]);
    assert_eq!(status, 200, "the first key still works");
    drop(_server);
    let mut printed = String::new();
    stdout.read_to_string(&mut printed).unwrap();
    assert!(!printed.contains("x-api-key"), "no second bootstrap: {printed}");
}

#[test]
fn init_json_and_keys_create() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("cli.db").display());
    let secret = "cli-test-secret";
    let init = run_json(&["init", "--json", "--database-url", &url, "--jwt-secret", secret, "--org-name", "Acme"]);
    for field in ["organization_id", "branch_id", "user_id", "api_key", "api_secret", "token", "x_api_key"] {
        assert!(init[field].as_str().is_some_and(|v| !v.is_empty()), "{field} in {init}");
    }

    let mut child = Command::new(BIN)
        .args(["--database-url", &url, "--listen", "127.0.0.1:0", "--jwt-secret", secret])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let port = listening_port(&mut child);
    let _server = Server(child);
    wait_ready(port);

    // The key pair, as the client would encode it.
    use base64::Engine;
    let header = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", init["api_key"].as_str().unwrap(), init["api_secret"].as_str().unwrap()));
    assert_eq!(header, init["x_api_key"].as_str().unwrap());
    let (status, me) = get(port, "/api/v2/me", &[("x-api-key", &header)]);
    assert_eq!((status, me["organization"]["name"].as_str()), (200, Some("Acme")));
    // The bearer token is signed with the same secret the server uses.
    let (status, me) = get(port, "/api/v2/me", &[("authorization", &format!("Bearer {}", init["token"].as_str().unwrap()))]);
    assert_eq!((status, me["user"]["id"].clone()), (200, init["user_id"].clone()));

    // A key scoped to a new branch: it sees that branch only.
    let (status, branch) = {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let body = r#"{"name":"Second"}"#;
        write!(s, "POST /api/v2/branch HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-api-key: {header}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()).unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        (
            text[9..12].parse::<u16>().unwrap(),
            serde_json::from_str::<Value>(text.split("\r\n\r\n").nth(1).unwrap()).unwrap(),
        )
    };
    assert_eq!(status, 200);
    let second = branch["id"].as_str().unwrap();
    let key = run_json(&["keys", "create", "--json", "--database-url", &url, "--branch", second, "--name", "scoped"]);
    assert_eq!(key["is_all_branches"], false);
    assert_eq!(key["default_branch_id"].as_str(), Some(second));
    let scoped = key["x_api_key"].as_str().unwrap();
    let (status, list) = get(port, "/api/v2/branch", &[("x-api-key", scoped)]);
    assert_eq!(status, 200);
    let names: Vec<&str> = list["data"].as_array().unwrap().iter().map(|b| b["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["Second"]);
    let main = init["branch_id"].as_str().unwrap();
    let (status, denied) = get(port, "/api/v2/consumers", &[("x-api-key", scoped), ("x-branch-id", main)]);
    assert_eq!((status, denied["error"]["code"].as_str()), (403, Some("PERMISSION_FORBIDDEN")));

    // Refusals: an unknown branch, and a default outside the key's branches.
    let out = Command::new(BIN)
        .args(["keys", "create", "--database-url", &url, "--branch", "0192f0c1-6a8e-7cc2-9a53-3f1b8f1f2a10"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = Command::new(BIN)
        .args(["keys", "create", "--database-url", &url, "--branch", second, "--default-branch", main])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn keys_create_on_an_empty_database_says_to_init() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("empty.db").display());
    let out = Command::new(BIN)
        .args(["keys", "create", "--database-url", &url, "--all-branches"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("init"));
}

/// A bodiless POST: (status, body).
fn post_empty(port: u16, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!("POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\ncontent-length: 0\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// `org settings set|show`: support turns auto-charge on while the server runs, and
/// `auto-charge-on-demand` stops answering FEATURE_DISABLED; wrong input is one sentence and
/// exit status 1, and changes nothing.
#[test]
fn org_settings_set_turns_auto_charge_on() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("settings.db").display());
    let init = run_json(&["init", "--json", "--database-url", &url]);
    let org = init["organization_id"].as_str().unwrap();
    let key = init["x_api_key"].as_str().unwrap();
    let before = run_json(&["org", "settings", "show", "--json", "--database-url", &url]);
    assert_eq!(before["auto_charge_on_demand"], false);
    assert_eq!(before["organization_id"].as_str(), Some(org));

    let mut child = Command::new(BIN)
        .args(["--database-url", &url, "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let port = listening_port(&mut child);
    let _server = Server(child);
    wait_ready(port);
    let path = format!("/api/v2/payments/auto-charge-on-demand/{}", uuid::Uuid::new_v4());
    let (status, body) = post_empty(port, &path, &[("x-api-key", key)]);
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("FEATURE_DISABLED")), "{body}");

    // Wrong input: one human sentence on stderr, exit status 1, nothing changed.
    for args in [
        vec!["--auto-charge", "maybe"],
        vec!["--installment-split-months", "0"],
        vec!["--installment-split-months", "two"],
        vec!["--installment-minimum", "XYZ=5"],
        vec!["--installment-minimum", "1.234"],
        vec!["--auto-charge", "on", "--installment-minimum", "-5"],
        vec![],
    ] {
        let out = Command::new(BIN)
            .args(["org", "settings", "set", "--database-url", &url])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && !err.contains("Validation") && !err.contains("{"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        run_json(&["org", "settings", "show", "--json", "--database-url", &url]),
        before,
        "nothing changed"
    );

    let after = run_json(&[
        "org",
        "settings",
        "set",
        "--json",
        "--database-url",
        &url,
        "--org-id",
        org,
        "--auto-charge",
        "on",
        "--installment-minimum",
        "USD=25.5",
        "--installment-minimum",
        "50",
        "--installment-split-months",
        "2",
    ]);
    assert_eq!(after["auto_charge_on_demand"], true);
    assert_eq!(after["installment_minimums"], serde_json::json!({"SAR": "50.00", "USD": "25.50"}));
    assert_eq!(after["installment_split_months"], 2);
    assert_eq!(after["vat_rate"], before["vat_rate"], "admin-level settings untouched");
    // The running server sees it at its next request: the unknown payment is now the answer.
    let (status, body) = post_empty(port, &path, &[("x-api-key", key)]);
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("NOT_FOUND")), "{body}");
    let (status, s) = get(port, "/api/v2/organization/settings", &[("x-api-key", key)]);
    assert_eq!((status, &s), (200, &after));

    // The text form names each setting.
    let out = Command::new(BIN).args(["org", "settings", "show", "--database-url", &url]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("auto-charge on demand     on") && text.contains("SAR 50.00, USD 25.50"), "{text}");

    // Off again.
    let off = run_json(&["org", "settings", "set", "--json", "--database-url", &url, "--auto-charge", "off"]);
    assert_eq!(off["auto_charge_on_demand"], false);
    let (status, body) = post_empty(port, &path, &[("x-api-key", key)]);
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("FEATURE_DISABLED")), "{body}");
}
