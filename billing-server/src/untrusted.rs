//! Request bodies nobody vouches for: those of the public endpoints (the pay endpoints, accepting
//! an invitation) and of `/mcp` (whose credential is checked inside the exchange). Anyone on the
//! internet can send them, so reading them must not let a client hold what other clients need:
//!
//! - a small size limit ([`PUBLIC_BODY_LIMIT`]; a pay attempt's body is a few hundred bytes) and
//!   a shorter time limit ([`PUBLIC_BODY_TIMEOUT`]);
//! - a budget of bytes in flight for all of them together ([`BUDGET`]): past it, a new one is
//!   answered 503 at once instead of being buffered;
//! - while such a body is read, its connection can be closed to admit a new one when the
//!   connection cap is reached ([`crate::connections::Mark::reading_untrusted_body`]).

use crate::connections::{Mark, UntrustedBody};
use crate::http::{read_request, Incoming2, ReadError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Largest unauthenticated body, in bytes (or `--body-limit` when smaller).
pub const PUBLIC_BODY_LIMIT: usize = 64 * 1024;
/// How long an unauthenticated body may take to arrive (or `--body-timeout-ms` when shorter).
pub const PUBLIC_BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of unauthenticated bodies being read at once, in all, per process.
pub const BUDGET: usize = 32 * 1024 * 1024;

/// The bytes of unauthenticated bodies being read (see [`BUDGET`]).
#[derive(Default)]
pub struct Budget(Arc<AtomicUsize>);

/// A share of the [`Budget`], given back when dropped.
pub struct Reservation(Arc<AtomicUsize>, usize);

impl Drop for Reservation {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::AcqRel);
    }
}

impl Budget {
    /// Reserves `bytes`, or `None` when that would pass [`BUDGET`].
    pub fn reserve(&self, bytes: usize) -> Option<Reservation> {
        let mut used = self.0.load(Ordering::Acquire);
        loop {
            if used + bytes > BUDGET {
                return None;
            }
            match self.0.compare_exchange_weak(used, used + bytes, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(Reservation(self.0.clone(), bytes)),
                Err(now) => used = now,
            }
        }
    }
}

/// Why an unauthenticated body was not read.
pub enum Refused {
    /// Too many bytes of such bodies are being read: 503.
    Busy,
    Read(ReadError),
}

/// The limits of an unauthenticated body under the server's own.
pub fn limits(body_limit: usize, body_timeout: Duration) -> (usize, Duration) {
    (PUBLIC_BODY_LIMIT.min(body_limit), PUBLIC_BODY_TIMEOUT.min(body_timeout))
}

/// What an unauthenticated body holds while it is read: its share of the [`Budget`] and its
/// connection's pushable mark.
pub struct Admitted {
    _share: Option<Reservation>,
    _pushable: Option<UntrustedBody>,
}

/// Admits an unauthenticated body of a request with `headers` under `limit`: its announced
/// length (or the limit, for a chunked body) is reserved, and its connection is pushable until
/// the [`Admitted`] is dropped. Refused when it announces more than the limit (413) or the
/// budget is spent (503).
pub fn admit(budget: &Budget, mark: Option<&Mark>, headers: &hyper::HeaderMap, body: &hyper::body::Incoming, limit: usize) -> Result<Admitted, Refused> {
    let announced = headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if announced.is_some_and(|n| n > limit) {
        return Err(Refused::Read(ReadError::TooLarge));
    }
    if hyper::body::Body::is_end_stream(body) {
        return Ok(Admitted { _share: None, _pushable: None });
    }
    let share = budget.reserve(announced.unwrap_or(limit)).ok_or(Refused::Busy)?;
    Ok(Admitted {
        _share: Some(share),
        _pushable: mark.map(Mark::reading_untrusted_body),
    })
}

/// Reads an unauthenticated request under [`limits`], [`admit`]ted first.
pub async fn read(
    budget: &Budget,
    mark: Option<&Mark>,
    parts: hyper::http::request::Parts,
    body: hyper::body::Incoming,
    (limit, timeout): (usize, Duration),
) -> Result<Incoming2, Refused> {
    let _admitted = admit(budget, mark, &parts.headers, &body, limit)?;
    read_request(parts, body, limit, timeout).await.map_err(Refused::Read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_shared_and_given_back() {
        let b = Budget::default();
        let first = b.reserve(BUDGET - 10).unwrap();
        assert!(b.reserve(11).is_none());
        let second = b.reserve(10).unwrap();
        drop(first);
        assert!(b.reserve(BUDGET - 10).is_some());
        drop(second);
        assert!(b.reserve(BUDGET).is_some());
    }
}
