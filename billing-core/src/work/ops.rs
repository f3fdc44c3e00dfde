//! Running due work: claim what is due, hand each item to its kind's [`Handler`], report.

use super::{DueWork, Handler, WorkReport, DEFAULT_LEASE};

/// How many items of due work one run makes side by side (webhook attempts: HTTP calls).
pub const WORK_PARALLELISM: usize = 16;
use crate::engine::Engine;
use crate::error::{Error, Result, StoreError};
use crate::ids::OrgId;
use crate::store::Store;
use chrono::Duration;

/// Whether `e` says that a claim's lease was lost: not a failure, another process has the item.
pub(crate) fn is_lease_lost(e: &Error) -> bool {
    matches!(e, Error::Store(StoreError::LeaseLost(_)))
}

impl<S: Store> Engine<S> {
    /// The queue's depth and lag by kind, for monitoring (no scope: it is the process's view
    /// of every organization, served to the operator, never to an API caller).
    pub fn work_queue_depths(&self) -> Result<Vec<super::QueueDepth>> {
        let now = self.clock().now();
        self.store.read(|tx| Ok(tx.work_queue_depths(now)?))
    }

    /// The kinds of due work this engine can run now.
    pub fn work_kinds(&self) -> Vec<&'static str> {
        self.work_handlers().iter().filter(|h| (h.ready)(self)).map(|h| h.kind).collect()
    }

    /// Claims due work of `kinds` (of one organization or all) with a lease of `lease`.
    pub fn claim_due_work(&self, org: Option<OrgId>, kinds: &[&str], lease: Duration, limit: u32) -> Result<Vec<DueWork>> {
        self.claim_due(org, kinds, lease, limit, true)
    }

    /// [`Self::claim_due_work`] for a caller that has just seen due work (its last claim came
    /// back full): it claims at once, without first asking whether anything is due. That
    /// question saves a write transaction when the queue is idle, but on a busy queue it only
    /// costs a statement, and on PostgreSQL one that walks every due item in flight.
    pub fn claim_more_due_work(&self, org: Option<OrgId>, kinds: &[&str], lease: Duration, limit: u32) -> Result<Vec<DueWork>> {
        self.claim_due(org, kinds, lease, limit, false)
    }

    fn claim_due(&self, org: Option<OrgId>, kinds: &[&str], lease: Duration, limit: u32, probe: bool) -> Result<Vec<DueWork>> {
        let now = self.clock().now();
        // One statement: no transaction needed for it (`Store::read_one`).
        if probe && !self.store.read_one(|tx| Ok(tx.due_work_exists(org, kinds, now)?))? {
            return Ok(vec![]);
        }
        self.store.write_leased(|tx| Ok(tx.claim_due_work(org, kinds, now, now + lease, limit)?))
    }

    /// Claims due work for a worker with `runners` runners of which `busy` says how many each
    /// organization holds. Organizations holding half the runners or more are passed over while
    /// any other organization has due work, then get what is left: one organization's slow
    /// receivers can hold up another's items by at most the time one attempt takes (until a
    /// runner frees), never by its whole backlog. With one organization, it gets every runner.
    /// `seen_due`: the caller's last claim came back full (see [`Self::claim_more_due_work`]).
    pub fn claim_due_work_fairly(
        &self,
        kinds: &[&str],
        lease: Duration,
        limit: u32,
        runners: usize,
        busy: &std::collections::HashMap<OrgId, usize>,
        seen_due: bool,
    ) -> Result<Vec<DueWork>> {
        let share = (runners / 2).max(1);
        let heavy: Vec<OrgId> = busy.iter().filter(|(_, n)| **n >= share).map(|(o, _)| *o).collect();
        if heavy.is_empty() {
            return self.claim_due(None, kinds, lease, limit, !seen_due);
        }
        let now = self.clock().now();
        let mut claimed = self
            .store
            .write_leased(|tx| Ok(tx.claim_due_work_except(&heavy, kinds, now, now + lease, limit)?))?;
        let left = limit.saturating_sub(claimed.len() as u32);
        if left > 0 {
            claimed.extend(self.claim_due(None, kinds, lease, left, !seen_due)?);
        }
        Ok(claimed)
    }

    /// Splits claimed items into jobs, each for one runner: the items of a batched kind
    /// together, every other item alone.
    pub fn work_jobs(&self, items: Vec<DueWork>) -> Vec<Vec<DueWork>> {
        let mut batches: Vec<(&'static str, Vec<DueWork>)> = Vec::new();
        let mut alone = Vec::new();
        for item in items {
            match self.work_handlers().iter().find(|h| h.kind == item.kind && h.batched) {
                Some(h) => match batches.iter_mut().find(|(k, _)| *k == h.kind) {
                    Some((_, b)) => b.push(item),
                    None => batches.push((h.kind, vec![item])),
                },
                None => alone.push(vec![item]),
            }
        }
        batches.into_iter().map(|(_, b)| b).chain(alone).collect()
    }

    /// Runs claimed items with their kinds' handlers, in registry order. The items of a kind
    /// that runs each item alone run side by side, at most [`WORK_PARALLELISM`] at a time: a
    /// claim costs about its slowest item (one webhook time-out), not the sum of them.
    pub fn run_work(&self, items: &[DueWork], report: &mut WorkReport) {
        for h in self.work_handlers() {
            let mine: Vec<&DueWork> = items.iter().filter(|i| i.kind == h.kind).collect();
            if mine.is_empty() {
                continue;
            }
            if h.batched || mine.len() == 1 {
                (h.run)(self, &mine, report);
                continue;
            }
            let next = std::sync::atomic::AtomicUsize::new(0);
            let threads = mine.len().min(WORK_PARALLELISM);
            let reports: Vec<WorkReport> = std::thread::scope(|s| {
                let runners: Vec<_> = (0..threads)
                    .map(|_| {
                        s.spawn(|| {
                            let mut r = WorkReport::default();
                            loop {
                                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                let Some(item) = mine.get(k) else { return r };
                                (h.run)(self, &[*item], &mut r);
                            }
                        })
                    })
                    .collect();
                // A runner that panicked counts its item as failed; the others go on.
                runners
                    .into_iter()
                    .map(|t| {
                        t.join().unwrap_or_else(|_| WorkReport {
                            errors: 1,
                            ..Default::default()
                        })
                    })
                    .collect()
            });
            for r in reports {
                report.merge(r);
            }
        }
    }

    /// Claims and runs the due work of one organization (or all) until none is due, at most
    /// `max_items` items. No transaction is open during outside calls. An item that fails is
    /// counted in [`WorkReport::errors`] and left to its lease (it runs again later).
    pub fn run_due_work(&self, org: Option<OrgId>, max_items: usize) -> Result<WorkReport> {
        let mut report = WorkReport::default();
        let kinds = self.work_kinds();
        while report.claimed < max_items {
            let batch = (max_items - report.claimed).min(64) as u32;
            let items = self.claim_due_work(org, &kinds, self.work_lease(), batch)?;
            if items.is_empty() {
                break;
            }
            report.claimed += items.len();
            self.run_work(&items, &mut report);
        }
        Ok(report)
    }

    /// How long a claim of due work holds: the longest outside call (the webhook time-out)
    /// plus a margin, so that an item in flight is never claimed by another process.
    /// (Or a notification sender's time-out, when longer.)
    pub fn work_lease(&self) -> Duration {
        let senders = self.notification_timeout();
        match self.webhook_transport() {
            Some(t) => Duration::from_std(t.timeout().max(senders) + t.lease_margin()).unwrap_or(DEFAULT_LEASE),
            None => DEFAULT_LEASE.max(Duration::from_std(senders + std::time::Duration::from_secs(30)).unwrap_or(DEFAULT_LEASE)),
        }
    }

    pub(crate) fn work_handlers(&self) -> &[Handler<Engine<S>>] {
        &self.work
    }
}
