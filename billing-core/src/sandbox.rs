//! The sandbox test clock. A sandbox organization's time is the server clock plus an offset
//! that only grows; advancing it runs the organization's work that fell due on the way before
//! the call answers.

use crate::auth::Scope;
use crate::clock::{parse_datetime, Timestamp};
use crate::engine::Billing;
use crate::error::{Code, Error, FieldError, Result};
use crate::store::Store;
use crate::wire::Body;
use chrono::Duration;
use serde_json::Value;

/// The most due-work items one clock advance runs before it answers.
pub const MAX_WORK_PER_ADVANCE: usize = 100_000;

/// How far to move the test clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    By(Duration),
    To(Timestamp),
}

impl Advance {
    /// `{"seconds": N}` (N ≥ 0) or `{"to": "<date-time>"}`, exactly one of them.
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let seconds = b.opt_int("seconds");
        let to = b.opt_str("to");
        let parsed_to = to.as_deref().map(parse_datetime);
        if parsed_to == Some(None) {
            b.fail("datetime_parsing", "to", "Input should be a valid datetime");
        }
        if let Some(s) = seconds {
            if s < 0 {
                b.fail(
                    "greater_than_equal",
                    "seconds",
                    "Input should be greater than or equal to 0 (the clock never goes back)",
                );
            }
            if s > 100 * 366 * 24 * 3600 {
                b.fail("less_than_equal", "seconds", "Input should be at most a century");
            }
        }
        match (seconds.is_some(), to.is_some()) {
            (false, false) if b.problems.is_empty() => b.fail("missing", "seconds", "Give either 'seconds' or 'to'"),
            (true, true) => b.fail("value_error", "to", "Value error, give either 'seconds' or 'to', not both"),
            _ => {}
        }
        b.finish()?;
        Ok(match (seconds, parsed_to.flatten()) {
            (Some(s), _) => Advance::By(Duration::seconds(s)),
            (_, Some(t)) => Advance::To(t),
            _ => unreachable!("checked above"),
        })
    }
}

impl<S: Store> Billing<S> {
    fn require_sandbox(scope: &Scope) -> Result<()> {
        if !scope.org.sandbox {
            return Err(Error::rule(Code::SANDBOX_ONLY, "the test clock exists only for sandbox organizations"));
        }
        Ok(())
    }

    /// The organization's test-clock time.
    pub fn sandbox_clock(&self, scope: &Scope) -> Result<Timestamp> {
        Self::require_sandbox(scope)?;
        Ok(self.now(scope))
    }

    /// Moves the test clock forward (never back), then runs the organization's work that fell
    /// due (webhook fan-out and deliveries, …) before returning the new time. The clock moves in
    /// one transaction; the due work runs afterwards, each item in its own transactions, with
    /// no transaction open during its HTTP calls. Work that falls due again on the way (a
    /// retry 5 minutes after an attempt made during the advance) waits for the next advance.
    pub fn advance_sandbox_clock(&self, scope: &Scope, by: Advance) -> Result<Timestamp> {
        let target = self.move_sandbox_clock(scope, by)?;
        self.run_due_work(Some(scope.org_id()), MAX_WORK_PER_ADVANCE)?;
        Ok(target)
    }

    fn move_sandbox_clock(&self, scope: &Scope, by: Advance) -> Result<Timestamp> {
        Self::require_sandbox(scope)?;
        let server_now = self.clock().now();
        self.store.write(|tx| {
            // Re-read the offset inside the transaction: another request may have moved it.
            let mut org = tx.org(scope.org_id())?.ok_or_else(|| Error::not_found("Organization", scope.org_id()))?;
            let current = server_now + Duration::microseconds(org.clock_offset_us);
            let target = match by {
                Advance::By(d) => current + d,
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
            org.clock_offset_us = (target - server_now).num_microseconds().unwrap_or(i64::MAX);
            tx.update_org(&org)?;
            Ok(target)
        })
    }
}
