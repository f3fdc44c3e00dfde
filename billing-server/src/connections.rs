//! Accepting connections so that no client can shut others out: a cap on open connections, a
//! time limit on receiving a request's headers (which also closes connections that send
//! nothing, or idle too long between requests), and an accept loop that backs off when the
//! process runs out of file descriptors instead of spinning.
//!
//! When the cap is reached, a new connection takes the place of the oldest idle one (a
//! connection with no request in progress): a flood of idle connections then only ever pushes
//! out other idle connections, and a client that sends its request at once is served. Only when
//! every open connection is busy is a new one refused, with a 503 written without reading
//! anything.
//!
//! A connection whose request is an unauthenticated body being read (the public pay endpoints,
//! `/mcp`: see [`Mark::reading_untrusted_body`]) counts as pushable too, after the idle ones:
//! slow bodies that nobody vouches for cannot fill the cap either.

use crate::App;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// Connection limits of one server process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers, counted from when its
    /// connection opens or from the end of the previous response.
    pub header_timeout: Duration,
}

pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The cap on connections when the file-descriptor limit allows it.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// How long a connection that has answered a request stays exempt from being pushed out, so
/// that its response is not cut off while it is being written.
const EVICTION_GRACE: Duration = Duration::from_secs(1);
/// Largest buffer hyper keeps per connection for a request's head.
const MAX_HEAD_BUFFER: usize = 64 * 1024;

/// The default cap: [`DEFAULT_MAX_CONNECTIONS`], lowered to leave room (an eighth of the limit,
/// at least 64 descriptors) for database files and connections and outgoing webhook calls when
/// the process may open fewer files.
pub fn default_max_connections() -> usize {
    match open_file_limit() {
        Some(limit) => {
            let reserve = (limit / 8).max(64);
            limit.saturating_sub(reserve).clamp(16, DEFAULT_MAX_CONNECTIONS)
        }
        None => DEFAULT_MAX_CONNECTIONS,
    }
}

/// The process's soft limit on open files, after raising it to the hard limit.
pub fn open_file_limit() -> Option<usize> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    usize::try_from(lim.rlim_cur).ok()
}

/// One open connection, as the registry sees it.
struct Conn {
    /// Requests being answered on it (0 or 1 with HTTP/1.1 without pipelining).
    busy: AtomicUsize,
    /// Milliseconds after `Registry::epoch` at which it last finished a request or opened.
    idle_since_ms: AtomicU64,
    /// Requests it has finished.
    served: AtomicU64,
    /// Whether its request is an unauthenticated body being read.
    untrusted: AtomicBool,
    close: Notify,
}

/// A request's connection, as the handlers see it (a request extension): what they tell the
/// registry about the request in progress.
#[derive(Clone)]
pub struct Mark(Arc<Conn>);

impl Mark {
    /// The request's body is being read and nothing vouches for its sender yet: until the
    /// guard is dropped, the connection may be closed to admit a new one when the cap is
    /// reached (after every idle connection).
    pub fn reading_untrusted_body(&self) -> UntrustedBody {
        self.0.untrusted.store(true, Ordering::Release);
        UntrustedBody(self.0.clone())
    }
}

/// See [`Mark::reading_untrusted_body`].
pub struct UntrustedBody(Arc<Conn>);

impl Drop for UntrustedBody {
    fn drop(&mut self) {
        self.0.untrusted.store(false, Ordering::Release);
    }
}

struct Registry {
    epoch: Instant,
    max: usize,
    open: Mutex<(u64, BTreeMap<u64, Arc<Conn>>)>,
}

impl Registry {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Admits a new connection, pushing out the oldest idle one when at the cap; `None` when
    /// every open connection is busy.
    fn admit(&self) -> Option<(u64, Arc<Conn>)> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.1.len() >= self.max && !self.evict_locked(&mut open.1) {
            return None;
        }
        open.0 += 1;
        let id = open.0;
        let conn = Arc::new(Conn {
            busy: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(self.now_ms()),
            served: AtomicU64::new(0),
            untrusted: AtomicBool::new(false),
            close: Notify::new(),
        });
        open.1.insert(id, conn.clone());
        Some((id, conn))
    }

    /// Closes the oldest idle connection (one that has never sent a request, or finished its
    /// last one more than [`EVICTION_GRACE`] ago), or else the oldest one reading an
    /// unauthenticated body. Its entry goes when its task ends.
    fn evict_locked(&self, open: &mut BTreeMap<u64, Arc<Conn>>) -> bool {
        let now = self.now_ms();
        let grace = EVICTION_GRACE.as_millis() as u64;
        let victim = open
            .iter()
            .find(|(_, c)| {
                c.busy.load(Ordering::Acquire) == 0
                    && (c.served.load(Ordering::Acquire) == 0 || now.saturating_sub(c.idle_since_ms.load(Ordering::Acquire)) > grace)
            })
            .or_else(|| open.iter().find(|(_, c)| c.untrusted.load(Ordering::Acquire)));
        match victim {
            Some((&id, c)) => {
                c.close.notify_one();
                open.remove(&id);
                true
            }
            None => false,
        }
    }

    fn evict_one(&self) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        self.evict_locked(&mut open.1)
    }

    fn remove(&self, id: u64) {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).1.remove(&id);
    }

    fn count(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).1.len()
    }
}

/// Marks its connection busy while a request is being answered.
struct Busy<'a>(&'a Conn, &'a Registry);

