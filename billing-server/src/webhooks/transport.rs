//! A small blocking HTTP/1.1 client for webhook requests, over `std::net`: one connection per
//! request (`Connection: close`), a deadline over connecting, sending and reading, and only
//! the first bytes of the response body kept. `https://` endpoints are reported as an error
//! (no TLS in this build).

use billing_core::webhook::{Outcome, WebhookTransport};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Most response bytes read (the log keeps an excerpt).
const MAX_RESPONSE: usize = 64 * 1024;

#[derive(Debug, Clone)]
pub struct HttpTransport {
    pub timeout: Duration,
    /// See [`WebhookTransport::lease_margin`].
    pub lease_margin: Duration,
}

impl HttpTransport {
    pub fn new(timeout: Duration) -> Self {
        HttpTransport {
            timeout,
            lease_margin: Duration::from_secs(30),
        }
    }
}

struct Target {
    host: String,
    port: u16,
    path: String,
    host_header: String,
}

fn parse(url: &str) -> Result<Target, String> {
    if url.starts_with("https://") {
        return Err("https endpoints are not supported by this server's webhook transport".into());
    }
    let rest = url.strip_prefix("http://").ok_or("not an http URL")?;
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
        host_header: authority.to_string(),
        host,
        port: port.unwrap_or(80),
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

fn send(url: &str, headers: &[(String, String)], body: &[u8], timeout: Duration) -> Result<(u16, String), String> {
    let deadline = Instant::now() + timeout;
    let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    let t = parse(url)?;
    let addrs: Vec<_> = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", t.host))?
        .collect();
    let mut last = String::from("no address");
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, left()) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("connection to {a} failed: {e}"),
        }
    }
    let mut stream = stream.ok_or(last)?;
    let _ = stream.set_nodelay(true);
    let mut req = format!("POST {} HTTP/1.1\r\nHost: {}\r\n", t.path, t.host_header);
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    stream.set_write_timeout(Some(left())).map_err(|e| e.to_string())?;
    stream.write_all(&bytes).map_err(|e| format!("sending failed: {e}"))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        stream.set_read_timeout(Some(left())).map_err(|e| e.to_string())?;
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
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(format!("timed out after {} ms", timeout.as_millis()));
            }
            Err(e) if raw.is_empty() => return Err(format!("reading the response failed: {e}")),
            Err(_) => break,
        }
        if Instant::now() >= deadline {
            return Err(format!("timed out after {} ms", timeout.as_millis()));
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
        let r = send(url, headers, body, timeout);
        let duration = started.elapsed();
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
        assert!(parse("https://example.com/").is_err());
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
        let o = HttpTransport::new(Duration::from_millis(200)).post(&url, &[], b"{}", Duration::from_millis(200));
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
        let o = HttpTransport::new(Duration::from_secs(5)).post(&url, &[("X-A".into(), "1".into())], b"{}", Duration::from_secs(5));
        assert_eq!((o.status, o.body.as_str(), o.error.clone()), (Some(201), "abcde", None));
        assert!(o.succeeded());
        server.join().unwrap();
    }

    #[test]
    fn refused_connection_is_an_error() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let o = HttpTransport::new(Duration::from_secs(2)).post(&format!("http://127.0.0.1:{port}/"), &[], b"{}", Duration::from_secs(2));
        assert_eq!(o.status, None);
        assert!(o.error.is_some());
    }
}
