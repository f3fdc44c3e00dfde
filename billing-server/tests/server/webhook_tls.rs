//! Webhook deliveries to `https://` endpoints: real TLS receivers on 127.0.0.1 whose
//! certificates are made at test time by a test CA. A receiver whose certificate chains to a CA
//! of `webhook_ca_file` gets the signed delivery; an untrusted certificate, or one for another
//! host, fails the handshake before any request is sent, and the attempt is logged as an error
//! without a response status. A CA file that is not PEM stops the server from starting.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::simple_invoice;
use crate::common::raw_http::{read_request, Received};
use crate::common::TestServer;
use billing_core::store::Store;
use billing_core::webhook::verify;
use billing_server::{App, Config};
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// --- certificates --------------------------------------------------------------------------------

/// A certificate authority made for one test (rcgen, ECDSA P-256).
struct Ca {
    key: KeyPair,
    cert: rcgen::Certificate,
}

/// A subject alternative name of a server certificate.
enum San {
    Ip(&'static str),
    Dns(&'static str),
}

impl Ca {
    fn new(cn: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::default();
        p.distinguished_name.push(DnType::CommonName, cn);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = p.self_signed(&key).unwrap();
        Ca { key, cert }
    }

    /// A server certificate for `sans`, signed by this CA: its key and certificate (DER).
    fn issue(&self, sans: &[San]) -> (PrivateKeyDer<'static>, CertificateDer<'static>) {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::default();
        p.distinguished_name.push(DnType::CommonName, "webhook receiver");
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        p.use_authority_key_identifier_extension = true;
        p.subject_alt_names = sans
            .iter()
            .map(|s| match s {
                San::Ip(ip) => SanType::IpAddress(ip.parse().unwrap()),
                San::Dns(dns) => SanType::DnsName((*dns).try_into().unwrap()),
            })
            .collect();
        let cert = p.signed_by(&key, &self.cert, &self.key).unwrap();
        (PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())), cert.der().clone())
    }

    fn pem(&self) -> String {
        self.cert.pem()
    }

    /// Writes the CA certificate as PEM into `dir`.
    fn write_pem(&self, dir: &Path, file: &str) -> PathBuf {
        let path = dir.join(file);
        std::fs::write(&path, self.pem()).unwrap();
        path
    }
}

// --- a TLS receiver ------------------------------------------------------------------------------

#[derive(Default)]
struct State {
    got: Vec<Received>,
    /// Connections whose TLS handshake failed, with the server side's error.
    failed_handshakes: Vec<String>,
    /// Status answered per path (default 200).
    status: HashMap<String, u16>,
}

/// An HTTPS server on 127.0.0.1 that presents `cert` (its CA's certificate as the chain) and
/// records one request per connection.
struct TlsReceiver {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl TlsReceiver {
    fn start(ca: &Ca, sans: &[San]) -> TlsReceiver {
        let (key, cert) = ca.issue(sans);
        let config = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert, ca.cert.der().clone()], key)
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (st, config) = (st.clone(), config.clone());
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut stream = stream;
                    let mut conn = ServerConnection::new(config).unwrap();
                    while conn.is_handshaking() {
                        if let Err(e) = conn.complete_io(&mut stream) {
                            st.lock().unwrap().failed_handshakes.push(e.to_string());
                            return;
                        }
                    }
                    let mut tls = StreamOwned::new(conn, stream);
                    let Some(r) = read_request(&mut tls) else { return };
                    let status = {
                        let mut s = st.lock().unwrap();
                        let status = s.status.get(&r.path).copied().unwrap_or(200);
                        s.got.push(r);
                        status
                    };
                    let body = format!("{{\"answer\":{status}}}");
                    let _ = write!(tls, "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                    tls.conn.send_close_notify();
                    let _ = tls.flush();
                });
            }
        });
        TlsReceiver { port, state }
    }

    fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.port)
    }
    fn set_status(&self, path: &str, status: u16) {
        self.state.lock().unwrap().status.insert(path.to_string(), status);
    }
    fn got(&self) -> Vec<Received> {
        self.state.lock().unwrap().got.clone()
    }
    fn failed_handshakes(&self) -> Vec<String> {
        self.state.lock().unwrap().failed_handshakes.clone()
    }
}

