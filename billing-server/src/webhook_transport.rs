//! A small blocking HTTP/1.1 client for webhook requests, over `std::net`: one connection per
//! request (`Connection: close`), a deadline over connecting, the TLS handshake, sending and
//! reading, and only the first bytes of the response body kept. `https://` endpoints are
//! reached over TLS (rustls, no system OpenSSL): the server's certificate must chain to the
//! system's trusted CAs or to the extra CAs the transport was given, and must name the URL's
//! host.

use billing_core::webhook::destination::is_public_ip;
use billing_core::webhook::{Outcome, WebhookTransport};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{CertificateError, ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most response bytes read (the log keeps an excerpt).
const MAX_RESPONSE: usize = 64 * 1024;

#[derive(Clone)]
pub struct HttpTransport {
    pub timeout: Duration,
    /// See [`WebhookTransport::lease_margin`].
    pub lease_margin: Duration,
    /// Whether loopback, private and other non-public addresses may be connected to
    /// (development and tests); off by default.
    pub allow_private: bool,
    /// Built once (the trusted CAs are read at start-up); clones share it.
    tls: Arc<ClientConfig>,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("timeout", &self.timeout)
            .field("lease_margin", &self.lease_margin)
            .field("allow_private", &self.allow_private)
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// A transport that trusts the system's CA certificates for `https://` endpoints.
    pub fn new(timeout: Duration) -> Self {
        Self::with_extra_cas(timeout, Vec::new()).expect("a TLS client configuration")
    }

    /// A transport that trusts, besides the system's CAs, the certificates of the PEM file at
    /// `ca_file` (when given). An unreadable file, or one without a valid PEM certificate, is
    /// an error.
    pub fn with_ca_file(timeout: Duration, ca_file: Option<&Path>) -> Result<Self, String> {
        let Some(path) = ca_file else {
            return Self::with_extra_cas(timeout, Vec::new()).map_err(|e| format!("cannot set up TLS: {e}"));
        };
        let pem = std::fs::read(path).map_err(|e| format!("cannot read the webhook CA file {}: {e}", path.display()))?;
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("the webhook CA file {} is not valid PEM: {e:?}", path.display()))?;
        if certs.is_empty() {
            return Err(format!("the webhook CA file {} holds no PEM certificate", path.display()));
        }
        Self::with_extra_cas(timeout, certs).map_err(|e| format!("the webhook CA file {} is not valid PEM: {e}", path.display()))
    }

    /// A transport that trusts the system's CAs and `extra_cas` (DER); an extra CA that is not
    /// a usable certificate is an error.
    pub fn with_extra_cas(timeout: Duration, extra_cas: Vec<CertificateDer<'static>>) -> Result<Self, rustls::Error> {
        let mut roots = RootCertStore::empty();
        // The system's store, as OpenSSL would find it (SSL_CERT_FILE, SSL_CERT_DIR, the
        // distribution's bundle); certificates it cannot parse are skipped, as OpenSSL does.
        let system = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(system.certs);
        for cert in extra_cas {
            roots.add(cert)?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(HttpTransport {
            timeout,
            lease_margin: Duration::from_secs(30),
            allow_private: false,
            tls: Arc::new(config),
        })
    }
}

impl HttpTransport {
    /// One POST with this transport's TLS and address rules, not counted as a webhook attempt:
    /// the notification provider's requests ([`crate::notify`]). The status and body, or why no
    /// answer came.
    pub fn post_plain(&self, url: &str, headers: &[(String, String)], body: &[u8], timeout: Duration) -> Result<(u16, String), String> {
        send(&self.tls, self.allow_private, url, headers, body, timeout)
    }
}

struct Target {
    tls: bool,
    host: String,
    port: u16,
    path: String,
    host_header: String,
}

fn parse(url: &str) -> Result<Target, String> {
    let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else {
        (false, url.strip_prefix("http://").ok_or("not an http or https URL")?)
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    let path = path.split('#').next().unwrap_or("/").to_string();
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if let Some(h) = authority.strip_prefix('[') {
        let (h, p) = h.split_once(']').ok_or("malformed host")?;
        (
            h.to_string(),
            p.strip_prefix(':').map(|p| p.parse::<u16>()).transpose().map_err(|_| "bad port")?,
        )
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.parse::<u16>().map_err(|_| "bad port")?)),
            None => (authority.to_string(), None),
        }
    };
    Ok(Target {
        tls,
        host_header: authority.to_string(),
        host,
        port: port.unwrap_or(if tls { 443 } else { 80 }),
        path,
    })
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&data[..eol]).split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        data = &data[eol + 2..];
        if size == 0 {
            break;
        }
        let take = size.min(data.len());
        out.extend_from_slice(&data[..take]);
        data = data.get(take + 2..).unwrap_or_default();
    }
    out
}

/// A TCP connection that holds every read and write (those of a TLS handshake too) to one
/// deadline: each sets the socket's time-out to the time left, and none starts after it.
struct DeadlineStream {
    tcp: TcpStream,
    deadline: Instant,
}

