//! Concurrent callers sharing one call: group commit inside the engine.
//!
//! Many runners finish webhook attempts at the same time, and each has to read its delivery
//! before the call and record the outcome after it. Done one by one, that is a transaction (and
//! on PostgreSQL several round trips) per attempt, and the database, not the receivers, sets
//! the pace. A [`Batcher`] lets them share: a caller that finds no batch running leads one with
//! every item queued so far (its own among them) and hands each caller its result; callers that
//! arrive meanwhile queue up for the next batch, which one of them leads. So a lone caller runs
//! at once (no waiting for company), and under load a batch holds whatever arrived while the
//! previous one ran.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};

pub(crate) struct Batcher<I, O> {
    state: Mutex<State<I, O>>,
    changed: Condvar,
    /// Most items one batch takes (a statement per batch stays a reasonable size).
    max: usize,
}

struct State<I, O> {
    /// Items waiting for a batch, by ticket, in arrival order.
    queue: Vec<(u64, I)>,
    /// Results not yet picked up by their callers, by ticket.
    done: HashMap<u64, O>,
    /// Whether a batch is running now.
    running: bool,
    next_ticket: u64,
}

impl<I, O> Batcher<I, O> {
    pub(crate) fn new(max: usize) -> Self {
        Batcher {
            state: Mutex::new(State {
                queue: Vec::new(),
                done: HashMap::new(),
                running: false,
                next_ticket: 0,
            }),
            changed: Condvar::new(),
            max: max.max(1),
        }
    }

    /// Runs `item` in a batch with what other callers submit meanwhile, and returns its result.
    /// `run` gets the items of one batch and returns their results in the same order; when it
    /// panics (or returns too few), the items without a result get `failed()`. Whichever caller
    /// leads a batch runs it on its own thread.
    pub(crate) fn run(&self, item: I, run: impl Fn(Vec<I>) -> Vec<O>, failed: impl Fn() -> O) -> O {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push((ticket, item));
        loop {
            if let Some(out) = st.done.remove(&ticket) {
                return out;
            }
            if st.running {
                st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            // Nobody leads: this caller runs the next batch (its own item is in the queue, as
            // no batch has taken it yet; if the queue is longer than a batch, it may lead one
            // without it and then the next).
            let n = st.queue.len().min(self.max);
            let (tickets, items): (Vec<u64>, Vec<I>) = st.queue.drain(..n).unzip();
            st.running = true;
            drop(st);
            let outs = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(items))).unwrap_or_default();
            st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            let mut outs = outs.into_iter();
            for t in tickets {
                let out = outs.next().unwrap_or_else(&failed);
                st.done.insert(t, out);
            }
            st.running = false;
            self.changed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_lone_caller_runs_its_item_at_once() {
        let b = Batcher::new(10);
        assert_eq!(b.run(3, |xs: Vec<i32>| xs.iter().map(|x| x * 2).collect(), || -1), 6);
    }

    /// Callers that arrive while a batch runs share the next one, and each gets its own result.
    #[test]
    fn concurrent_callers_share_batches_and_get_their_own_results() {
        let b = Arc::new(Batcher::new(1000));
        let batches = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..32)
            .map(|i| {
                let (b, batches) = (b.clone(), batches.clone());
                std::thread::spawn(move || {
                    b.run(
                        i,
                        |xs: Vec<usize>| {
                            batches.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            xs.iter().map(|x| x * 10).collect()
                        },
                        || usize::MAX,
                    )
                })
            })
            .collect();
        let outs: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(outs, (0..32).map(|i| i * 10).collect::<Vec<_>>());
        let n = batches.load(Ordering::SeqCst);
        assert!(n < 32, "{n} batches for 32 callers that arrived while batches ran");
    }

    /// A batch that panics or answers too few gives its items the failure result, and the next
    /// batch runs normally.
    #[test]
    fn a_failed_batch_answers_failure_and_the_next_one_runs() {
        let b = Batcher::new(10);
        assert_eq!(b.run(1, |_: Vec<i32>| panic!("boom"), || -1), -1);
        assert_eq!(b.run(1, |_: Vec<i32>| vec![], || -1), -1);
        assert_eq!(b.run(4, |xs: Vec<i32>| xs, || -1), 4);
    }

    /// No batch takes more than `max` items.
    #[test]
    fn batches_are_capped() {
        let b = Arc::new(Batcher::new(3));
        let biggest = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..20)
            .map(|i| {
                let (b, biggest) = (b.clone(), biggest.clone());
                std::thread::spawn(move || {
                    b.run(
                        i,
                        |xs: Vec<usize>| {
                            biggest.fetch_max(xs.len(), Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(5));
                            xs
                        },
                        || usize::MAX,
                    )
                })
            })
            .collect();
        for (i, t) in threads.into_iter().enumerate() {
            assert_eq!(t.join().unwrap(), i);
        }
        assert!(biggest.load(Ordering::SeqCst) <= 3);
    }
}
