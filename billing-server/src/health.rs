//! Probes and shutdown: `GET /healthz` (the process answers), `GET /readyz` (the database
//! answers too), neither needing credentials; and the count of requests in flight that a
//! graceful shutdown waits for.

use crate::http::{envelope, json_response, HttpResponse};
use crate::App;
use billing_core::error::Code;
use hyper::StatusCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long `/readyz` waits for the database.
pub const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The answer to a probe path, or `None` for any other path.
pub async fn probe(app: &Arc<App>, path: &str) -> Option<HttpResponse> {
    match path {
        "/healthz" => Some(json_response(StatusCode::OK, &serde_json::json!({"status": "ok"}))),
        "/readyz" => {
            let check = app.clone();
            // A probe must answer quickly: a database that does not answer within the limit
            // (a pool waiting for a connection that cannot be made) is not ready.
            let ready = tokio::time::timeout(READY_TIMEOUT, app.billing.engine().store.blocking(move || check.billing.engine().check_store())).await;
            Some(match ready {
                Ok(Ok(())) => json_response(StatusCode::OK, &serde_json::json!({"status": "ready"})),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "readiness check failed");
                    envelope(Code::SERVICE_UNAVAILABLE, Some("the database does not answer".into()))
                }
                Err(_) => {
                    tracing::warn!(timeout_ms = READY_TIMEOUT.as_millis() as u64, "readiness check timed out");
                    envelope(Code::SERVICE_UNAVAILABLE, Some("the database does not answer".into()))
                }
            })
        }
        _ => None,
    }
}

/// Requests being answered right now (from the moment their head is in until their response
/// is handed to the connection).
#[derive(Debug, Default)]
pub struct InFlight(AtomicUsize);

impl InFlight {
    pub fn start(&self) -> InFlightGuard<'_> {
        self.0.fetch_add(1, Ordering::AcqRel);
        InFlightGuard(self)
    }

    pub fn count(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }

    /// Waits until no request is in flight, or `timeout` has passed; returns how many were
    /// still in flight then.
    pub async fn drained(&self, timeout: Duration) -> usize {
        let until = Instant::now() + timeout;
        while self.count() > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.count()
    }
}

pub struct InFlightGuard<'a>(&'a InFlight);

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::AcqRel);
    }
}
