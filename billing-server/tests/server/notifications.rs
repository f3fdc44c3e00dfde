//! Customer notifications through the real server: e-mails received by a real SMTP server
//! (Python's aiosmtpd, started by the tests: `.ci/run` installs it; without it these tests fail
//! when `CI` is set and print a loud SKIPPED otherwise), an SMTP outage retried until the server
//! is back, SMS and WhatsApp requests received by a local HTTP receiver in the provider's shape,
//! `GET /notifications`, the settings' switches and webhook defaults, accepting an invitation,
//! and the metrics.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::{create_invoice, invoice_body};
use crate::common::TestServer;
use billing_server::notify::{NotifyConfig, SmsConfig, SmtpConfig, SmtpTls};
use hyper::Method;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// --- a real SMTP server --------------------------------------------------------------------------

/// An aiosmtpd server on 127.0.0.1 writing what it receives to a directory.
pub struct Sink {
    child: Child,
    dir: tempfile::TempDir,
    pub port: u16,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/server/smtp_sink.py")
}

/// Whether Python with aiosmtpd is here. Without it: a failure under CI, a loud SKIPPED
/// otherwise (`false`).
pub fn smtp_available(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import aiosmtpd"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{test}: python3 with aiosmtpd is needed (pip install aiosmtpd; .ci/run installs it)");
    }
    eprintln!("\n*** SKIPPED {test}: python3 with aiosmtpd is not installed (pip install aiosmtpd) ***\n");
    false
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Sink {
    pub fn start(port: u16, extra: &[&str]) -> Sink {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new("python3")
            .arg(script())
            .arg(dir.path())
            .arg(port.to_string())
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the SMTP sink");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "READY", "the SMTP sink did not start");
        Sink { child, dir, port }
    }

    pub fn messages(&self) -> Vec<Value> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        files
            .iter()
            .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
            .collect()
    }

    /// Waits (up to 20 s) for `n` messages.
    pub fn wait(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.messages();
            if got.len() >= n || Instant::now() > deadline {
                assert_eq!(got.len(), n, "messages received: {got:#?}");
                return got;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // Closing its input stops it.
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn smtp(port: u16) -> SmtpConfig {
    SmtpConfig {
        host: "127.0.0.1".into(),
        port: Some(port),
        tls: SmtpTls::None,
        username: None,
        password: None,
        from: "billing@example.com".into(),
        ca_file: None,
    }
}

fn server_sending(smtp: Option<SmtpConfig>, sms: Option<SmsConfig>) -> TestServer {
    TestServer::sqlite_with(|c| {
        c.notify = NotifyConfig {
            smtp,
            sms,
            timeout: Some(Duration::from_secs(5)),
            invite_url: None,
        }
    })
}

// --- helpers -------------------------------------------------------------------------------------

fn customer(srv: &TestServer, name: &str, email: Option<&str>, phone: Option<&str>, methods: &[&str], lang: &str) -> String {
    let mut body = json!({"name": name, "communication_methods": methods, "preferred_language": lang});
    if let Some(e) = email {
        body["email"] = json!(e);
    }
    if let Some(p) = phone {
        body["phone_number"] = json!(p);
    }
    id_of(&consumer(srv, body))
}

/// An invoice for the consumer, sent to it (`notify_consumer`); InvoiceDetailed.
fn send_invoice(srv: &TestServer, consumer: &str) -> Value {
    let p = id_of(&one_off_product(srv, "Membership", "115"));
    let mut body = invoice_body(consumer, &[(&p, 1)], &[]);
    body["notify_consumer"] = json!(true);
    create_invoice(srv, body)
}

fn list(srv: &TestServer, query: &str) -> Value {
    ok(srv.get(&format!("/api/v2/notifications?{query}")))
}

/// Waits (up to 20 s) until `GET /notifications?{query}` lists `n`.
fn wait_listed(srv: &TestServer, query: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = list(srv, query)["data"].as_array().unwrap().clone();
        if got.len() >= n || Instant::now() > deadline {
            assert_eq!(got.len(), n, "{query}: {got:#?}");
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn metric(srv: &TestServer, line_start: &str) -> u64 {
    let auth = format!("Bearer {}", crate::common::METRICS_TOKEN);
    let r = srv.raw(Method::GET, "/metrics", &[("authorization", &auth)], None);
    r.text
        .lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {line_start} in {}", r.text))
}

// --- e-mail ----------------------------------------------------------------------------------------

/// An invoice sent to an English and an Arabic consumer: each e-mail reaches the SMTP server
/// (with the configured credentials) addressed to the consumer, in its language (Arabic
/// right-to-left), as text and HTML with the invoice's pay link, from the organization's name;
/// the API shows them sent, and the metrics count them.
#[test]
fn email_arrives_in_the_consumers_language_with_the_link() {
    if !smtp_available("email_arrives_in_the_consumers_language_with_the_link") {
        return;
    }
    let sink = Sink::start(free_port(), &["--auth", "mailer:s3cret"]);
    let mut config = smtp(sink.port);
    config.username = Some("mailer".into());
    config.password = Some("s3cret".into());
    let srv = server_sending(Some(config), None);
    let before = metric(&srv, "billing_notification_attempts_total{channel=\"email\",result=\"sent\"}");
    let en = customer(&srv, "Sam Lee", Some("sam@example.com"), None, &["EMAIL"], "EN");
    let ar = customer(&srv, "سارة", Some("sara@example.com"), None, &["EMAIL"], "AR");
    let inv_en = send_invoice(&srv, &en);
    let inv_ar = send_invoice(&srv, &ar);
    let got = sink.wait(2);
    let to = |m: &Value| m["rcpt_tos"][0].as_str().unwrap().to_string();
    let m_en = got.iter().find(|m| to(m) == "sam@example.com").expect("the English e-mail");
    let m_ar = got.iter().find(|m| to(m) == "sara@example.com").expect("the Arabic e-mail");
    for (m, inv) in [(m_en, &inv_en), (m_ar, &inv_ar)] {
        let link = format!("http://127.0.0.1/pay/invoices/{}", inv["id"].as_str().unwrap());
        assert_eq!(m["rcpt_tos"].as_array().unwrap().len(), 1);
        assert_eq!(m["mail_from"], "billing@example.com");
        assert_eq!(
            (m["authenticated"].as_bool(), m["auth_user"].as_str()),
            (Some(true), Some("mailer")),
            "logged in with the configured credentials"
        );
        assert_eq!(m["content_type"], "multipart/alternative");
        assert!(
            m["from"].as_str().unwrap().contains("Test Org") && m["from"].as_str().unwrap().contains("billing@example.com"),
            "{m}"
        );
        assert!(m["text"].as_str().unwrap().contains(&link), "{m}");
        assert!(m["html"].as_str().unwrap().contains(&format!("href=\"{link}\"")), "{m}");
    }
    let n_en = inv_en["org_invoice_number"].as_i64().unwrap();
    assert_eq!(m_en["subject"], format!("Invoice {n_en} from Test Org"));
    assert!(m_en["text"].as_str().unwrap().starts_with("Hello Sam Lee,"));
    let n_ar = inv_ar["org_invoice_number"].as_i64().unwrap();
    assert_eq!(m_ar["subject"], format!("فاتورة رقم {n_ar} من Test Org"));
    assert!(m_ar["text"].as_str().unwrap().starts_with("مرحباً سارة،"));
    assert!(m_ar["html"].as_str().unwrap().contains("dir=\"rtl\"") && m_ar["html"].as_str().unwrap().contains("lang=\"ar\""));
    assert!(m_en["html"].as_str().unwrap().contains("dir=\"ltr\""));

    let sent = wait_listed(&srv, "status=sent", 2);
    for n in &sent {
        assert_eq!((n["kind"].as_str(), n["channel"].as_str()), (Some("INVOICE_SENT"), Some("EMAIL")));
        assert_eq!(n["attempt_count"], 1);
        assert!(n["attempts"][0]["provider_id"].as_str().unwrap().starts_with("250"), "{n}");
        assert!(n["sent_at"].is_string());
        let id = n["id"].as_str().unwrap();
        assert!(
            got.iter().any(|m| m["message_id"].as_str().unwrap().contains(id)),
            "Message-ID names the notification"
        );
    }
    let after = metric(&srv, "billing_notification_attempts_total{channel=\"email\",result=\"sent\"}");
    assert!(after >= before + 2, "{before} -> {after}");
    assert_eq!(sink.messages().len(), 2, "each sent once");
}

/// The SMTP server is down: the attempt fails and is scheduled again (one minute later, in
/// the organization's time); once the server is up, the next attempt delivers, and the log
/// shows both attempts.
#[test]
fn smtp_outage_is_retried_then_delivered() {
    if !smtp_available("smtp_outage_is_retried_then_delivered") {
        return;
    }
    let port = free_port();
    let srv = server_sending(Some(smtp(port)), None);
    let c = customer(&srv, "Sam Lee", Some("sam@example.com"), None, &["EMAIL"], "EN");
    let inv = send_invoice(&srv, &c);
    let retrying = wait_listed(&srv, "status=retrying", 1);
    let n = &retrying[0];
    assert_eq!(n["attempts"][0]["result"], "retry");
    assert!(n["attempts"][0]["error"].as_str().unwrap().starts_with("SMTP:"), "{n}");
    assert!(n["next_attempt_at"].is_string());
    // Nothing is sent again before its time.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(list(&srv, "status=retrying")["data"][0]["attempt_count"], 1);
    let sink = Sink::start(port, &[]);
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 120})));
    let got = sink.wait(1);
    assert_eq!(got[0]["rcpt_tos"], json!(["sam@example.com"]));
    assert!(got[0]["text"].as_str().unwrap().contains(inv["id"].as_str().unwrap()));
    let sent = wait_listed(&srv, "status=sent", 1);
    assert_eq!(sent[0]["attempt_count"], 2);
    assert_eq!(sent[0]["attempts"][1]["result"], "sent");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(sink.messages().len(), 1, "delivered once");
}

