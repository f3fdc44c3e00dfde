//! Test-clock operations: read the clock, advance it (running the work that falls due on the
//! way).

use super::{Advance, MAX_STOPS_PER_ADVANCE, MAX_WORK_PER_ADVANCE};
use crate::auth::Scope;
use crate::clock::Timestamp;
use crate::error::{Code, Error, FieldError, Result};
use crate::lane::Lane;
use crate::store::Store;
use chrono::Duration;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const CLOCK: Lane = Lane::Read;
    /// Runs the due work on the way, webhook deliveries among it.
    pub const ADVANCE: Lane = Lane::Io;
}

/// How often an advance looks again while work it waits for is in flight.
const IN_FLIGHT_POLL: std::time::Duration = std::time::Duration::from_millis(5);
/// A stop of the clock also takes in what falls due within this much after it, so that items
/// due together run together: retries of attempts that started a few milliseconds apart would
/// otherwise each make a stop of their own, and a stop costs one round of attempts.
const STOP_GATHERS: Duration = Duration::seconds(1);

fn require_sandbox(scope: &Scope) -> Result<()> {
    if !scope.org.sandbox {
        return Err(Error::rule(Code::SANDBOX_ONLY, "the test clock exists only for sandbox organizations"));
    }
    Ok(())
}

crate::service!(
    /// The sandbox test clock: read it, advance it.
    Sandbox
);

impl<S: Store> Sandbox<'_, S> {
    /// The organization's test-clock time.
    pub fn clock(&self, scope: &Scope) -> Result<Timestamp> {
        require_sandbox(scope)?;
        Ok(self.now(scope))
    }

    /// Moves the test clock forward (never back) and runs the organization's work that falls
    /// due on the way, at its own time: the clock stops at each due time before the target
    /// (earliest first), runs what is due there, and goes on. So work that falls due again
    /// during the advance (a webhook retry 5 minutes after an attempt, the next billing cycle)
    /// runs as it would have in real time, and one advance of a year replays a year. Each stop
    /// and each item runs in its own transactions, with no transaction open during HTTP calls.
    /// Returns the time this advance moved the clock to.
    ///
    /// Only organization admins advance it: the clock is the whole organization's, and an
    /// advance runs every branch's due work.
    pub fn advance(&self, scope: &Scope, by: Advance) -> Result<Timestamp> {
        require_sandbox(scope)?;
        if scope.actor.role != crate::org::Role::OrganizationAdmin {
            return Err(Error::forbidden("only organization admins advance the test clock"));
        }
        let org = scope.org_id();
        let target = self.reserve_advance(scope, by)?;
        let mut budget = MAX_WORK_PER_ADVANCE;
        let mut stops = 0;
        let mut progress = Progress::new(self.advance_progress(), org, target);
        // Items in flight (claimed by the background worker or another process) are waited for,
        // so that what they schedule next also runs at its own time; at most one lease long,
        // after which the item is free again and runs here.
        let longest_wait = self.work_lease().to_std().unwrap_or_default() + std::time::Duration::from_secs(1);
        let mut waiting_since = None;
        let kinds = self.work_kinds();
        while stops < MAX_STOPS_PER_ADVANCE && budget > 0 {
            let ran = self.run_due_work(Some(org), budget)?.claimed;
            budget = budget.saturating_sub(ran);
            let server_now = self.engine.clock().now();
            let times = self.store.read(|tx| Ok(tx.work_due_times(org, &kinds, server_now)?))?;
            if times.first_held.is_some_and(|t| t <= target) {
                let since = *waiting_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() < longest_wait {
                    std::thread::sleep(IN_FLIGHT_POLL);
                    continue;
                }
            }
            waiting_since = None;
            let at = match times.next_free {
                Some(t) if t <= target => (t + STOP_GATHERS).min(target),
                _ => break,
            };
            self.move_clock_forward(scope, at)?;
            stops += 1;
            progress.stop(at, stops, ran);
        }
        self.move_clock_forward(scope, target)?;
        let ran = self.run_due_work(Some(org), budget)?.claimed;
        progress.done(stops, ran);
        // The clock is the organization's: when the advance answers, every process uses it.
        self.store.await_auth_propagation();
        Ok(target)
    }

    /// Works out the advance's target and records it as the organization's farthest target in
    /// one transaction. `By` counts from the farthest target of an advance under way, if any
    /// (else from the clock), so that concurrent advances add up; an advance cut short by a
    /// crash is completed by the next one.
    fn reserve_advance(&self, scope: &Scope, by: Advance) -> Result<Timestamp> {
        let server_now = self.engine.clock().now();
        self.store.write(|tx| {
            let mut org = tx.org(scope.org_id())?.ok_or_else(|| Error::not_found("Organization", scope.org_id()))?;
            let current = server_now + Duration::microseconds(org.clock_offset_us);
            let target = match by {
                Advance::By(d) => org.clock_advancing_to.map_or(current, |a| a.max(current)) + d,
                Advance::To(t) => t,
            };
            if target < current {
                return Err(Error::invalid(FieldError::body(
                    "value_error",
                    "to",
                    format!(
                        "Value error, the test clock is at {} and never goes back",
                        crate::clock::format_rfc3339(&current)
                    ),
                )));
            }
            if !matches!(org.clock_advancing_to, Some(a) if a >= target) {
                org.clock_advancing_to = Some(target);
                tx.update_org(&org)?;
            }
            Ok(target)
        })
    }

    /// Sets the clock to `to` unless it is already later (another request may have moved it);
    /// returns the clock's time.
    fn move_clock_forward(&self, scope: &Scope, to: Timestamp) -> Result<Timestamp> {
        let server_now = self.engine.clock().now();
        self.store.write(|tx| {
            // Re-read the offset inside the transaction: another request may have moved it.
            let mut org = tx.org(scope.org_id())?.ok_or_else(|| Error::not_found("Organization", scope.org_id()))?;
            let current = server_now + Duration::microseconds(org.clock_offset_us);
            if to <= current {
                return Ok(current);
            }
            org.clock_offset_us = (to - server_now).num_microseconds().unwrap_or(i64::MAX);
            tx.update_org(&org)?;
            Ok(to)
        })
    }
}

