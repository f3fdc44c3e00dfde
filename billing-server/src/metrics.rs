//! `GET /metrics`: the process's numbers in the Prometheus text format (0.0.4), kept by hand
//! (a few counters and one histogram family do not need a metrics framework):
//!
//! - `billing_http_requests_total{method, route, status}` and
//!   `billing_http_request_duration_seconds{route}` (a histogram), counted by [`crate::handle`]
//!   under the route template (never a path with ids);
//! - `billing_due_work_items{kind}`, `billing_due_work_due{kind}`, `billing_due_work_leased{kind}`
//!   and `billing_due_work_lag_seconds{kind}`, read from the store at each scrape (every
//!   organization; due in each organization's time);
//! - `billing_webhook_attempts_total{result}` (`delivered`, `http_error`, `error`), counted by
//!   the webhook transport of this process;
//! - `billing_notification_attempts_total{channel, result}` (`email`, `sms`, `whatsapp`;
//!   `sent`, `retry`, `refused`), counted by this process's notification senders;
//! - SQLite: `billing_sqlite_transactions_total` and `billing_sqlite_commits_total` (their ratio
//!   is the group-commit batch size); PostgreSQL: `billing_db_pool_connections{state}` and
//!   `billing_db_pool_max_connections`.
//!
//! It holds no organization's data (kinds and counts only), but it shows the whole process's
//! load, so it is off unless the operator sets a token (`--metrics-token`), which a scrape sends
//! as `Authorization: Bearer <token>` (compared in constant time; 401 otherwise). Every label
//! has a bounded set of values whatever clients send: a method outside the standard ones counts
//! as `other`, an unrouted path as the route `other`.

use crate::backend::Backend;
use crate::App;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// Whether a scrape may read the metrics: only with the configured token (`None`: `/metrics` is
/// off and answers as an unknown route does).
pub fn authorize(token: Option<&str>, headers: &hyper::HeaderMap) -> Result<(), billing_core::error::Error> {
    use billing_core::error::{Code, Error};
    let Some(token) = token else {
        return Err(Error::rule(
            Code::NOT_FOUND,
            "no route for /metrics (it is off: start the server with --metrics-token)",
        ));
    };
    let sent = headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if bool::from(sent.as_bytes().ct_eq(token.as_bytes())) {
        Ok(())
    } else {
        Err(Error::unauthorized("GET /metrics needs the metrics token: Authorization: Bearer <token>"))
    }
}

/// The method as a label: one of the standard methods, or `other` (a client can send any
/// token as a method; each must not become a series).
fn method_label(method: &str) -> &str {
    match method {
        "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS" => method,
        _ => "other",
    }
}

/// Upper bounds (seconds) of the request-duration histogram.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Default)]
struct Histogram {
    /// Cumulative counts per bucket of [`BUCKETS`].
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// The request metrics of one server (an [`App`]).
#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    durations: Mutex<BTreeMap<String, Histogram>>,
}

impl Metrics {
    /// Counts one answered request.
    pub fn record(&self, method: &str, route: &str, status: u16, took: Duration) {
        *self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((method_label(method).to_string(), route.to_string(), status))
            .or_default() += 1;
        let secs = took.as_secs_f64();
        let mut d = self.durations.lock().unwrap_or_else(|p| p.into_inner());
        let h = d.entry(route.to_string()).or_default();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                h.buckets[i] += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }
}

/// Webhook attempts of this process by result: delivered (2xx), http_error (another status),
/// error (no answer: refused, time-out, TLS).
pub static WEBHOOK_ATTEMPTS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
const WEBHOOK_RESULTS: [&str; 3] = ["delivered", "http_error", "error"];

/// Counts one webhook attempt by its answer's status (`None`: no answer).
pub fn count_webhook_attempt(status: Option<u16>) {
    let i = match status {
        Some(s) if (200..300).contains(&s) => 0,
        Some(_) => 1,
        None => 2,
    };
    WEBHOOK_ATTEMPTS[i].fetch_add(1, Ordering::Relaxed);
}