/// The real binary, configured by environment variables: an invitation e-mail reaches the SMTP
/// server with its accept link, and the link's token accepts the invitation through the API:
/// a bearer token for the new user, once. `--smtp-host` without a sender is one sentence.
#[test]
fn binary_sends_the_invitation_and_its_link_accepts_once() {
    if !smtp_available("binary_sends_the_invitation_and_its_link_accepts_once") {
        return;
    }
    let sink = Sink::start(free_port(), &[]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("n.db").display());
    let bin = env!("CARGO_BIN_EXE_billing-server");
    let init = Command::new(bin)
        .args(["init", "--json", "--database-url", &url])
        .env("BILLING_JWT_SECRET", "s")
        .output()
        .unwrap();
    let init: Value = serde_json::from_slice(&init.stdout).unwrap();
    let key = init["x_api_key"].as_str().unwrap().to_string();
    let branch = init["branch_id"].as_str().unwrap().to_string();

    let refused = Command::new(bin)
        .args(["--database-url", &url, "--smtp-host", "127.0.0.1"])
        .env("BILLING_JWT_SECRET", "s")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("--smtp-host needs --smtp-from"), "{err}");

    let mut cmd = Command::new(bin);
    cmd.args(["--database-url", &url])
        .env("BILLING_JWT_SECRET", "s")
        .env("BILLING_SMTP_HOST", "127.0.0.1")
        .env("BILLING_SMTP_PORT", sink.port.to_string())
        .env("BILLING_SMTP_TLS", "none")
        .env("BILLING_SMTP_FROM", "Acme Team <team@example.com>")
        .env("BILLING_INVITE_URL", "https://app.example.com/join")
        .env("BILLING_WORKER_POLL_MS", "50");
    let log = dir.path().join("server.log");
    let (child, addr) = crate::common::process::spawn_server(cmd, &log);
    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Kill(child);
    let base = format!("http://{addr}");
    let (status, r) = http(
        &base,
        "POST",
        "/api/v2/organization/invite",
        &[("x-api-key", &key), ("language", "EN")],
        Some(json!({"email": "nora@example.com", "role": "branch_user", "branches": [branch]})),
    );
    assert_eq!(status, 200, "{r}");
    let got = sink.wait(1);
    let m = &got[0];
    assert_eq!(m["rcpt_tos"], json!(["nora@example.com"]));
    assert_eq!(m["subject"], "You are invited to join My Organization");
    assert!(m["from"].as_str().unwrap().starts_with("Acme Team"), "{m}");
    let text = m["text"].as_str().unwrap();
    let link = text
        .split_whitespace()
        .find(|w| w.starts_with("https://app.example.com/join?token="))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(m["html"].as_str().unwrap().contains(link));
    let token = link.split_once("token=").unwrap().1;
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(!log_text.contains(token), "the token is not logged");

    let (status, r) = http(
        &base,
        "POST",
        "/api/v2/organization/invite/accept",
        &[],
        Some(json!({"token": token, "first_name": "Nora"})),
    );
    assert_eq!(status, 200, "{r}");
    assert_eq!((r["token_type"].as_str(), r["role"].as_str()), (Some("bearer"), Some("branch_user")));
    let bearer = format!("Bearer {}", r["access_token"].as_str().unwrap());
    let (status, me) = http(&base, "GET", "/api/v2/me", &[("authorization", &bearer)], None);
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["user"]["email"], "nora@example.com");
    assert_eq!(me["user"]["first_name"], "Nora");
    let (status, again) = http(&base, "POST", "/api/v2/organization/invite/accept", &[], Some(json!({"token": token})));
    assert_eq!((status, again["error"]["code"].as_str()), (410, Some("INVITATION_EXPIRED")), "{again}");
}