impl DeadlineStream {
    fn left(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the deadline passed"));
        }
        Ok(left)
    }
}

impl Read for DeadlineStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.tcp.set_read_timeout(Some(self.left()?))?;
        self.tcp.read(buf)
    }
}

impl Write for DeadlineStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tcp.set_write_timeout(Some(self.left()?))?;
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

fn send(
    tls: &Arc<ClientConfig>,
    allow_private: bool,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
) -> Result<(u16, String), String> {
    let deadline = Instant::now() + timeout;
    let timed_out = || format!("timed out after {} ms", timeout.as_millis());
    let t = parse(url)?;
    let addrs: Vec<_> = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", t.host))?
        .collect();
    // The resolved addresses are checked, not the name: a name that resolves (or is rebound)
    // to an internal address is not connected to.
    let (addrs, internal): (Vec<_>, Vec<_>) = addrs.into_iter().partition(|a| allow_private || is_public_ip(a.ip()));
    if addrs.is_empty() && !internal.is_empty() {
        return Err(format!("not sent: {} resolves to a non-public address ({})", t.host, internal[0].ip()));
    }
    let mut last = String::from("no address");
    let mut tcp = None;
    for a in addrs {
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        match TcpStream::connect_timeout(&a, left) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last = format!("connection to {a} failed: {e}"),
        }
    }
    let tcp = tcp.ok_or(last)?;
    let _ = tcp.set_nodelay(true);
    let stream = DeadlineStream { tcp, deadline };
    let mut req = format!("POST {} HTTP/1.1\r\nHost: {}\r\n", t.path, t.host_header);
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
    let mut request = req.into_bytes();
    request.extend_from_slice(body);
    if !t.tls {
        return exchange(stream, &request, timed_out);
    }
    let name = ServerName::try_from(t.host.clone()).map_err(|e| format!("TLS setup for {} failed: {e}", t.host))?;
    let mut conn = ClientConnection::new(tls.clone(), name).map_err(|e| format!("TLS setup for {} failed: {e}", t.host))?;
    let mut stream = stream;
    // The handshake completes before any request byte is sent: an untrusted receiver gets
    // nothing.
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut stream) {
            return Err(handshake_error(&t.host, e, timed_out));
        }
    }
    exchange(StreamOwned::new(conn, stream), &request, timed_out)
}

/// The attempt error of a failed TLS handshake: a time-out, a certificate the transport does
/// not trust (or that names another host), or another failure.
fn handshake_error(host: &str, e: io::Error, timed_out: impl Fn() -> String) -> String {
    if is_timeout(&e) {
        return format!("TLS handshake with {host} {}", timed_out());
    }
    let tls = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match tls {
        Some(rustls::Error::InvalidCertificate(c)) => {
            let why = match c {
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                    if host.parse::<std::net::IpAddr>().is_ok() {
                        "IP address mismatch".to_string()
                    } else {
                        "hostname mismatch".to_string()
                    }
                }
                CertificateError::UnknownIssuer => "unable to get local issuer certificate (unknown issuer)".to_string(),
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => "certificate has expired".to_string(),
                other => format!("{other:?}"),
            };
            format!("TLS handshake with {host} failed: certificate verify failed: {why}")
        }
        Some(other) => format!("TLS handshake with {host} failed: {other}"),
        None => format!("TLS handshake with {host} failed: {e}"),
    }
}

/// Sends `request` and reads the response, over a plain or a TLS connection.
fn exchange(mut stream: impl Read + Write, request: &[u8], timed_out: impl Fn() -> String) -> Result<(u16, String), String> {
    stream.write_all(request).map_err(|e| format!("sending failed: {e}"))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if raw.len() > MAX_RESPONSE {
                    break;
                }
                // Stop once a Content-Length body is complete (the receiver may keep the
                // connection open despite `Connection: close`).
                if let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:").and_then(|v| v.trim().parse::<usize>().ok()));
                    if len.is_some_and(|len| raw.len() >= split + 4 + len) {
                        break;
                    }
                }
            }
            Err(e) if is_timeout(&e) => return Err(timed_out()),
            Err(e) if raw.is_empty() => return Err(format!("reading the response failed: {e}")),
            Err(_) => break,
        }
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("the response ended before its headers")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("malformed status line: {}", head.lines().next().unwrap_or("")))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked { dechunk(&raw[split + 4..]) } else { raw[split + 4..].to_vec() };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