impl<'a> Busy<'a> {
    fn start(conn: &'a Conn, registry: &'a Registry) -> Self {
        conn.busy.fetch_add(1, Ordering::AcqRel);
        Busy(conn, registry)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.idle_since_ms.store(self.1.now_ms(), Ordering::Release);
        self.0.served.fetch_add(1, Ordering::AcqRel);
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Logs a repeating warning at most once a second, with how many were left out.
struct Throttled {
    last: Option<Instant>,
    skipped: u64,
}

impl Throttled {
    fn warn(&mut self, what: &str, error: &std::io::Error) {
        if self.last.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
            self.skipped += 1;
            return;
        }
        tracing::warn!(error = %error, repeated = self.skipped, "{what}");
        self.last = Some(Instant::now());
        self.skipped = 0;
    }
}

const BUSY_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 114\r\n\r\n{\"error\":{\"code\":\"SERVICE_UNAVAILABLE\",\"message\":\"The service is busy, try again shortly\",\"additional_info\":null}}";

/// Serves HTTP/1.1 on `listener` until the process ends.
pub async fn serve(app: Arc<App>, listener: TcpListener) {
    let limits = app.config.limits();
    let registry = Arc::new(Registry {
        epoch: Instant::now(),
        max: limits.max_connections.max(1),
        open: Mutex::new((0, BTreeMap::new())),
    });
    let mut backoff = Duration::ZERO;
    let mut log = Throttled { last: None, skipped: 0 };
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok((s, peer)) => {
                backoff = Duration::ZERO;
                (s, peer)
            }
            Err(e) => {
                // Out of descriptors (or another resource): free one by closing an idle
                // connection, and pause before trying again rather than spin.
                registry.evict_one();
                backoff = (backoff * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                log.warn("accepting a connection failed; pausing", &e);
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        let Some((id, conn)) = registry.admit() else {
            tracing::debug!(open = registry.count(), "every connection is busy; refused one");
            let _ = stream.try_write(BUSY_RESPONSE);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (app, registry) = (app.clone(), registry.clone());
        tokio::spawn(async move {
            let service = {
                let (conn, registry) = (conn.clone(), registry.clone());
                service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                    let (app, conn, registry) = (app.clone(), conn.clone(), registry.clone());
                    // The peer's address, for what limits by client (the checkout's attempts).
                    req.extensions_mut().insert(crate::PeerAddr(peer));
                    req.extensions_mut().insert(Mark(conn.clone()));
                    async move {
                        let _busy = Busy::start(&conn, &registry);
                        Ok::<_, std::convert::Infallible>(crate::handle(app, req).await)
                    }
                })
            };
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(MAX_HEAD_BUFFER)
                // A client that shuts down its sending side after its request (as `nc -N` and
                // some scripts do) still gets the answer.
                .half_close(true)
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                ended = connection => if let Err(e) = ended {
                    tracing::debug!(error = %e, "connection ended with an error");
                },
                _ = conn.close.notified() => tracing::debug!("closed an idle connection (or one reading an unauthenticated body) to admit a new one"),
            }
            registry.remove(id);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(max: usize) -> Registry {
        Registry {
            epoch: Instant::now() - Duration::from_secs(10),
            max,
            open: Mutex::new((0, BTreeMap::new())),
        }
    }

    #[test]
    fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let r = registry(3);
        let (a, ca) = r.admit().unwrap();
        let (_b, cb) = r.admit().unwrap();
        let (_c, _cc) = r.admit().unwrap();
        let _busy = Busy::start(&ca, &r);
        // `a` is busy, so `b` (the oldest idle one) goes.
        let (_d, _) = r.admit().unwrap();
        assert_eq!(r.count(), 3);
        assert!(r.open.lock().unwrap().1.contains_key(&a));
        // `b` was told to close.
        let notified = cb.close.notified();
        tokio::pin!(notified);
        assert!(futures_ready(notified.as_mut()));
    }

    #[test]
    fn a_connection_that_just_answered_is_not_cut_off() {
        let r = registry(1);
        let (_a, ca) = r.admit().unwrap();
        drop(Busy::start(&ca, &r));
        assert!(r.admit().is_none(), "within the grace period after its response");
        ca.idle_since_ms.store(0, Ordering::Release);
        assert!(r.admit().is_some(), "idle long enough: pushed out");
    }

    #[test]
    fn at_the_cap_a_connection_reading_an_untrusted_body_makes_room_after_idle_ones() {
        let r = registry(3);
        let (_, a) = r.admit().unwrap();
        let (_, b) = r.admit().unwrap();
        let (_, c) = r.admit().unwrap();
        for conn in [&a, &b, &c] {
            conn.busy.fetch_add(1, Ordering::AcqRel);
        }
        assert!(r.admit().is_none(), "every connection busy: refused");
        let mark = Mark(b.clone()).reading_untrusted_body();
        let (_, d) = r.admit().expect("the untrusted body's connection makes room");
        assert!(futures_ready(std::pin::pin!(b.close.notified())), "b was told to close");
        assert!(!futures_ready(std::pin::pin!(a.close.notified())));
        drop(mark);
        d.busy.fetch_add(1, Ordering::AcqRel);
        let _mark = Mark(c.clone()).reading_untrusted_body();
        drop(_mark);
        assert!(r.admit().is_none(), "once its body is read, a connection is busy again");
    }

    #[test]
    fn when_every_connection_is_busy_new_ones_are_refused() {
        let r = registry(2);
        let (_a, ca) = r.admit().unwrap();
        let (_b, cb) = r.admit().unwrap();
        let (_x, _y) = (Busy::start(&ca, &r), Busy::start(&cb, &r));
        assert!(r.admit().is_none());
        assert_eq!(r.count(), 2);
    }

    #[test]
    fn the_busy_response_is_well_formed() {
        let text = std::str::from_utf8(BUSY_RESPONSE).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "SERVICE_UNAVAILABLE");
    }

    fn futures_ready<F: std::future::Future>(f: std::pin::Pin<&mut F>) -> bool {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        f.poll(&mut cx).is_ready()
    }
}