/// Polls `f` until it returns `Some`, for at most 20 seconds.
#[track_caller]
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// --- helpers -------------------------------------------------------------------------------------

const HOOKS: &str = "/api/v2/webhooks";

/// Gives the test server the webhook transport that `App::open` builds from a configuration
/// with `webhook_ca_file: ca_file` (the test server itself starts without one).
fn use_ca_file(srv: &TestServer, ca_file: Option<&Path>) {
    let config = Config {
        worker: false,
        webhook_ca_file: ca_file.map(Path::to_path_buf),
        webhook_allow_private: true,
        ..Config::new("sqlite::memory:")
    };
    let app = App::open(config).expect("open with the CA file");
    srv.app
        .billing
        .engine()
        .set_webhook_transport(app.billing.engine().webhook_transport().expect("a transport"));
}

fn hook(srv: &TestServer, url: &str) -> (String, String) {
    let h = ok(srv.post(HOOKS, json!({"url": url, "event_types": ["INVOICE_CREATED"]})));
    (id_of(&h), h["secret_key"].as_str().unwrap().to_string())
}

/// The endpoint's only delivery, once it has `attempts` attempts.
#[track_caller]
fn delivery_after(srv: &TestServer, hook: &str, attempts: u64) -> Value {
    eventually(&format!("attempt {attempts} of {hook}'s delivery"), || {
        let r = ok(srv.get(&format!("{HOOKS}/{hook}/deliveries")));
        let d = r["data"].as_array().unwrap();
        assert!(d.len() <= 1, "one delivery expected: {r}");
        d.first().filter(|d| d["attempt_count"] == json!(attempts)).cloned()
    })
}

/// Asserts that attempt `i` of `d` failed in the TLS handshake on its certificate, with no
/// response, and that the delivery waits for its next try.
#[track_caller]
fn assert_refused_certificate(d: &Value, i: usize, reason: &str) {
    assert_eq!(d["status"], json!("retrying"), "{d}");
    assert!(d["next_attempt_at"].is_string(), "{d}");
    let a = &d["attempts"][i];
    assert_eq!(a["response_status"], Value::Null, "{d}");
    let error = a["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("TLS handshake with ") && error.contains("failed: certificate verify failed"),
        "{error}"
    );
    assert!(error.to_ascii_lowercase().contains(reason), "expected {reason:?} in {error:?}");
}

// --- tests ---------------------------------------------------------------------------------------

/// A receiver whose certificate (for IP 127.0.0.1) is signed by the configured CA gets the
/// delivery over TLS, headers and signature as over plain HTTP, and its status is logged.
fn trusted_certificate_receives_signed_delivery(srv: &TestServer) {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("Webhook Test CA");
    use_ca_file(srv, Some(&ca.write_pem(dir.path(), "ca.pem")));
    let rx = TlsReceiver::start(&ca, &[San::Ip("127.0.0.1")]);
    rx.set_status("/busy", 503);
    let (ok_hook, secret) = hook(srv, &rx.url("127.0.0.1", "/tls/hook?src=test"));
    let (busy_hook, _) = hook(srv, &rx.url("127.0.0.1", "/busy"));
    let inv = simple_invoice(srv, "115.00");

    let d = delivery_after(srv, &ok_hook, 1);
    let got = rx.got();
    let r = got.iter().find(|r| r.path == "/tls/hook?src=test").expect("the request arrived");
    assert_eq!(r.h("Host"), format!("127.0.0.1:{}", rx.port));
    assert_eq!(r.h("Content-Type"), "application/json");
    assert_eq!(r.h("User-Agent"), "Billing-Webhook/1.0");
    assert_eq!(r.h("X-Webhook-Event"), "INVOICE_CREATED");
    assert_eq!(r.h("X-Webhook-Entity-Type"), "INVOICE");
    assert_eq!(r.h("X-Webhook-Entity-ID"), id_of(&inv));
    assert_eq!(r.h("X-Webhook-Delivery-ID"), d["id"].as_str().unwrap());
    let ts: i64 = r.h("X-Webhook-Timestamp").parse().unwrap();
    assert_eq!(verify(Some(r.h("X-Webhook-Signature")), &r.body, &secret, 300), Ok(ts));
    assert!(verify(Some(r.h("X-Webhook-Signature")), &r.body, "whsec_other", 300).is_err());
    // The body is the stored event's payload, byte for byte.
    let events = srv.app.billing.engine().store.read(|tx| Ok(tx.list_events(srv.boot.org.id)?)).unwrap();
    let ev = events.iter().find(|e| e.event_type.as_str() == "INVOICE_CREATED").unwrap();
    assert_eq!(r.body, serde_json::to_vec(&ev.payload).unwrap());
    assert_eq!(r.h("Content-Length"), r.body.len().to_string());

    assert_eq!((d["status"].clone(), d["next_attempt_at"].clone()), (json!("delivered"), Value::Null), "{d}");
    let a = &d["attempts"][0];
    assert_eq!(
        (a["response_status"].clone(), a["response_body"].clone(), a["error"].clone()),
        (json!(200), json!("{\"answer\":200}"), Value::Null),
        "{d}"
    );
    // A non-2xx answer over TLS is read and logged like one over plain HTTP.
    let busy = delivery_after(srv, &busy_hook, 1);
    assert_eq!(busy["status"], json!("retrying"), "{busy}");
    assert_eq!(busy["attempts"][0]["response_status"], json!(503), "{busy}");
    assert_eq!(busy["attempts"][0]["response_body"], json!("{\"answer\":503}"), "{busy}");
    assert_eq!(rx.got().len(), 2);
    assert_eq!(rx.failed_handshakes(), Vec::<String>::new());
}

