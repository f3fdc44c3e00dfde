//! The background worker: claims due work (webhook fan-out and deliveries, abandoned gateway
//! attempts, and every kind the core's registry has) and runs it with the core's handlers.

use crate::App;
use billing_core::ids::OrgId;
use billing_core::work::{DueWork, WorkReport};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

/// Worker settings.
#[derive(Debug, Clone, Copy)]
pub struct WorkerOptions {
    /// Pause between polls when no work is due.
    pub poll_interval: Duration,
    /// Items run at the same time (HTTP calls in flight).
    pub concurrency: usize,
}

/// How many runners are free (the dispatcher waits on it when none is), and how many each
/// organization holds (for a fair claim).
struct Idle {
    free: Mutex<usize>,
    changed: Condvar,
    by_org: Mutex<HashMap<OrgId, usize>>,
}

/// The organizations a job's items belong to (a fan-out batch may hold several).
fn orgs_of(job: &[DueWork]) -> Vec<OrgId> {
    let mut orgs: Vec<OrgId> = job.iter().map(|i| i.org_id).collect();
    orgs.sort_by_key(|o| o.0);
    orgs.dedup();
    orgs
}

impl Idle {
    fn take(&self, job: &[DueWork]) {
        *self.free.lock().unwrap() -= 1;
        let mut by_org = self.by_org.lock().unwrap();
        for org in orgs_of(job) {
            *by_org.entry(org).or_default() += 1;
        }
    }

    fn release(&self, job: &[DueWork]) {
        {
            let mut by_org = self.by_org.lock().unwrap();
            for org in orgs_of(job) {
                if let Some(n) = by_org.get_mut(&org) {
                    *n -= 1;
                    if *n == 0 {
                        by_org.remove(&org);
                    }
                }
            }
        }
        *self.free.lock().unwrap() += 1;
        self.changed.notify_all();
    }
}

/// A running worker, as the shutdown sees it: [`Worker::stop`] ends its claims, and
/// [`Worker::drained`] waits for the items already claimed to finish.
pub struct Worker {
    stopping: AtomicBool,
    idle: Arc<Idle>,
    concurrency: usize,
}

impl Worker {
    /// Claims nothing more; the items already claimed run to their end.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.idle.changed.notify_all();
    }

    /// Jobs running now (a job is one item, or the items of a batched kind run together).
    pub fn busy(&self) -> usize {
        self.concurrency - *self.idle.free.lock().unwrap()
    }

    /// Waits until no job runs, or `timeout` has passed; returns how many still ran then.
    /// (Blocking: call it from a blocking thread.)
    pub fn drained(&self, timeout: Duration) -> usize {
        let until = std::time::Instant::now() + timeout;
        let mut free = self.idle.free.lock().unwrap();
        while *free < self.concurrency {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            free = self.idle.changed.wait_timeout(free, left).unwrap().0;
        }
        self.concurrency - *free
    }
}

/// Starts the worker on its own threads: one dispatcher and `concurrency` runners. It holds the
/// app weakly and stops once the app is dropped. Every item is claimed with a lease in the
/// database, so any number of workers (in this process or others on the same database) share
/// the work without doing an item twice.
///
/// The dispatcher claims only as many items as there are free runners, so a claimed item
/// starts at once (its lease is not spent waiting in a queue), and a slow receiver holds up
/// one runner, not the others. The fan-out items of a claim go to one runner together, which
/// runs them in one transaction.
pub fn start(app: &Arc<App>, options: WorkerOptions) -> Arc<Worker> {
    let concurrency = options.concurrency.max(1);
    let idle = Arc::new(Idle {
        free: Mutex::new(concurrency),
        changed: Condvar::new(),
        by_org: Mutex::default(),
    });
    let worker = Arc::new(Worker {
        stopping: AtomicBool::new(false),
        idle: idle.clone(),
        concurrency,
    });
    let (send, receive) = mpsc::channel::<Vec<DueWork>>();
    let receive = Arc::new(Mutex::new(receive));
    for i in 0..concurrency {
        let (app, idle, receive) = (Arc::downgrade(app), idle.clone(), receive.clone());
        std::thread::Builder::new()
            .name(format!("work-runner-{i}"))
            .spawn(move || run_items(app, &idle, &receive))
            .expect("spawn a work runner");
    }
    let weak = Arc::downgrade(app);
    let control = worker.clone();
    std::thread::Builder::new()
        .name("work-dispatcher".into())
        .spawn(move || {
            // A bug that panics must not stop deliveries for good: log it and go on. Items in
            // flight are claimed again when their leases run out.
            while std::panic::catch_unwind(AssertUnwindSafe(|| dispatch(&weak, options, &idle, &send, &control.stopping))).is_err() {
                tracing::error!("the due-work dispatcher panicked; it starts again");
                std::thread::sleep(options.poll_interval);
            }
        })
        .expect("spawn the work dispatcher");
    worker
}

