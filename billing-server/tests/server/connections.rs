//! Hostile connections: clients that send nothing, send their headers or body a byte at a time,
//! hold many connections open, or send a body without credentials. Each must cost the server
//! little and never shut out a client that behaves.

use crate::common::TestServer;
use serde_json::json;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn addr(srv: &TestServer) -> SocketAddr {
    srv.base.trim_start_matches("http://").parse().unwrap()
}

fn connect(srv: &TestServer) -> TcpStream {
    let s = TcpStream::connect(addr(srv)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Reads until the server closes the connection; returns what it sent and how long it took.
fn until_closed(s: &mut TcpStream) -> (String, Duration) {
    let started = Instant::now();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the server did not close the connection: {e}"),
        }
    }
    (String::from_utf8_lossy(&out).into_owned(), started.elapsed())
}

/// Reads one response (headers and a `content-length` body) off a kept-alive connection.
fn one_response(s: &mut TcpStream) -> String {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed before a whole response: {}", String::from_utf8_lossy(&raw));
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..i]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            if raw.len() >= i + 4 + len {
                return String::from_utf8_lossy(&raw[..i + 4 + len]).into_owned();
            }
        }
    }
}

fn get_me(srv: &TestServer) -> Vec<u8> {
    format!("GET /api/v2/me HTTP/1.1\r\nhost: x\r\nx-api-key: {}\r\n\r\n", srv.key).into_bytes()
}

/// A connection that sends nothing, one that sends part of its headers a byte at a time, and
/// one that stays open after a response are all closed once the header time-out passes.
#[test]
fn silent_slow_and_idle_connections_are_closed_after_the_header_timeout() {
    let srv = TestServer::sqlite_with(|c| c.header_timeout = MS(400));
    let mut silent = connect(&srv);
    let mut idle = connect(&srv);
    idle.write_all(&get_me(&srv)).unwrap();
    assert!(one_response(&mut idle).starts_with("HTTP/1.1 200"));
    let mut slow = connect(&srv);
    let dribble = {
        let mut s = slow.try_clone().unwrap();
        std::thread::spawn(move || {
            for b in b"GET /api/v2/me HTTP/1.1\r\nhost: x\r\nx-a: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
                if s.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(MS(50));
            }
        })
    };
    for (name, s) in [("silent", &mut silent), ("idle after a response", &mut idle), ("slow headers", &mut slow)] {
        let (got, took) = until_closed(s);
        assert!(took < Duration::from_secs(5), "{name}: closed after {took:?}");
        assert!(!got.contains("200 OK"), "{name}: {got}");
    }
    dribble.join().unwrap();
    // A client that behaves is still served.
    assert_eq!(srv.get("/api/v2/me").status, 200);
}

/// With the cap reached by idle connections, a new connection takes the place of the oldest
/// idle one: clients that send their request are served however many idle ones are held.
#[test]
fn idle_connections_past_the_cap_make_room_for_new_ones() {
    let srv = TestServer::sqlite_with(|c| c.max_connections = 20);
    let held: Vec<TcpStream> = (0..60).map(|_| connect(&srv)).collect();
    std::thread::sleep(MS(200));
    for _ in 0..10 {
        let mut s = connect(&srv);
        s.write_all(&get_me(&srv)).unwrap();
        let r = one_response(&mut s);
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    }
    // The oldest idle connections were closed to make room (the newest may still be open).
    let mut oldest = held.into_iter().next().unwrap();
    let (got, _) = until_closed(&mut oldest);
    assert_eq!(got, "", "closed without an answer");
}

/// When every connection is busy (here: two bodies arriving slowly), a new connection is
/// refused at once with a 503 in the error envelope, and the busy ones are unharmed.
#[test]
fn when_every_connection_is_busy_a_new_one_gets_503() {
    let srv = TestServer::sqlite_with(|c| c.max_connections = 2);
    let head = format!(
        "POST /api/v2/consumers HTTP/1.1\r\nhost: x\r\nx-api-key: {}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{",
        srv.key
    );
    let mut busy: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = connect(&srv);
            s.write_all(head.as_bytes()).unwrap();
            s
        })
        .collect();
    std::thread::sleep(MS(300));
    let mut third = connect(&srv);
    let (got, took) = until_closed(&mut third);
    assert!(got.starts_with("HTTP/1.1 503"), "{got}");
    assert!(got.contains("\"code\":\"SERVICE_UNAVAILABLE\""), "{got}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    drop(busy.pop());
    drop(busy.pop());
    // Once they are gone, connections are admitted again.
    let started = Instant::now();
    // (A refused connection is answered before its request is read, which an HTTP client
    // reports as an error rather than a status: ask over a raw connection.)
    let me = || {
        let mut s = connect(&srv);
        s.write_all(&get_me(&srv)).ok()?;
        let mut buf = [0u8; 12];
        s.read_exact(&mut buf).ok()?;
        Some(buf.starts_with(b"HTTP/1.1 200"))
    };
    while me() != Some(true) {
        assert!(started.elapsed() < Duration::from_secs(5), "no connection admitted after the busy ones left");
        std::thread::sleep(MS(50));
    }
}