/// Without the CA (none configured, then another CA configured) the handshake fails: the
/// receiver gets no request and the attempt is an error without a response status. Once the
/// right CA is configured, a manual retry delivers.
fn untrusted_certificate_is_refused(srv: &TestServer) {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("Webhook Test CA");
    let rx = TlsReceiver::start(&ca, &[San::Ip("127.0.0.1")]);
    // The test server's own transport: system CAs only.
    let (h, _) = hook(srv, &rx.url("127.0.0.1", "/untrusted"));
    simple_invoice(srv, "10.00");
    let d = delivery_after(srv, &h, 1);
    assert_refused_certificate(&d, 0, "certificate");
    eventually("the receiver's failed handshake", || (!rx.failed_handshakes().is_empty()).then_some(()));
    assert!(rx.got().is_empty(), "no request may reach an untrusted receiver");

    // Another CA's certificate in the CA file does not help.
    use_ca_file(srv, Some(&Ca::new("Another CA").write_pem(dir.path(), "other.pem")));
    let did = d["id"].as_str().unwrap().to_string();
    let r = ok(srv.post(&format!("{HOOKS}/deliveries/{did}/retry"), json!({})));
    assert_eq!(r["attempt_count"], json!(2), "{r}");
    assert_refused_certificate(&r, 1, "certificate");
    eventually("two failed handshakes", || (rx.failed_handshakes().len() >= 2).then_some(()));
    assert!(rx.got().is_empty(), "no request may reach an untrusted receiver");

    // With the receiver's CA the same delivery goes through.
    use_ca_file(srv, Some(&ca.write_pem(dir.path(), "ca.pem")));
    let r = ok(srv.post(&format!("{HOOKS}/deliveries/{did}/retry"), json!({})));
    assert_eq!((r["status"].clone(), r["attempt_count"].clone()), (json!("delivered"), json!(3)), "{r}");
    assert_eq!(r["attempts"][2]["response_status"], json!(200), "{r}");
    assert_eq!(rx.got().len(), 1);
    assert_eq!(rx.got()[0].h("X-Webhook-Delivery-ID"), did);
}

