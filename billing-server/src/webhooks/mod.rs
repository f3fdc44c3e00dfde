//! Webhook I/O: the HTTP transport billing-core sends deliveries with, and the background
//! worker that claims due work (outbox fan-out, delivery attempts) and runs it.

mod transport;

pub use transport::HttpTransport;

use crate::App;
use billing_core::webhook::WorkReport;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Worker settings.
#[derive(Debug, Clone, Copy)]
pub struct WorkerOptions {
    /// Pause between polls when no work is due.
    pub poll_interval: Duration,
    /// Items run at the same time (HTTP calls in flight).
    pub concurrency: usize,
}

/// Starts the worker on its own threads. It holds the app weakly and stops once the app is
/// dropped. Every item is claimed with a lease in the database, so any number of workers (in
/// this process or others on the same database) share the work without doing an item twice.
pub fn start_worker(app: &Arc<App>, options: WorkerOptions) {
    let weak = Arc::downgrade(app);
    std::thread::Builder::new()
        .name("webhook-worker".into())
        .spawn(move || run(weak, options))
        .expect("spawn the webhook worker");
}

fn run(app: Weak<App>, options: WorkerOptions) {
    let concurrency = options.concurrency.max(1);
    loop {
        let Some(app) = app.upgrade() else { return };
        let claimed = app
            .billing
            .claim_due_work(None, app.billing.runnable_work_kinds(), app.billing.work_lease(), (concurrency * 4) as u32);
        let items = match claimed {
            Ok(items) => items,
            Err(e) => {
                tracing::warn!(error = %e, "claiming due work failed");
                drop(app);
                std::thread::sleep(options.poll_interval);
                continue;
            }
        };
        if items.is_empty() {
            drop(app);
            std::thread::sleep(options.poll_interval);
            continue;
        }
        let items = app.billing.fan_out_batch(&items, &mut WorkReport::default());
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..concurrency.min(items.len()) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let mut report = WorkReport::default();
                    if let Err(e) = app.billing.run_work_item(item, &mut report) {
                        tracing::warn!(error = %e, kind = %item.kind, id = %item.id, "due work failed; it is retried when its lease runs out");
                    }
                });
            }
        });
    }
}