/// A small HTTP/1.1 exchange with the spawned server.
fn http(base: &str, method: &str, path: &str, headers: &[(&str, &str)], body: Option<Value>) -> (u16, Value) {
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(rest).unwrap_or(Value::Null))
}

// --- SMS and WhatsApp ------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Received {
    request_line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn form(&self, key: &str) -> Option<String> {
        self.body.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == key).then(|| decode(v))
        })
    }
}

fn decode(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

/// A local HTTP receiver standing in for the SMS provider: records each request, answers the
/// queued (status, body) pairs, then 201 with a message `sid`.
struct Provider {
    port: u16,
    got: Arc<Mutex<Vec<Received>>>,
    answers: Arc<Mutex<VecDeque<(u16, String)>>>,
}

impl Provider {
    fn start() -> Provider {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got: Arc<Mutex<Vec<Received>>> = Default::default();
        let answers: Arc<Mutex<VecDeque<(u16, String)>>> = Default::default();
        let (g, a) = (got.clone(), answers.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut raw = Vec::new();
                let mut buf = [0u8; 4096];
                let (head, body) = loop {
                    let n = s.read(&mut buf).unwrap_or(0);
                    if n == 0 {
                        break (String::new(), String::new());
                    }
                    raw.extend_from_slice(&buf[..n]);
                    if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&raw[..i]).into_owned();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                            .unwrap_or(0);
                        while raw.len() < i + 4 + len {
                            let n = s.read(&mut buf).unwrap_or(0);
                            if n == 0 {
                                break;
                            }
                            raw.extend_from_slice(&buf[..n]);
                        }
                        break (head, String::from_utf8_lossy(&raw[i + 4..]).into_owned());
                    }
                };
                let mut lines = head.lines();
                let request_line = lines.next().unwrap_or("").to_string();
                let headers = lines
                    .filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
                    .collect();
                let n = {
                    let mut got = g.lock().unwrap();
                    got.push(Received { request_line, headers, body });
                    got.len()
                };
                let (status, text) = a
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or_else(|| (201, json!({"sid": format!("SM{n:032}"), "status": "queued"}).to_string()));
                let _ = write!(
                    s,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        Provider { port, got, answers }
    }

    fn wait(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.got.lock().unwrap().clone();
            if got.len() >= n || Instant::now() > deadline {
                assert_eq!(got.len(), n, "{got:#?}");
                return got;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A consumer who wants SMS and WhatsApp: one form-encoded POST each to the provider's Messages
/// endpoint with HTTP basic auth, `whatsapp:` addresses for WhatsApp, the Arabic text with the
/// pay link; the provider's ids kept. A 400 answer fails the message at once; a 503 is retried.
#[test]
fn sms_and_whatsapp_reach_the_provider() {
    use base64::Engine;
    let provider = Provider::start();
    let sms = SmsConfig {
        base_url: format!("http://127.0.0.1:{}", provider.port),
        account: "AC0123".into(),
        token: "tok-secret".into(),
        sms_from: Some("+15005550006".into()),
        whatsapp_from: Some("+14155238886".into()),
    };
    let srv = server_sending(None, Some(sms));
    let phone = "+966551234567";
    let c = customer(&srv, "سارة", None, Some(phone), &["SMS", "WHATSAPP"], "AR");
    let inv = send_invoice(&srv, &c);
    let got = provider.wait(2);
    let link = format!("http://127.0.0.1/pay/invoices/{}", inv["id"].as_str().unwrap());
    let auth = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("AC0123:tok-secret"));
    for r in &got {
        assert_eq!(r.request_line, "POST /2010-04-01/Accounts/AC0123/Messages.json HTTP/1.1");
        assert_eq!(r.header("authorization"), Some(auth.as_str()));
        assert_eq!(r.header("content-type"), Some("application/x-www-form-urlencoded"));
        let body = r.form("Body").unwrap();
        assert!(body.contains(&link) && body.contains("فاتورة"), "{body}");
    }
    let by_to = |to: &str| {
        got.iter()
            .find(|r| r.form("To").as_deref() == Some(to))
            .unwrap_or_else(|| panic!("no message to {to}: {got:#?}"))
    };
    assert_eq!(by_to(phone).form("From").as_deref(), Some("+15005550006"));
    assert_eq!(by_to(&format!("whatsapp:{phone}")).form("From").as_deref(), Some("whatsapp:+14155238886"));
    let sent = wait_listed(&srv, "status=sent", 2);
    let channels: Vec<&str> = sent.iter().map(|n| n["channel"].as_str().unwrap()).collect();
    assert!(channels.contains(&"SMS") && channels.contains(&"WHATSAPP"), "{channels:?}");
    for n in &sent {
        assert!(n["attempts"][0]["provider_id"].as_str().unwrap().starts_with("SM"), "{n}");
        assert_eq!(n["recipient"], phone);
    }

    // A refusal: failed at once, with the provider's message. A 503: tried again later.
    provider.answers.lock().unwrap().extend([
        (400, json!({"code": 21211, "message": "Invalid 'To' Phone Number"}).to_string()),
        (503, "busy".to_string()),
    ]);
    let c2 = customer(&srv, "Sam", None, Some("+966551234568"), &["SMS"], "EN");
    send_invoice(&srv, &c2);
    let c3 = customer(&srv, "Kim", None, Some("+966551234569"), &["SMS"], "EN");
    send_invoice(&srv, &c3);
    let failed = wait_listed(&srv, "status=failed", 1);
    assert_eq!(failed[0]["attempts"][0]["error"], "the provider answered 400: Invalid 'To' Phone Number");
    let retrying = wait_listed(&srv, "status=retrying", 1);
    assert!(retrying[0]["attempts"][0]["error"].as_str().unwrap().starts_with("the provider answered 503"));
    assert!(metric(&srv, "billing_notification_attempts_total{channel=\"sms\",result=\"refused\"}") >= 1);
    assert!(metric(&srv, "billing_notification_attempts_total{channel=\"whatsapp\",result=\"sent\"}") >= 1);
}

// --- the API (no sender: notifications stay pending) -------------------------------------------------

/// `GET /notifications`: filters, paging, sorting, one by id, branch scoping; bad parameters are
/// 422s; an unknown id a 404.
fn notifications_are_listed_and_filtered(srv: &TestServer) {
    let a = customer(srv, "A", Some("a@example.com"), Some("+966551230001"), &["EMAIL", "SMS"], "EN");
    let b = customer(srv, "B", Some("b@example.com"), None, &["EMAIL"], "AR");
    send_invoice(srv, &a);
    send_invoice(srv, &b);
    let all = list(srv, "limit=100");
    assert_eq!(all["data"].as_array().unwrap().len(), 3, "{all}");
    assert_eq!(all["pagination"]["total_count"], 3);
    for n in all["data"].as_array().unwrap() {
        assert_eq!((n["status"].as_str(), n["kind"].as_str()), (Some("pending"), Some("INVOICE_SENT")));
        assert_eq!(n["attempts"], json!([]));
    }
    assert_eq!(list(srv, "channel=SMS")["data"].as_array().unwrap().len(), 1);
    assert_eq!(list(srv, "channels=sms,email&kinds=INVOICE_SENT")["data"].as_array().unwrap().len(), 3);
    assert_eq!(list(srv, &format!("consumer_id={b}"))["data"][0]["language"], "ar");
    assert_eq!(list(srv, "status=sent")["data"], json!([]));
    let page = list(srv, "limit=2&page=2&sort_field=created_at&sort_direction=asc");
    assert_eq!(page["data"][0]["consumer_id"], json!(b));
    assert_eq!(page["pagination"]["has_previous_page"], true);
    assert_eq!(list(srv, "created_from=2000-01-01&created_to=2000-01-02")["data"], json!([]));
    let id = all["data"][0]["id"].as_str().unwrap();
    let one = ok(srv.get(&format!("/api/v2/notifications/{id}")));
    assert_eq!(one["id"], id);
    assert!(one["subject"].is_string() && one["data"]["url"].is_string());
    assert_error(&srv.get(&format!("/api/v2/notifications/{}", uuid::Uuid::new_v4())), 404, "NOT_FOUND");
    assert_invalid(&srv.get("/api/v2/notifications/nope"), json!(["path", "notification_id"]), Some("uuid_parsing"));
    for (q, field) in [
        ("status=lost", "status"),
        ("channel=FAX", "channel"),
        ("kind=HELLO", "kind"),
        ("consumer_id=12", "consumer_id"),
        ("created_from=someday", "created_from"),
        ("sort_field=recipient", "sort_field"),
        ("limit=0", "limit"),
    ] {
        assert_invalid(&srv.get(&format!("/api/v2/notifications?{q}")), json!(["query", field]), None);
    }
    // Another branch sees none of them.
    let other = branch(srv, "Elsewhere");
    let r = ok(in_branch(srv, &other, Method::GET, "/api/v2/notifications", None));
    assert_eq!(r["data"], json!([]));
    let r = in_branch(srv, &other, Method::GET, &format!("/api/v2/notifications/{id}"), None);
    assert_error(&r, 404, "NOT_FOUND");
}

/// The settings' switches and webhook defaults: an admin switches invoice e-mails off (no
/// notification recorded, the invoice still SENT) and sets the event types new webhook endpoints
/// get; the master switch is support's (403 naming the command).
fn switches_and_webhook_defaults(srv: &TestServer) {
    let r = ok(srv.call(
        Method::PATCH,
        "/api/v2/organization/settings",
        Some(json!({"notifications": {"invoice_sent": false, "installment_reminder_days": 5}, "webhook_defaults": {"event_types": ["INVOICE_SENT", "PAYMENT_SUCCEEDED"]}})),
    ));
    assert_eq!(r["notifications"]["invoice_sent"], false);
    assert_eq!(r["notifications"]["payment_receipt"], true);
    assert_eq!(r["notifications"]["installment_reminder_days"], 5);
    assert_eq!(
        r["webhook_defaults"],
        json!({"event_types": ["INVOICE_SENT", "PAYMENT_SUCCEEDED"], "all_event_types": false})
    );
    assert_eq!(r["consumer_notifications"], true);
    let c = customer(srv, "A", Some("a@example.com"), None, &["EMAIL"], "EN");
    let inv = send_invoice(srv, &c);
    assert_eq!(inv["status"], "SENT");
    assert_eq!(list(srv, "limit=100")["data"], json!([]), "switched off: nothing recorded");
    // (Disabled: nothing is delivered meanwhile.)
    let hook = ok(srv.post("/api/v2/webhooks", json!({"url": "https://hooks.example.com/x", "enabled": false})));
    assert_eq!(hook["event_types"], json!(["INVOICE_SENT", "PAYMENT_SUCCEEDED"]));
    assert_eq!(hook["all_event_types"], false);
    let hook = ok(srv.post(
        "/api/v2/webhooks",
        json!({"url": "https://hooks.example.com/y", "event_types": "all", "enabled": false}),
    ));
    assert_eq!(hook["all_event_types"], true);
    let r = ok(srv.call(
        Method::PATCH,
        "/api/v2/organization/settings",
        Some(json!({"webhook_defaults": {"event_types": "all"}, "notifications": {"invoice_sent": true}})),
    ));
    assert_eq!(r["webhook_defaults"]["all_event_types"], true);
    send_invoice(srv, &c);
    assert_eq!(list(srv, "limit=100")["data"].as_array().unwrap().len(), 1);
    let r = srv.unchanged(|| srv.call(Method::PATCH, "/api/v2/organization/settings", Some(json!({"consumer_notifications": false}))));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    assert!(r.body["error"].to_string().contains("--consumer-notifications"), "{}", r.body);
}

/// Accepting an invitation through the API, without a credential: a bearer token that works,
/// once; a forged token is a 404, a missing one a 422, an expired one a 410; refusals write
/// nothing.
fn invitation_accept_endpoint(srv: &TestServer) {
    let inv = ok(srv.post(
        "/api/v2/organization/invite",
        json!({"email": "nora@example.com", "role": "branch_admin", "branches": [srv.branch_id()]}),
    ));
    let id: billing_core::ids::InvitationId = inv["id"].as_str().unwrap().parse().unwrap();
    let token = srv.app.billing.invite_token(id).unwrap();
    let accept = |body: Value| {
        srv.raw(
            Method::POST,
            "/api/v2/organization/invite/accept",
            &[("content-type", "application/json")],
            Some(body.to_string().into_bytes()),
        )
    };
    for (body, status, code) in [
        (json!({"token": format!("{}.AAAA", id.0.simple())}), 404, "NOT_FOUND"),
        (json!({"token": "x"}), 404, "NOT_FOUND"),
    ] {
        let r = srv.unchanged(|| accept(body.clone()));
        assert_error(&r, status, code);
    }
    let r = srv.unchanged(|| accept(json!({})));
    assert_invalid(&r, json!(["body", "token"]), Some("missing"));
    let r = srv.unchanged(|| accept(json!({"token": token, "first_name": ""})));
    assert_invalid(&r, json!(["body", "first_name"]), None);
    let r = accept(json!({"token": token, "first_name": "Nora", "last_name": "Saleh"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let bearer = r.body["access_token"].as_str().unwrap().to_string();
    let me = ok(call_bearer(srv, &bearer, None, Method::GET, "/api/v2/me", None));
    assert_eq!(
        (me["user"]["email"].as_str(), me["user"]["last_name"].as_str()),
        (Some("nora@example.com"), Some("Saleh"))
    );
    let r = srv.unchanged(|| accept(json!({"token": token})));
    assert_error(&r, 410, "INVITATION_EXPIRED");
    assert_eq!(srv.raw(Method::GET, "/api/v2/organization/invite/accept", &[], None).status, 405);
    // Expired after 7 days of the organization's time.
    let late = ok(srv.post(
        "/api/v2/organization/invite",
        json!({"email": "late@example.com", "role": "organization_admin", "branches": []}),
    ));
    let late_token = srv.app.billing.invite_token(late["id"].as_str().unwrap().parse().unwrap()).unwrap();
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 8 * 86400})));
    let r = srv.unchanged(|| accept(json!({"token": late_token})));
    assert_error(&r, 410, "INVITATION_EXPIRED");
}

http_tests!(notifications_are_listed_and_filtered, switches_and_webhook_defaults, invitation_accept_endpoint);
postgres_smoke!(notifications_are_listed_and_filtered, switches_and_webhook_defaults, invitation_accept_endpoint);

/// `org settings set --consumer-notifications off|on` (support) through the binary; a wrong
/// value is one sentence.
#[test]
fn cli_switches_consumer_notifications() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("c.db").display());
    let bin = env!("CARGO_BIN_EXE_billing-server");
    let run = |args: &[&str]| Command::new(bin).args(args).args(["--database-url", &url]).output().unwrap();
    assert!(run(&["init", "--json"]).status.success());
    let out = run(&["org", "settings", "set", "--consumer-notifications", "off", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["consumer_notifications"], false);
    let out = run(&["org", "settings", "show"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("consumer notifications    off"), "{text}");
    let out = run(&["org", "settings", "set", "--consumer-notifications", "maybe"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim(), "error: --consumer-notifications is on or off, not \"maybe\"");
    let out = run(&["org", "settings", "show", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["consumer_notifications"], false, "unchanged by the refused command");
}

/// STARTTLS (required) over rustls: delivered when the server's certificate chains to the CA
/// given with the SMTP CA file and names 127.0.0.1; without that CA the handshake fails, the
/// message is not sent in clear, and it is tried again later.
#[test]
fn starttls_is_verified_with_rustls() {
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType};
    if !smtp_available("starttls_is_verified_with_rustls") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::default();
    p.distinguished_name.push(DnType::CommonName, "test mail CA");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = p.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::default();
    p.distinguished_name.push(DnType::CommonName, "mail");
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    p.subject_alt_names = vec![SanType::IpAddress("127.0.0.1".parse().unwrap())];
    let cert = p.signed_by(&key, &ca, &ca_key).unwrap();
    let (cert_pem, key_pem, ca_pem) = (dir.path().join("cert.pem"), dir.path().join("key.pem"), dir.path().join("ca.pem"));
    std::fs::write(&cert_pem, format!("{}{}", cert.pem(), ca.pem())).unwrap();
    std::fs::write(&key_pem, key.serialize_pem()).unwrap();
    std::fs::write(&ca_pem, ca.pem()).unwrap();
    let sink = Sink::start(free_port(), &["--starttls", cert_pem.to_str().unwrap(), key_pem.to_str().unwrap()]);
    let mut trusted = smtp(sink.port);
    trusted.tls = SmtpTls::StartTls;
    trusted.ca_file = Some(ca_pem);
    let srv = server_sending(Some(trusted), None);
    let c = customer(&srv, "Sam", Some("sam@example.com"), None, &["EMAIL"], "EN");
    send_invoice(&srv, &c);
    let got = sink.wait(1);
    assert_eq!(got[0]["tls"], true, "sent over TLS");
    drop(srv);

    let mut untrusted = smtp(sink.port);
    untrusted.tls = SmtpTls::StartTls;
    let srv = server_sending(Some(untrusted), None);
    let c = customer(&srv, "Kim", Some("kim@example.com"), None, &["EMAIL"], "EN");
    send_invoice(&srv, &c);
    let n = wait_listed(&srv, "status=retrying", 1);
    assert!(
        n[0]["attempts"][0]["error"].as_str().unwrap().to_lowercase().contains("certificate"),
        "{}",
        n[0]
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(sink.messages().len(), 1, "nothing sent to a server that is not trusted");
}

/// The page the invitation links to by default: it names the organization and the role in the
/// invitation's language (Arabic right-to-left), posts its form (no script) to itself, and shows
/// the new user's bearer token once; the token works; a used link shows the 410 page, a bad one
/// the 404 page; a missing name shows the form again with the error, writing nothing.
#[test]
fn invitation_page_accepts_once() {
    let srv = TestServer::sqlite();
    let inv = ok(srv.call_as(
        &srv.key.clone(),
        None,
        Method::POST,
        "/api/v2/organization/invite",
        Some(json!({"email": "nora@example.com", "role": "branch_user", "branches": [srv.branch_id()]})),
    ));
    let id: billing_core::ids::InvitationId = inv["id"].as_str().unwrap().parse().unwrap();
    let link = srv.app.billing.invite_link(id).unwrap();
    assert!(link.starts_with("http://127.0.0.1/invite/accept?token="), "{link}");
    let token = link.split_once("token=").unwrap().1.to_string();
    let path = format!("/invite/accept?token={token}");
    let page = srv.raw(Method::GET, &path, &[], None);
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    assert_eq!(page.headers["cache-control"], "no-store");
    assert!(page.headers["content-security-policy"].to_str().unwrap().contains("form-action 'self'"));
    assert!(
        page.text.contains("dir=\"rtl\"") && page.text.contains("Test Org") && page.text.contains("مستخدم فرع"),
        "{}",
        page.text
    );
    assert!(page.text.contains("<form method=\"post\" action=\"/invite/accept\">"));
    assert!(page.text.contains(&format!("name=\"token\" value=\"{token}\"")));
    let en = srv.raw(Method::GET, &format!("{path}&language=en"), &[], None);
    assert!(en.text.contains("You are invited to join as branch user (nora@example.com)"), "{}", en.text);

    let post = |form: String| {
        srv.raw(
            Method::POST,
            "/invite/accept",
            &[("content-type", "application/x-www-form-urlencoded")],
            Some(form.into_bytes()),
        )
    };
    let again = srv.unchanged(|| post(format!("token={token}&language=en&first_name=&last_name=")));
    assert_eq!(again.status, 200);
    assert!(
        again.text.contains("form-error") && again.text.contains("Enter your first name."),
        "{}",
        again.text
    );
    let done = post(format!("token={token}&language=en&first_name=Nora&last_name=Saleh+Al+Harbi"));
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.headers["cache-control"], "no-store");
    assert!(done.text.contains("You have joined Test Org"), "{}", done.text);
    let bearer = done.text.split("<code>").nth(1).unwrap().split("</code>").next().unwrap().to_string();
    let me = ok(call_bearer(&srv, &bearer, None, Method::GET, "/api/v2/me", None));
    assert_eq!(
        (me["user"]["email"].as_str(), me["user"]["last_name"].as_str()),
        (Some("nora@example.com"), Some("Saleh Al Harbi"))
    );
    let used = srv.unchanged(|| post(format!("token={token}&language=en&first_name=Nora")));
    assert_eq!(used.status, 410, "{}", used.text);
    assert!(used.text.contains("expired or was already used"));
    assert_eq!(srv.raw(Method::GET, &path, &[], None).status, 410);
    let bad = srv.raw(Method::GET, "/invite/accept?token=nope", &[], None);
    assert_eq!(bad.status, 404);
    assert!(bad.text.contains("رابط الدعوة هذا غير صالح"), "{}", bad.text);
}