/// A label value, escaped as the text format wants.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The text of a scrape. The queue is read from the store (an error there is reported as
/// `billing_due_work_scrape_error 1` rather than failing the scrape).
pub fn render(app: &App) -> String {
    let mut out = String::new();
    let m = &app.metrics;
    out.push_str("# HELP billing_http_requests_total Requests answered, by method, route template and status.\n");
    out.push_str("# TYPE billing_http_requests_total counter\n");
    for ((method, route, status), n) in m.requests.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        let _ = writeln!(
            out,
            "billing_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
            label(method),
            label(route)
        );
    }
    out.push_str("# HELP billing_http_request_duration_seconds Time to answer a request, by route template.\n");
    out.push_str("# TYPE billing_http_request_duration_seconds histogram\n");
    for (route, h) in m.durations.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        let r = label(route);
        for (i, bound) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "billing_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"{bound}\"}} {}",
                h.buckets[i]
            );
        }
        let _ = writeln!(out, "billing_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(out, "billing_http_request_duration_seconds_sum{{route=\"{r}\"}} {}", h.sum);
        let _ = writeln!(out, "billing_http_request_duration_seconds_count{{route=\"{r}\"}} {}", h.count);
    }
    match app.billing.engine().work_queue_depths() {
        Ok(depths) => {
            for (name, help, kind) in [
                ("billing_due_work_items", "Items of the due-work queue, due or not.", "gauge"),
                (
                    "billing_due_work_due",
                    "Items due (in their organization's time) that no runner holds.",
                    "gauge",
                ),
                ("billing_due_work_leased", "Items held by a runner.", "gauge"),
                ("billing_due_work_lag_seconds", "How long the longest-waiting due item has been due.", "gauge"),
            ] {
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
                for d in &depths {
                    let value = match name {
                        "billing_due_work_items" => d.items.to_string(),
                        "billing_due_work_due" => d.due.to_string(),
                        "billing_due_work_leased" => d.leased.to_string(),
                        _ => format!("{}", d.lag_us as f64 / 1e6),
                    };
                    let _ = writeln!(out, "{name}{{kind=\"{}\"}} {value}", label(&d.kind));
                }
            }
            out.push_str("# TYPE billing_due_work_scrape_error gauge\nbilling_due_work_scrape_error 0\n");
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics: the due-work queue could not be read");
            out.push_str("# TYPE billing_due_work_scrape_error gauge\nbilling_due_work_scrape_error 1\n");
        }
    }
    out.push_str("# HELP billing_webhook_attempts_total Webhook attempts of this process, by result.\n");
    out.push_str("# TYPE billing_webhook_attempts_total counter\n");
    for (i, result) in WEBHOOK_RESULTS.iter().enumerate() {
        let _ = writeln!(
            out,
            "billing_webhook_attempts_total{{result=\"{result}\"}} {}",
            WEBHOOK_ATTEMPTS[i].load(Ordering::Relaxed)
        );
    }
    out.push_str("# HELP billing_notification_attempts_total Customer notification attempts of this process, by channel and result.\n");
    out.push_str("# TYPE billing_notification_attempts_total counter\n");
    for (c, channel) in crate::notify::CHANNELS.iter().enumerate() {
        for (r, result) in crate::notify::RESULTS.iter().enumerate() {
            let _ = writeln!(
                out,
                "billing_notification_attempts_total{{channel=\"{channel}\",result=\"{result}\"}} {}",
                crate::notify::ATTEMPTS[c][r].load(Ordering::Relaxed)
            );
        }
    }
    match &app.billing.engine().store {
        Backend::Sqlite(s) => {
            let (txs, commits) = s.commit_stats();
            let _ = writeln!(
                out,
                "# HELP billing_sqlite_transactions_total Write transactions committed.\n# TYPE billing_sqlite_transactions_total counter\nbilling_sqlite_transactions_total {txs}\n\
                 # HELP billing_sqlite_commits_total Commits (fsyncs) of the group-commit writer.\n# TYPE billing_sqlite_commits_total counter\nbilling_sqlite_commits_total {commits}"
            );
        }
        Backend::Postgres(s, _) => {
            let (open, idle, max) = s.pool_use();
            let _ = writeln!(
                out,
                "# HELP billing_db_pool_connections Pooled PostgreSQL connections, by state.\n# TYPE billing_db_pool_connections gauge\n\
                 billing_db_pool_connections{{state=\"idle\"}} {idle}\nbilling_db_pool_connections{{state=\"in_use\"}} {}\n\
                 # HELP billing_db_pool_max_connections Most connections the pool opens.\n# TYPE billing_db_pool_max_connections gauge\nbilling_db_pool_max_connections {max}",
                open.saturating_sub(idle)
            );
        }
    }
    out
}
