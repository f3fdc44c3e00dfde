//! Benchmark support: a closed-loop HTTP load generator over keep-alive connections.

// The benchmark binaries run the server in-process, with the allocator its binary installs.
#[global_allocator]
static ALLOCATOR: billing_server::Allocator = billing_server::Allocator {};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Builds the n-th request of a connection: method, path, body.
pub type RequestFn = Arc<dyn Fn(u64) -> (hyper::Method, String, Option<Vec<u8>>) + Send + Sync>;

#[derive(Debug, Clone)]
pub struct LoadResult {
    pub name: String,
    pub requests: u64,
    pub errors: u64,
    pub seconds: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl LoadResult {
    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.seconds
    }
}

impl std::fmt::Display for LoadResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<34} {:>9.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms  ({} requests, {} errors)",
            self.name,
            self.rps(),
            self.p50_ms,
            self.p99_ms,
            self.max_ms,
            self.requests,
            self.errors
        )
    }
}

/// Runs `connections` keep-alive connections, each sending requests back to back for `duration`
/// (after `warmup`), and reports throughput and latency percentiles. A non-2xx answer counts as
/// an error.
pub async fn run(
    name: &str,
    addr: SocketAddr,
    headers: Vec<(String, String)>,
    connections: usize,
    warmup: Duration,
    duration: Duration,
    make: RequestFn,
) -> LoadResult {
    let counter = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let measure_from = start + warmup;
    let end = measure_from + duration;
    let headers = Arc::new(headers);
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (counter, errors, headers, make) = (counter.clone(), errors.clone(), headers.clone(), make.clone());
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
            stream.set_nodelay(true).ok();
            let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await.expect("handshake");
            tokio::spawn(conn);
            let mut latencies = Vec::with_capacity(1 << 16);
            loop {
                let now = Instant::now();
                if now >= end {
                    break;
                }
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let (method, path, body) = make(n);
                let mut req = hyper::Request::builder().method(method).uri(path).header("host", "bench");
                for (k, v) in headers.iter() {
                    req = req.header(k, v);
                }
                let req = req.body(Full::new(Bytes::from(body.unwrap_or_default()))).unwrap();
                let t0 = Instant::now();
                let ok = match sender.send_request(req).await {
                    Ok(resp) => {
                        let ok = resp.status().is_success();
                        let _ = resp.into_body().collect().await;
                        ok
                    }
                    Err(_) => false,
                };
                let t1 = Instant::now();
                if t0 >= measure_from {
                    latencies.push(t1 - t0);
                    if !ok {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if !ok && sender.ready().await.is_err() {
                    break;
                }
            }
            latencies
        }));
    }
    let mut all: Vec<Duration> = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("load task"));
    }
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0)
    };
    LoadResult {
        name: name.to_string(),
        requests: all.len() as u64,
        errors: errors.load(Ordering::Relaxed),
        seconds: duration.as_secs_f64(),
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        max_ms: all.last().map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0),
    }
}

/// A bare hyper server answering every request with a small JSON body: the ceiling of the
/// stack on this machine.
pub async fn spawn_bare_server() -> SocketAddr {
    use hyper::server::conn::http1 as server;
    use hyper::service::service_fn;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).ok();
            tokio::spawn(async move {
                let svc = service_fn(|_req| async {
                    let body = serde_json::to_vec(&serde_json::json!({"id": "01a1fca4-f47c-7138-9cc4-6c2c98b2912a", "name": "bare"})).unwrap();
                    let mut r = hyper::Response::new(Full::new(Bytes::from(body)));
                    r.headers_mut()
                        .insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
                    Ok::<_, std::convert::Infallible>(r)
                });
                let _ = server::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    });
    addr
}
