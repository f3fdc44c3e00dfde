//! Card testing: failed pay attempts are limited per target (a payment link or an invoice) and
//! client address. The count lives in the store ([`PaymentTx::record_failed_pay_attempt`]), so
//! the processes of one deployment share it; the window runs on the organization's clock (the
//! sandbox clock moves it). At most [`MAX_FAILED`] attempts that the gateway refused within
//! [`WINDOW`]; the next attempt is refused (429 `RATE_LIMITED`) before anything is written or
//! charged, until the oldest of them leaves the window.

use crate::clock::Timestamp;
use crate::error::{Code, Error, Result};
use crate::store::Tx;
use chrono::Duration;

/// Failed attempts allowed per target and client within [`WINDOW`].
pub const MAX_FAILED: u64 = 5;
/// How long a failed attempt counts.
pub const WINDOW: Duration = Duration::minutes(15);

/// What the payer is told (English, then Arabic: the endpoint does not know the page's
/// language; the hosted page shows its own words for `RATE_LIMITED`).
pub const MESSAGE: &str = "Too many failed payment attempts: try again in 15 minutes. \
محاولات دفع فاشلة كثيرة: حاول مرة أخرى بعد 15 دقيقة.";

/// The limit's key of a link's attempts.
pub fn link_target(id: crate::ids::PaymentLinkId) -> String {
    format!("link:{id}")
}

/// The limit's key of an invoice's attempts.
pub fn invoice_target(id: crate::ids::InvoiceId) -> String {
    format!("invoice:{id}")
}

/// Refuses an attempt from `client` on `target` once it failed `allowed` times (the
/// [`crate::engine::Engine`]'s setting, [`MAX_FAILED`] by default) within the window. No client
/// address (an embedding with no connection): no limit.
pub(crate) fn check(tx: &mut dyn Tx, target: &str, client: &str, allowed: u64, now: Timestamp) -> Result<()> {
    if client.is_empty() {
        return Ok(());
    }
    if tx.count_failed_pay_attempts(target, client, now - WINDOW)? >= allowed {
        return Err(Error::rule(Code::RATE_LIMITED, MESSAGE));
    }
    Ok(())
}

/// Counts one failed attempt (in the transaction that records the failure), forgetting the ones
/// of the same target and client that left the window.
pub(crate) fn record_failure(tx: &mut dyn Tx, target: &str, client: &str, now: Timestamp) -> Result<()> {
    if client.is_empty() {
        return Ok(());
    }
    Ok(tx.record_failed_pay_attempt(target, client, now, now - WINDOW)?)
}
