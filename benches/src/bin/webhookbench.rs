//! Webhook delivery throughput:
//!
//! ```text
//! cargo run --release -p benches --bin webhookbench -- [--events 5000] [--concurrency 16] [--database-url URL]
//! ```
//!
//! Starts the server's app in this process (a fresh SQLite file by default, or the PostgreSQL
//! database named by `--database-url`) with its webhook worker, registers one endpoint pointing
//! at a local receiver (std::net, answers 200 at once), commits `--events` events to the outbox
//! and measures how long until the receiver has them all: each is fanned out to a delivery,
//! claimed with a lease, signed, POSTed over a new connection and recorded as delivered.
//!
//! By default the events are committed first and the worker starts after, so the figure is the
//! delivery pipeline's own rate; `--concurrent-writes` starts the worker first, so that events
//! are written while deliveries run (the figure then includes writing the events).

// Links the benches library, which installs the allocator of the server's binary (mimalloc).
extern crate benches;

use billing_core::auth::Credential;
use billing_core::event::{EntityType, Event, EventType};
use billing_core::fields::Email;
use billing_core::ids::EventId;
use billing_core::org::BootstrapRequest;
use billing_core::store::Store;
use billing_core::webhook::EndpointFields;
use billing_server::{App, Config};
use clap::Parser;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 5000)]
    events: usize,
    /// Deliveries in flight at once (the worker's concurrency).
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// A PostgreSQL URL (a database the benchmark may write to); default a temporary SQLite file.
    #[arg(long)]
    database_url: Option<String>,
    /// Events committed per transaction.
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Start the worker before writing the events (deliveries compete with the writes).
    #[arg(long)]
    concurrent_writes: bool,
    /// Database connections (PostgreSQL pool size).
    #[arg(long, default_value_t = billing_server::DEFAULT_DATABASE_POOL_SIZE)]
    pool_size: u32,
}

/// Answers every request 200 and counts them.
fn receiver() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let c = c.clone();
            std::thread::spawn(move || {
                let mut raw = Vec::new();
                let mut buf = [0u8; 8192];
                loop {
                    let Ok(n) = stream.read(&mut buf) else { return };
                    if n == 0 {
                        return;
                    }
                    raw.extend_from_slice(&buf[..n]);
                    if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&raw[..i]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        if raw.len() >= i + 4 + len {
                            break;
                        }
                    }
                }
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                c.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    (url, count)
}

fn main() {
    let args = Args::parse();
    let dir = tempfile::tempdir().unwrap();
    let url = args
        .database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("bench.db").display()));
    let app = App::open(Config {
        jwt_secret: "bench".into(),
        public_url: "http://127.0.0.1".into(),
        worker: args.concurrent_writes,
        worker_poll_interval: Duration::from_millis(5),
        worker_concurrency: args.concurrency,
        database_pool_size: args.pool_size,
        webhook_allow_private: true,
        ..Config::new(url.clone())
    })
    .unwrap();
    let boot = app
        .billing
        .org()
        .bootstrap(&BootstrapRequest {
            org_name: "Bench".into(),
            admin_email: Email::parse("bench@example.com").unwrap(),
            sandbox: false,
        })
        .unwrap();
    let scope = app
        .billing
        .auth()
        .authenticate(
            &Credential::ApiKey {
                key: boot.api_key.key.clone(),
                secret: boot.api_key.secret.clone(),
            },
            None,
        )
        .unwrap();
    let (hook, received) = receiver();
    app.billing
        .webhooks()
        .create(&scope, EndpointFields::parse(&json!({ "url": hook }), true).unwrap())
        .unwrap();
    println!(
        "webhookbench: {} events, worker concurrency {}, database {}",
        args.events,
        args.concurrency,
        if args.database_url.is_some() { "PostgreSQL" } else { "SQLite file" }
    );

    let started = Instant::now();
    let mut written = 0;
    while written < args.events {
        let n = args.batch.min(args.events - written);
        let now = app.billing.engine().clock().now();
        app.billing
            .engine()
            .store
            .write(|tx| {
                for i in 0..n {
                    let id = EventId::new();
                    billing_core::event::record(
                        tx,
                        &Event {
                            id,
                            org_id: scope.org_id(),
                            branch_id: scope.branch_id(),
                            event_type: EventType::PaymentSucceeded,
                            entity_type: EntityType::Payment,
                            entity_id: id.0,
                            payload: json!({"event_type": "PAYMENT_SUCCEEDED", "n": written + i}),
                            created_at: now,
                        },
                    )?;
                }
                Ok(())
            })
            .unwrap();
        written += n;
    }
    let committed = started.elapsed();
    let delivering = Instant::now();
    if !args.concurrent_writes {
        let options = billing_server::worker::WorkerOptions {
            poll_interval: app.config.worker_poll_interval,
            concurrency: app.config.worker_concurrency,
        };
        billing_server::worker::start(&app, options);
    }
    while received.load(Ordering::Relaxed) < args.events {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "only {} of {} delivered",
            received.load(Ordering::Relaxed),
            args.events
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = if args.concurrent_writes { started.elapsed() } else { delivering.elapsed() };
    println!(
        "events committed in {:.2} s; all {} delivered in {:.2} s{}: {:.0} deliveries/s",
        committed.as_secs_f64(),
        args.events,
        took.as_secs_f64(),
        if args.concurrent_writes {
            " from the first write"
        } else {
            " once the worker started"
        },
        args.events as f64 / took.as_secs_f64()
    );
}