/// Reports an advance's progress now and then (see [`crate::engine::Engine::set_advance_progress`]).
struct Progress {
    reporter: Option<(std::time::Duration, crate::sandbox::ProgressReporter)>,
    report: crate::sandbox::AdvanceProgress,
    started: std::time::Instant,
    last: std::time::Instant,
    reported: bool,
}

impl Progress {
    fn new(reporter: Option<(std::time::Duration, crate::sandbox::ProgressReporter)>, org: crate::ids::OrgId, target: Timestamp) -> Self {
        let now = std::time::Instant::now();
        Progress {
            reporter,
            report: crate::sandbox::AdvanceProgress {
                org,
                at: target,
                target,
                stops: 0,
                items: 0,
                elapsed: std::time::Duration::ZERO,
                done: false,
            },
            started: now,
            last: now,
            reported: false,
        }
    }

    fn stop(&mut self, at: Timestamp, stops: usize, items: usize) {
        self.report.at = at;
        self.report.stops = stops;
        self.report.items += items;
        if let Some((every, report)) = &self.reporter {
            if self.last.elapsed() >= *every {
                self.report.elapsed = self.started.elapsed();
                report(&self.report);
                self.last = std::time::Instant::now();
                self.reported = true;
            }
        }
    }

    fn done(&mut self, stops: usize, items: usize) {
        self.report.at = self.report.target;
        self.report.stops = stops;
        self.report.items += items;
        self.report.done = true;
        if let (Some((_, report)), true) = (&self.reporter, self.reported) {
            self.report.elapsed = self.started.elapsed();
            report(&self.report);
        }
    }
}