fn dispatch(app: &Weak<App>, options: WorkerOptions, idle: &Idle, send: &mpsc::Sender<Vec<DueWork>>, stopping: &AtomicBool) {
    let concurrency = options.concurrency.max(1);
    // After a claim that found more work than runners, the next one waits for a quarter of
    // the runners: a claim scans the queue, so fewer, larger claims cost the database less.
    let mut busy = false;
    loop {
        let free = {
            let mut free = idle.free.lock().unwrap();
            let enough = if busy { concurrency.div_ceil(4) } else { 1 };
            while *free < enough && !stopping.load(Ordering::Acquire) {
                free = idle.changed.wait_timeout(free, options.poll_interval).unwrap().0;
                if app.strong_count() == 0 {
                    return;
                }
            }
            *free
        };
        // Shutting down: claim nothing more (the runners finish what they hold).
        if stopping.load(Ordering::Acquire) {
            return;
        }
        let Some(app) = app.upgrade() else { return };
        let held = idle.by_org.lock().unwrap().clone();
        let claimed = app.billing.engine().claim_due_work_fairly(
            &app.billing.engine().work_kinds(),
            app.billing.engine().work_lease(),
            free.min(256) as u32,
            concurrency,
            &held,
            busy,
        );
        let mut items = match claimed {
            Ok(items) => items,
            Err(e) => {
                tracing::warn!(error = %e, "claiming due work failed");
                Vec::new()
            }
        };
        busy = items.len() >= free.min(256);
        if busy {
            top_up_batches(&app, &mut items);
        }
        if items.is_empty() {
            drop(app);
            // Polls again after the interval, or at once when told to stop.
            let free = idle.free.lock().unwrap();
            let _ = idle
                .changed
                .wait_timeout_while(free, options.poll_interval, |_| !stopping.load(Ordering::Acquire));
            continue;
        }
        // Each job takes one runner: the items of a batched kind (the fan-outs) together, every
        // other item (a delivery) alone.
        for job in app.billing.engine().work_jobs(items) {
            idle.take(&job);
            if send.send(job).is_err() {
                return;
            }
        }
    }
}

/// How many items of batched kinds one claim takes at most, with its top-up. Each batch of
/// renewals costs two claims and two commits whatever its size, and adjacent renewals share
/// pages, so larger batches make a renewal day cheaper (SQLite, N = 100,000, alternating on one
/// machine: 256 gave 10.7 to 12.0 s, 512 gave 9.1 to 10.4 s, and 1,024 about 10% less than 512).
/// The price is how long one batch holds SQLite's one writer, which a request's write may wait
/// during a renewal day: about 17 ms on average for 512 (6.6 s of batches in 392, measured).
/// The items' leases need only last until the batch's first transaction, which completes them
/// (the gateway is called after it).
pub const BATCH_ITEMS: usize = 512;

/// The items of a batched kind (renewals, renewal charges, fan-outs) run together on one
/// runner, in one transaction, so they do not each need a free runner: when a full claim took
/// some, more of those kinds are claimed, up to [`BATCH_ITEMS`] in all. A renewal day then
/// commits in batches of hundreds rather than of as many items as there are runners (one
/// commit, and on SQLite one fsync, per batch).
fn top_up_batches(app: &App, items: &mut Vec<DueWork>) {
    let batched: Vec<&'static str> = billing_core::billing::work_handlers::<crate::backend::Backend>()
        .iter()
        .filter(|h| h.batched && items.iter().any(|i| i.kind == h.kind))
        .map(|h| h.kind)
        .collect();
    let room = BATCH_ITEMS.saturating_sub(items.len());
    if batched.is_empty() || room == 0 {
        return;
    }
    // The claim before this one came back full: no need to ask whether anything is due.
    match app
        .billing
        .engine()
        .claim_more_due_work(None, &batched, app.billing.engine().work_lease(), room as u32)
    {
        Ok(more) => items.extend(more),
        Err(e) => tracing::warn!(error = %e, "claiming due work failed"),
    }
}

fn run_items(app: Weak<App>, idle: &Idle, receive: &Mutex<mpsc::Receiver<Vec<DueWork>>>) {
    loop {
        // Dropping the dispatcher's sender (the app is gone) ends the runners.
        let Ok(job) = receive.lock().unwrap().recv() else { return };
        let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let Some(app) = app.upgrade() else { return };
            let mut report = WorkReport::default();
            app.billing.engine().run_work(&job, &mut report);
            if report.errors > 0 {
                let kind = job.first().map(|i| i.kind.as_str()).unwrap_or("");
                tracing::warn!(kind, failed = report.errors, "due work failed; it is retried when its lease runs out");
            }
        }));
        if ran.is_err() {
            tracing::error!("a due-work runner panicked; its items are retried when their leases run out");
        }
        // Whatever happened, the runner is free again (else the worker would shrink for good).
        idle.release(&job);
    }
}
