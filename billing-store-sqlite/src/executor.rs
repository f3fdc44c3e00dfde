//! The write executor: one thread that takes write operations from a queue, runs all the
//! queued ones in one batch transaction (each in its own savepoint, see
//! [`crate::writer::Writer::run_batch`]), commits once, then answers each. Async callers
//! await the answer instead of parking a thread per request.

use crate::Inner;
use billing_model::error::{Result, StoreError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Weak;
use tokio::sync::oneshot;

/// Called after the batch's commit, with the commit's failure if any.
pub type Finisher = Box<dyn FnOnce(Option<StoreError>) + Send>;
/// Runs the operation (inside the batch) and returns how to answer it.
pub type Job = Box<dyn FnOnce() -> Finisher + Send>;

/// Most operations per batch: bounds the latency of the first one.
const MAX_BATCH: usize = 256;

/// Wraps an operation as a job, and the receiver of its answer.
pub fn job<R: Send + 'static>(op: impl FnOnce() -> Result<R> + Send + 'static) -> (Job, oneshot::Receiver<Result<R>>) {
    let (tx, rx) = oneshot::channel();
    let job: Job = Box::new(move || {
        let result = catch_unwind(AssertUnwindSafe(op)).unwrap_or_else(|_| Err(StoreError::backend("the operation panicked").into()));
        Box::new(move |commit_failure: Option<StoreError>| {
            // An answer is only "done" once durable: a failed commit undoes every success.
            let result = match (result, commit_failure) {
                (Ok(_), Some(e)) => Err(e.into()),
                (r, _) => r,
            };
            let _ = tx.send(result);
        })
    });
    (job, rx)
}

/// Starts the executor thread. It holds the store weakly and stops when the store is dropped
/// (the queue's sender goes with it).
pub fn start(store: Weak<Inner>) -> Sender<Job> {
    let (tx, rx) = channel::<Job>();
    std::thread::Builder::new()
        .name("sqlite-writer".into())
        .spawn(move || run(store, rx))
        .expect("spawn the write executor");
    tx
}

fn run(store: Weak<Inner>, rx: Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let Some(inner) = store.upgrade() else { return };
        let mut finishers = Vec::with_capacity(jobs.len());
        let failure = if inner.path.is_some() {
            inner.writer.run_batch(|| finishers.extend(jobs.drain(..).map(|j| j())))
        } else {
            // In memory: no group commit; each operation commits by itself.
            finishers.extend(jobs.drain(..).map(|j| j()));
            None
        };
        drop(inner);
        for f in finishers {
            f(failure.clone());
        }
    }
}