/// A body that stops arriving is a 408 once the body time-out passes, and nothing is written.
#[test]
fn a_stalled_body_times_out_and_writes_nothing() {
    let srv = TestServer::sqlite_with(|c| c.body_timeout = MS(400));
    let response = srv.unchanged(|| {
        let mut s = connect(&srv);
        let head = format!(
            "POST /api/v2/consumers HTTP/1.1\r\nhost: x\r\nx-api-key: {}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"name\": \"Sl",
            srv.key
        );
        s.write_all(head.as_bytes()).unwrap();
        let started = Instant::now();
        let r = one_response(&mut s);
        (r, started.elapsed())
    });
    let (r, took) = response;
    assert!(r.starts_with("HTTP/1.1 408"), "{r}");
    assert!(r.contains("\"code\":\"REQUEST_TIMEOUT\""), "{r}");
    assert!(took >= MS(350) && took < Duration::from_secs(5), "{took:?}");
}

/// Credentials are checked before a body is read: a request without valid ones is refused at
/// once, however large a body it announces and however slowly it would send it.
#[test]
fn bodies_are_not_read_before_credentials_are_checked() {
    let srv = TestServer::sqlite();
    for key in ["", "x-api-key: bm9wZTpub3Bl\r\n"] {
        let mut s = connect(&srv);
        let head = format!("POST /api/v2/consumers HTTP/1.1\r\nhost: x\r\n{key}content-type: application/json\r\ncontent-length: 1000000\r\n\r\n{{");
        s.write_all(head.as_bytes()).unwrap();
        let started = Instant::now();
        let r = one_response(&mut s);
        assert!(r.starts_with("HTTP/1.1 401"), "{r}");
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }
    // With credentials the body is read as before.
    let created = srv.post("/api/v2/consumers", json!({"name": "After", "email": "after@example.com"}));
    assert_eq!(created.status, 200, "{}", created.text);
}

/// Unauthenticated bodies (the public pay endpoints, `/mcp`) have a small limit of their own,
/// whatever `--body-limit` allows: a larger one announced is a 413 before anything is read, and
/// nothing is written.
#[test]
fn unauthenticated_bodies_have_a_small_limit() {
    let srv = TestServer::sqlite();
    let big = billing_server::untrusted::PUBLIC_BODY_LIMIT + 1;
    assert!(big < 1024 * 1024, "the test server's --body-limit is larger");
    for path in ["/pay/AAAAAAAAAAAA/attempts", "/mcp", "/api/v2/organization/invite/accept"] {
        let r = srv.unchanged(|| {
            let mut s = connect(&srv);
            let head = format!("POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {big}\r\n\r\n{{");
            s.write_all(head.as_bytes()).unwrap();
            one_response(&mut s)
        });
        assert!(r.starts_with("HTTP/1.1 413"), "{path}: {r}");
        assert!(r.contains("\"code\":\"PAYLOAD_TOO_LARGE\""), "{path}: {r}");
    }
}

/// Unauthenticated bodies being read share a budget of bytes: once slow senders have announced
/// it all, the next one is a 503 at once (nothing buffered), and API clients are still served.
#[test]
fn unauthenticated_bodies_share_a_budget() {
    let srv = TestServer::sqlite();
    let each = 60_000;
    let fit = billing_server::untrusted::BUDGET / each;
    let head = format!("POST /pay/AAAAAAAAAAAA/attempts HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {each}\r\n\r\n{{");
    let mut held: Vec<TcpStream> = (0..fit)
        .map(|_| {
            let mut s = connect(&srv);
            s.write_all(head.as_bytes()).unwrap();
            s
        })
        .collect();
    // Every one of them has been admitted (their bodies are being waited for).
    std::thread::sleep(MS(500));
    let started = Instant::now();
    let mut next = connect(&srv);
    next.write_all(head.as_bytes()).unwrap();
    let r = one_response(&mut next);
    assert!(r.starts_with("HTTP/1.1 503"), "{r}");
    assert!(
        r.contains("\"code\":\"SERVICE_UNAVAILABLE\"") && r.to_ascii_lowercase().contains("retry-after: 1"),
        "{r}"
    );
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(srv.get("/api/v2/me").status, 200, "API clients are served");
    // Once they are gone, the budget is free again: the same request gets to the endpoint
    // (its body is read and refused: a pay attempt needs a method).
    for s in &mut held {
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    drop(held);
    let body = r#"{"customer": {"name": "A B", "phone_number": "+966500000001"}}"#;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = connect(&srv);
        let req = format!(
            "POST /pay/AAAAAAAAAAAA/attempts HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).unwrap();
        let r = one_response(&mut s);
        if r.starts_with("HTTP/1.1 422") {
            assert!(r.contains("\"method\""), "{r}");
            break;
        }
        assert!(r.starts_with("HTTP/1.1 503") && Instant::now() < deadline, "{r}");
        std::thread::sleep(MS(100));
    }
}