impl WebhookTransport for HttpTransport {
    fn post(&self, url: &str, headers: &[(String, String)], body: &[u8], timeout: Duration) -> Outcome {
        let started = Instant::now();
        let r = send(&self.tls, self.allow_private, url, headers, body, timeout);
        let duration = started.elapsed();
        crate::metrics::count_webhook_attempt(r.as_ref().ok().map(|(status, _)| *status));
        match r {
            Ok((status, body)) => Outcome {
                status: Some(status),
                body,
                error: None,
                duration,
            },
            Err(e) => Outcome {
                status: None,
                body: String::new(),
                error: Some(e),
                duration,
            },
        }
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn lease_margin(&self) -> Duration {
        self.lease_margin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport that may reach the tests' receivers on 127.0.0.1.
    fn local(timeout: Duration) -> HttpTransport {
        HttpTransport {
            allow_private: true,
            ..HttpTransport::new(timeout)
        }
    }

    /// Without `allow_private`, a loopback address is not connected to, however the URL
    /// spells it: the check is on the resolved address.
    #[test]
    fn internal_addresses_are_not_connected_to() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        for url in [
            format!("http://127.0.0.1:{port}/h"),
            format!("http://localhost:{port}/h"),
            format!("http://2130706433:{port}/h"),
        ] {
            let o = HttpTransport::new(Duration::from_secs(2)).post(&url, &[], b"{}", Duration::from_secs(2));
            assert_eq!(o.status, None, "{url}");
            assert!(o.error.as_deref().is_some_and(|e| e.contains("non-public address")), "{url}: {o:?}");
        }
        assert!(listener.accept().is_err(), "no connection was made");
    }

    #[test]
    fn parses_urls() {
        let t = parse("http://127.0.0.1:8081/hooks/a?x=1").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str(), t.host_header.as_str()),
            ("127.0.0.1", 8081, "/hooks/a?x=1", "127.0.0.1:8081")
        );
        let t = parse("http://example.com").unwrap();
        assert_eq!((t.port, t.path.as_str()), (80, "/"));
        let t = parse("http://[::1]:9/").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9));
        let t = parse("https://example.com/hooks").unwrap();
        assert_eq!(
            (t.tls, t.host.as_str(), t.port, t.path.as_str(), t.host_header.as_str()),
            (true, "example.com", 443, "/hooks", "example.com")
        );
        let t = parse("https://[::1]:8443?a=b").unwrap();
        assert_eq!((t.tls, t.host.as_str(), t.port, t.path.as_str()), (true, "::1", 8443, "/?a=b"));
        assert!(!parse("http://example.com").unwrap().tls);
        assert!(parse("ftp://example.com/").is_err());
        assert!(parse("https://example.com:x/").is_err());
    }

    #[test]
    fn ca_file_must_hold_pem_certificates() {
        let dir = std::env::temp_dir().join(format!("transport-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let e = HttpTransport::with_ca_file(Duration::from_secs(1), Some(&missing)).unwrap_err();
        assert!(e.contains("cannot read the webhook CA file") && e.contains("missing.pem"), "{e}");
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let e = HttpTransport::with_ca_file(Duration::from_secs(1), Some(&junk)).unwrap_err();
        assert!(e.contains("holds no PEM certificate"), "{e}");
        let broken = dir.join("broken.pem");
        std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n").unwrap();
        let e = HttpTransport::with_ca_file(Duration::from_secs(1), Some(&broken)).unwrap_err();
        assert!(e.contains("is not valid PEM"), "{e}");
        assert!(HttpTransport::with_ca_file(Duration::from_secs(1), None).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn plain_http_answer_to_https_is_a_tls_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}/x", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        });
        let o = local(Duration::from_secs(5)).post(&url, &[], b"{}", Duration::from_secs(5));
        assert_eq!(o.status, None);
        assert!(
            o.error.as_deref().is_some_and(|e| e.starts_with("TLS handshake with 127.0.0.1 failed")),
            "{o:?}"
        );
        server.join().unwrap();
    }

    #[test]
    fn silent_tls_server_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}/slow", listener.local_addr().unwrap());
        let hold = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(800));
            drop(s);
        });
        let o = local(Duration::from_millis(200)).post(&url, &[], b"{}", Duration::from_millis(200));
        assert_eq!(o.status, None);
        assert!(
            o.error.as_deref().is_some_and(|e| e.contains("TLS handshake") && e.contains("timed out")),
            "{o:?}"
        );
        assert!(o.duration < Duration::from_millis(700), "{o:?}");
        hold.join().unwrap();
    }

    #[test]
    fn slow_receiver_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/slow", listener.local_addr().unwrap());
        let hold = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(800));
            drop(s);
        });
        let o = local(Duration::from_millis(200)).post(&url, &[], b"{}", Duration::from_millis(200));
        assert_eq!(o.status, None);
        assert!(o.error.as_deref().is_some_and(|e| e.contains("timed out")), "{o:?}");
        assert!(o.duration < Duration::from_millis(700), "{o:?}");
        hold.join().unwrap();
    }

    #[test]
    fn reads_status_and_body() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/x", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).unwrap();
            s.write_all(b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
                .unwrap();
        });
        let o = local(Duration::from_secs(5)).post(&url, &[("X-A".into(), "1".into())], b"{}", Duration::from_secs(5));
        assert_eq!((o.status, o.body.as_str(), o.error.clone()), (Some(201), "abcde", None));
        assert!(o.succeeded());
        server.join().unwrap();
    }

    #[test]
    fn refused_connection_is_an_error() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let o = local(Duration::from_secs(2)).post(&format!("http://127.0.0.1:{port}/"), &[], b"{}", Duration::from_secs(2));
        assert_eq!(o.status, None);
        assert!(o.error.is_some());
    }
}