/// A certificate from the trusted CA that names another host is refused, for an IP address and
/// for a host name; one that names the URL's host name is accepted.
fn certificate_for_another_host_is_refused(srv: &TestServer) {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("Webhook Test CA");
    use_ca_file(srv, Some(&ca.write_pem(dir.path(), "ca.pem")));
    let other = TlsReceiver::start(&ca, &[San::Dns("other.example")]);
    let local = TlsReceiver::start(&ca, &[San::Dns("localhost")]);
    let (by_ip, _) = hook(srv, &other.url("127.0.0.1", "/by-ip"));
    let (by_name, _) = hook(srv, &other.url("localhost", "/by-name"));
    let (right, secret) = hook(srv, &local.url("localhost", "/right"));
    simple_invoice(srv, "10.00");

    assert_refused_certificate(&delivery_after(srv, &by_ip, 1), 0, "ip address mismatch");
    assert_refused_certificate(&delivery_after(srv, &by_name, 1), 0, "hostname mismatch");
    eventually("two failed handshakes", || (other.failed_handshakes().len() >= 2).then_some(()));
    assert!(other.got().is_empty(), "no request may reach a receiver with another host's certificate");

    let d = delivery_after(srv, &right, 1);
    assert_eq!(d["status"], json!("delivered"), "{d}");
    assert_eq!(d["attempts"][0]["response_status"], json!(200), "{d}");
    let got = local.got();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].h("Host"), format!("localhost:{}", local.port));
    assert!(verify(Some(got[0].h("X-Webhook-Signature")), &got[0].body, &secret, 300).is_ok());
}

http_tests!(
    trusted_certificate_receives_signed_delivery,
    untrusted_certificate_is_refused,
    certificate_for_another_host_is_refused,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(trusted_certificate_receives_signed_delivery,);

// --- configuration -------------------------------------------------------------------------------

fn config(database_url: String, ca_file: Option<PathBuf>) -> Config {
    Config {
        jwt_secret: crate::common::JWT_SECRET.into(),
        public_url: "http://127.0.0.1".into(),
        worker: false,
        webhook_ca_file: ca_file,
        webhook_allow_private: true,
        ..Config::new(database_url)
    }
}

/// A CA file that cannot be read or holds no certificate fails `App::open` with an error that
/// names it, before the database is created; a PEM file of CA certificates is accepted.
#[test]
fn bad_ca_file_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("billing.db");
    let url = format!("sqlite://{}", db.display());

    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "this is not a certificate\n").unwrap();
    let e = App::open(config(url.clone(), Some(junk.clone())))
        .err()
        .expect("a CA file without a certificate is refused");
    let msg = e.to_string();
    assert!(msg.contains(&junk.display().to_string()) && msg.contains("holds no PEM certificate"), "{msg}");

    let broken = dir.path().join("broken.pem");
    std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").unwrap();
    let msg = App::open(config(url.clone(), Some(broken)))
        .err()
        .expect("a broken certificate is refused")
        .to_string();
    assert!(msg.contains("is not valid PEM"), "{msg}");

    let missing = dir.path().join("missing.pem");
    let msg = App::open(config(url.clone(), Some(missing)))
        .err()
        .expect("a missing file is refused")
        .to_string();
    assert!(msg.contains("cannot read the webhook CA file") && msg.contains("missing.pem"), "{msg}");
    assert!(!db.exists(), "the database is not touched when the configuration is refused");

    // Two CAs in one file, as a bundle.
    let bundle = dir.path().join("bundle.pem");
    let mut pem = Ca::new("First CA").pem();
    pem.push_str(&Ca::new("Second CA").pem());
    std::fs::write(&bundle, pem).unwrap();
    App::open(config(url, Some(bundle))).expect("a PEM bundle of CA certificates is accepted");
}

/// `--webhook-ca-file` and `BILLING_WEBHOOK_CA_FILE` reach the configuration: the binary refuses
/// to start with a file that is not PEM, and says why.
#[test]
fn the_flag_and_its_variable_are_used() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not PEM").unwrap();
    let url = format!("sqlite://{}", dir.path().join("cli.db").display());
    let bin = env!("CARGO_BIN_EXE_billing-server");
    let mut by_flag = std::process::Command::new(bin);
    by_flag
        .args(["--listen", "127.0.0.1:0", "--create", "--database-url", &url, "--webhook-ca-file"])
        .arg(&junk);
    let mut by_env = std::process::Command::new(bin);
    by_env
        .args(["--listen", "127.0.0.1:0", "--create", "--database-url", &url])
        .env("BILLING_WEBHOOK_CA_FILE", &junk);
    for mut cmd in [by_flag, by_env] {
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server started despite the bad CA file");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        assert!(!status.success(), "{stderr}");
        assert!(stderr.contains("webhook CA file") && stderr.contains("junk.pem"), "{stderr}");
    }
}
