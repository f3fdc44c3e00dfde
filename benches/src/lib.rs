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
    /// The CPU the measured window took, by whom (Linux; `None` elsewhere).
    pub cpu: Option<cpu::Used>,
}

impl LoadResult {
    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.seconds
    }

    /// CPU microseconds per request: the server (this process but the load generator), the
    /// load generator, and the rest of the machine (the database's processes, the kernel's
    /// work outside this process, anything else running).
    pub fn cpu_line(&self) -> Option<String> {
        let u = self.cpu?;
        let per = |s: f64| s * 1e6 / self.requests.max(1) as f64;
        Some(format!(
            "  cpu per request: server {:.0} µs, load generator {:.0} µs, rest of the machine {:.0} µs (machine busy {:.0}% of {} cores)",
            per(u.server),
            per(u.load),
            per(u.rest),
            100.0 * u.machine / (self.seconds * cpu::cores() as f64),
            cpu::cores()
        ))
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
    // The CPU of the measured window, sampled at its two ends.
    let cpu_window = tokio::spawn(async move {
        tokio::time::sleep_until(measure_from.into()).await;
        let from = cpu::sample();
        tokio::time::sleep_until(end.into()).await;
        cpu::sample().zip(from).map(|(to, from)| to.since(&from))
    });
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
        cpu: cpu_window.await.ok().flatten(),
    }
}

/// Who used the CPU during a measurement, from Linux's `/proc` (times in seconds): the
/// benchmarks run the server in their own process and name the load generator's threads
/// [`cpu::LOAD_THREADS`], so a window's CPU splits into server, load generator, this process's
/// waited-for children (pgbench) and the rest of the machine.
pub mod cpu {
    /// The thread name of the load generator's runtime.
    pub const LOAD_THREADS: &str = "loadgen";
    /// Linux's `USER_HZ`: `/proc` counts CPU time in hundredths of a second.
    const TICKS: f64 = 100.0;

    #[derive(Debug, Clone, Copy, Default)]
    pub struct Sample {
        process: f64,
        load: f64,
        children: f64,
        machine: f64,
    }

    #[derive(Debug, Clone, Copy, Default)]
    pub struct Used {
        /// This process outside the load generator's threads.
        pub server: f64,
        pub load: f64,
        /// Waited-for child processes (pgbench).
        pub children: f64,
        /// The machine outside this process and its children: the database, other programs,
        /// the kernel's work not charged to a process.
        pub rest: f64,
        /// The whole machine's busy time.
        pub machine: f64,
    }

    impl Sample {
        pub fn since(&self, from: &Sample) -> Used {
            let process = self.process - from.process;
            let load = self.load - from.load;
            let children = self.children - from.children;
            let machine = self.machine - from.machine;
            Used {
                server: (process - load).max(0.0),
                load,
                children,
                rest: (machine - process - children).max(0.0),
                machine,
            }
        }
    }

    /// Fields after the command of a `/proc/.../stat` line (the first is the state).
    fn stat_fields(path: &str) -> Option<Vec<f64>> {
        let text = std::fs::read_to_string(path).ok()?;
        let after = &text[text.rfind(')')? + 1..];
        Some(after.split_whitespace().map(|f| f.parse().unwrap_or(0.0)).collect())
    }

    pub fn sample() -> Option<Sample> {
        // utime, stime, cutime, cstime are fields 14-17 of stat(5): 11-14 after the command.
        let me = stat_fields("/proc/self/stat")?;
        let process = (me.get(11)? + me.get(12)?) / TICKS;
        let children = (me.get(13)? + me.get(14)?) / TICKS;
        let mut load = 0.0;
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let dir = task.path();
            let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            if name.trim_end().starts_with(LOAD_THREADS) {
                if let Some(f) = stat_fields(&dir.join("stat").to_string_lossy()) {
                    load += (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / TICKS;
                }
            }
        }
        // user nice system idle iowait irq softirq steal: busy is all but idle, iowait, steal.
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu: Vec<f64> = stat.lines().next()?.split_whitespace().skip(1).map(|f| f.parse().unwrap_or(0.0)).collect();
        let machine = (cpu.first()? + cpu.get(1)? + cpu.get(2)? + cpu.get(5)? + cpu.get(6)?) / TICKS;
        Some(Sample {
            process,
            load,
            children,
            machine,
        })
    }

    pub fn cores() -> usize {
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
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
