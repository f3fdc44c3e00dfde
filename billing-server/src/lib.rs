//! billing-server: the public API v2 over HTTP, as a thin hyper 1.x shell around billing-core.

pub mod api;
pub mod backend;
pub mod connections;
pub mod health;
pub mod http;
pub mod idempotency;
pub mod mcp;
pub mod metrics;
pub mod notify;
pub mod openapi;
pub mod router;
pub mod untrusted;
pub mod webhook_transport;
pub mod worker;

pub use webhook_transport::HttpTransport;

use api::{Reply, Request as OpRequest};
use backend::Backend;
use billing_core::auth::Credential;
use billing_core::clock::{Clock, SystemClock};
use billing_core::error::{Code, Error, FieldError};
use billing_core::ids::BranchId;
use billing_core::{Billing, Lane};
use http::{envelope, error_response, json_response, read_request, HttpResponse, ReadError};
use hyper::header::HeaderValue;
use hyper::{Request, StatusCode};
use router::{resolve, resolve_public, PublicRoute, Resolution};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

#[derive(Debug, Clone)]
pub struct Config {
    pub database_url: String,
    pub jwt_secret: String,
    /// Largest accepted request body, in bytes.
    pub body_limit: usize,
    /// The address clients reach the server at (API addresses in webhooks, hosted pages).
    pub public_url: String,
    /// How long one webhook attempt may take (default [`DEFAULT_WEBHOOK_TIMEOUT`]).
    pub webhook_timeout: std::time::Duration,
    /// Whether this process runs the background worker (webhook fan-out and deliveries).
    pub worker: bool,
    /// Pause between polls of the due-work queue when nothing is due.
    pub worker_poll_interval: std::time::Duration,
    /// Due-work items (HTTP calls) the worker runs at the same time.
    pub worker_concurrency: usize,
    /// How much longer than the webhook time-out a claim of due work holds; also how soon the
    /// work of a crashed process is taken over (default [`DEFAULT_WORK_LEASE_MARGIN`]).
    pub work_lease_margin: std::time::Duration,
    /// Most database connections a PostgreSQL pool opens in this process.
    pub database_pool_size: u32,
    /// Extra CA certificates (PEM) trusted for `https://` webhook endpoints, besides the
    /// system's. An unreadable file, or one without a valid certificate, fails [`App::open`].
    pub webhook_ca_file: Option<std::path::PathBuf>,
    /// Lets webhook endpoints point to loopback and private addresses (development and tests).
    pub webhook_allow_private: bool,
    /// Most connections open at once (default [`connections::default_max_connections`]).
    pub max_connections: usize,
    /// How long a client may take to send a request's headers, counted from when its
    /// connection opens or from the previous response (so also the keep-alive idle time-out).
    pub header_timeout: std::time::Duration,
    /// How long a client may take to send a request's body once its headers are in.
    pub body_timeout: std::time::Duration,
    /// What sends customer notifications (SMTP, the SMS provider); nothing by default.
    pub notify: notify::NotifyConfig,
    /// The bearer token `GET /metrics` requires; without one, `/metrics` is off (404).
    pub metrics_token: Option<String>,
}

impl Config {
    /// The defaults, on `database_url`.
    pub fn new(database_url: impl Into<String>) -> Config {
        Config {
            database_url: database_url.into(),
            jwt_secret: String::new(),
            body_limit: DEFAULT_BODY_LIMIT,
            public_url: "http://127.0.0.1:8080".into(),
            webhook_timeout: DEFAULT_WEBHOOK_TIMEOUT,
            worker: true,
            worker_poll_interval: DEFAULT_WORKER_POLL_INTERVAL,
            worker_concurrency: DEFAULT_WORKER_CONCURRENCY,
            work_lease_margin: DEFAULT_WORK_LEASE_MARGIN,
            database_pool_size: DEFAULT_DATABASE_POOL_SIZE,
            webhook_ca_file: None,
            metrics_token: None,
            webhook_allow_private: false,
            max_connections: connections::default_max_connections(),
            header_timeout: connections::DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            notify: Default::default(),
        }
    }

    pub fn limits(&self) -> connections::Limits {
        connections::Limits {
            max_connections: self.max_connections,
            header_timeout: self.header_timeout,
        }
    }
}

/// How often a long sandbox clock advance logs its progress.
pub const ADVANCE_PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);
pub const DEFAULT_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Default PostgreSQL pool size per process.
pub const DEFAULT_DATABASE_POOL_SIZE: u32 = 10;
pub const DEFAULT_WEBHOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
pub const DEFAULT_WORKER_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);
pub const DEFAULT_WORKER_CONCURRENCY: usize = 16;
pub const DEFAULT_WORK_LEASE_MARGIN: std::time::Duration = std::time::Duration::from_secs(30);

/// The memory allocator the server's binaries install (`#[global_allocator]`): mimalloc, whose
/// fast paths are a fraction of glibc malloc's on the many small allocations of a request.
pub type Allocator = mimalloc::MiMalloc;

/// mimalloc returns a thread's freed pages to the OS 10 ms after they empty (its default), and
/// they come back as fresh page faults (each a zeroed 2 MiB page where transparent huge pages
/// apply) the next time that thread allocates. Requests run on many threads, each of which
/// comes back to the writer every few tens of milliseconds, so under load this became a fault
/// per page, per request: `perf` of the paid-attempt benchmark found 13% of the process's CPU
/// in the kernel zeroing pages, most of it under SQLite's statement journal inside the writer.
/// A delay of a second keeps a busy process's pages and still gives memory back when idle.
/// `App::open` calls it; harmless when mimalloc is linked but not the global allocator.
pub fn tune_allocator() {
    // mimalloc's `mi_option_t` (include/mimalloc.h of libmimalloc-sys 0.1.49, mimalloc 2.3):
    // `mi_option_purge_delay` is the 16th option.
    const MI_OPTION_PURGE_DELAY: std::os::raw::c_int = 15;
    extern "C" {
        fn mi_option_set(option: std::os::raw::c_int, value: std::os::raw::c_long);
    }
    // SAFETY: sets one integer option of mimalloc's options table; any value is valid for it.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 1000) };
}

pub struct App {
    pub billing: Billing<Backend>,
    pub config: Config,
    /// Requests being answered: what a graceful shutdown waits for.
    pub in_flight: health::InFlight,
    /// What `GET /metrics` reports of the requests.
    pub metrics: metrics::Metrics,
    /// The bytes of unauthenticated request bodies being read ([`untrusted`]).
    pub untrusted_bodies: untrusted::Budget,
    /// The background worker of this process (none with `--no-worker`): what a graceful
    /// shutdown stops and waits for after the requests.
    pub worker: std::sync::OnceLock<Arc<worker::Worker>>,
}

impl App {
    pub fn open(config: Config) -> Result<Arc<App>, Error> {
        Self::open_with_clock(config, Arc::new(SystemClock))
    }

    pub fn open_with_clock(config: Config, clock: Arc<dyn Clock>) -> Result<Arc<App>, Error> {
        tune_allocator();
        // Deliveries are sent by the worker, by sandbox clock advances and by manual retries.
        // Built first: a bad CA file stops the start before the database is touched.
        let mut transport =
            HttpTransport::with_ca_file(config.webhook_timeout, config.webhook_ca_file.as_deref()).map_err(|e| Error::rule(Code::INVALID_PARAMETERS, e))?;
        transport.lease_margin = config.work_lease_margin;
        transport.allow_private = config.webhook_allow_private;
        let store = Backend::open(&config.database_url, config.database_pool_size)?;
        let billing = Billing::new(store, clock)
            .with_jwt_secret(config.jwt_secret.as_bytes().to_vec())
            .with_public_url(config.public_url.clone());
        billing.engine().set_allow_private_webhooks(config.webhook_allow_private);
        // Customer notifications: the channels this process sends (others leave theirs to a
        // process that has a sender).
        let channels = notify::install(&billing, &config.notify).map_err(|e| Error::rule(Code::INVALID_PARAMETERS, e))?;
        if channels.is_empty() && config.worker {
            tracing::info!(
                "customer notifications are recorded but not sent by this process: configure SMTP (--smtp-host) or an SMS provider (--sms-account-sid)"
            );
        } else if config.worker {
            tracing::info!(channels = %channels.join(","), "customer notifications are sent");
        }
        // A long sandbox clock advance (many stops, slow receivers) says in the log that it moves.
        billing.engine().set_advance_progress(
            ADVANCE_PROGRESS_EVERY,
            Arc::new(|p: &billing_core::sandbox::AdvanceProgress| {
                let (org, at, target) = (p.org.to_string(), billing_core::clock::format_rfc3339(&p.at), billing_core::clock::format_rfc3339(&p.target));
                match p.done {
                    false => tracing::info!(%org, %at, %target, stops = p.stops, items = p.items, elapsed_ms = p.elapsed.as_millis() as u64, "sandbox clock advance in progress"),
                    true => tracing::info!(%org, %target, stops = p.stops, items = p.items, elapsed_ms = p.elapsed.as_millis() as u64, "sandbox clock advance done"),
                }
            }),
        );
        let app = Arc::new(App {
            billing,
            config,
            in_flight: Default::default(),
            metrics: Default::default(),
            untrusted_bodies: Default::default(),
            worker: Default::default(),
        });
        app.billing.engine().set_webhook_transport(Arc::new(transport));
        // Now the work lease is known (the webhook and notification time-outs and the margin).
        app.billing.engine().store.fit_to_work_lease(app.billing.engine().work_lease());
        if app.config.worker {
            let options = worker::WorkerOptions {
                poll_interval: app.config.worker_poll_interval,
                concurrency: app.config.worker_concurrency,
            };
            let _ = app.worker.set(worker::start(&app, options));
        }
        Ok(app)
    }
}

/// Serves HTTP/1.1 on `listener` until the process ends (see [`connections`]).
pub async fn serve(app: Arc<App>, listener: TcpListener) {
    connections::serve(app, listener).await
}

/// Binds `addr` (port 0 picks a free one) and serves in the background; returns the address.
pub async fn spawn(app: Arc<App>, addr: SocketAddr) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tokio::spawn(serve(app, listener));
    Ok(local)
}

/// The address of the connection a request came on (set by [`serve`] as a request extension).
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

pub async fn handle(app: Arc<App>, req: Request<hyper::body::Incoming>) -> HttpResponse {
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 200)
        .map(str::to_string)
        // A v4 UUID from the thread's generator: no system call per request.
        .unwrap_or_else(|| {
            let id = uuid::Builder::from_random_bytes(rand::random()).into_uuid();
            id.hyphenated().encode_lower(&mut uuid::Uuid::encode_buffer()).to_string()
        });
    let counted = app.clone();
    let _in_flight = counted.in_flight.start();
    let started = std::time::Instant::now();
    let method = req.method().clone();
    let route = router::template(&method, req.uri().path());
    let key = api_key_name(req.headers());
    let scrape = req.method() == hyper::Method::GET && req.uri().path() == "/metrics";
    let mut resp = if scrape {
        match metrics::authorize(app.config.metrics_token.as_deref(), req.headers()) {
            Err(e) => error_response(&e),
            Ok(()) => {
                let app = app.clone();
                match tokio::task::spawn_blocking(move || metrics::render(&app)).await {
                    Ok(text) => http::text_response(StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", text),
                    Err(e) => error_response(&panicked(e)),
                }
            }
        }
    } else if let Some(r) = openapi::serve::respond(req.method(), req.uri().path()) {
        r
    } else if req.uri().path() == "/mcp" {
        mcp::serve(app.clone(), req).await
    } else {
        match health::probe(&app, req.uri().path()).await {
            Some(r) => r,
            None => respond(app.clone(), req).await,
        }
    };
    counted.metrics.record(method.as_str(), &route, resp.status().as_u16(), started.elapsed());
    // The access log: one line per request, at `info` under the target `access` (filter it
    // with BILLING_LOG=info,access=off). The route template, never the path (ids, short ids)
    // nor the query; the API key's public name, never its secret; no body.
    tracing::info!(
        target: "access",
        method = %method,
        route = %route,
        status = resp.status().as_u16(),
        duration_ms = started.elapsed().as_secs_f64() * 1000.0,
        request_id = %request_id,
        key = key.as_deref().unwrap_or("-"),
    );
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    resp
}

/// The public half (`key`) of an `x-api-key` credential (base64 of `key:secret`), for the
/// access log: what names the key in `GET /api-keys`, never the secret.
fn api_key_name(headers: &hyper::HeaderMap) -> Option<String> {
    use base64::Engine;
    let raw = headers.get("x-api-key")?.as_bytes();
    let decoded = base64::engine::general_purpose::STANDARD.decode(raw).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (key, _secret) = text.split_once(':')?;
    (!key.is_empty() && key.len() <= 64 && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')).then(|| key.to_string())
}

async fn respond(app: Arc<App>, req: Request<hyper::body::Incoming>) -> HttpResponse {
    let path = req.uri().path();
    if path.starts_with("/pay/") || path == "/embed.js" || api::PUBLIC_API_PATHS.contains(&path.trim_end_matches('/')) {
        match resolve_public(req.method(), req.uri().path()) {
            Resolution::Found(r, params) => return respond_public(app, r, params, req).await,
            Resolution::MethodNotAllowed => return not_allowed(&req),
            Resolution::NotFound => {}
        }
    }
    let (route, params) = match resolve(req.method(), req.uri().path()) {
        Resolution::Found(r, params) => (r, params),
        Resolution::MethodNotAllowed => return not_allowed(&req),
        Resolution::NotFound => return envelope(Code::NOT_FOUND, Some(format!("no route for {}", req.uri().path()))),
    };
    let (parts, body) = req.into_parts();
    let credential = credential(&parts.headers);
    // An empty header is the same as none.
    let branch = header(&parts.headers, "x-branch-id").map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let lane = route.lane;
    let idempotency_key = idempotency::raw_key(&parts.method, &parts.headers);
    let raw_query = parts.uri.query().unwrap_or("").to_string();
    let authenticate = move |app: &App| {
        let branch = match branch {
            Some(b) => Some(b.parse::<BranchId>().map_err(|_| {
                Error::invalid(FieldError::new(
                    "uuid_parsing",
                    vec!["header".into(), "x-branch-id".into()],
                    "Input should be a valid UUID",
                ))
            })?),
            None => None,
        };
        app.billing.auth().authenticate_for(&credential?, branch, lane)
    };
    // A request with a body is authenticated before its body is read: a client without valid
    // credentials never gets to hold a body buffer (or a slow body's connection) open. One
    // without a body is authenticated with the operation, in its snapshot.
    // A request with an idempotency key too: the key is claimed for its organization before
    // the operation runs.
    let scope = if hyper::body::Body::is_end_stream(&body) && idempotency_key.is_none() {
        Err(authenticate)
    } else {
        match on_read_lane(&app, move |app| authenticate(&app)).await {
            Ok(scope) => Ok(scope),
            Err(e) => return error_response(&e),
        }
    };
    let req = match read_request(parts, body, app.config.body_limit, app.config.body_timeout).await {
        Ok(r) => r,
        Err(e) => return read_failed((app.config.body_limit, app.config.body_timeout), e),
    };
    let input = OpRequest::new(&req, params);
    if let (Some(raw), Ok(scope)) = (&idempotency_key, &scope) {
        let id = match idempotency::Identity::new(raw, &req.method, &req.path, &raw_query, scope, &req.body) {
            Ok(id) => id,
            Err(e) => return error_response(&e),
        };
        return idempotency::respond(app, route, scope.clone(), id, input).await;
    }
    let handler = route.handler;
    let run = move |app: Arc<App>| {
        let scope = match scope {
            Ok(scope) => scope,
            Err(authenticate) => authenticate(&app)?,
        };
        input.query.check()?;
        handler(&app.billing, &scope, input)
    };
    // Operations are synchronous (they hold a database connection); the route's lane says
    // where one runs. Reads that the backend serves from local memory without waiting (SQLite
    // in WAL mode) run right here; other reads on a blocking thread. Writes go to the store's
    // write executor (SQLite: the group-commit writer, many operations per transaction). An
    // operation that calls outside the process runs on a blocking thread of its own, never on
    // the write executor, so a slow gateway or receiver holds up only its own request.
    reply(on_lane(app, route.lane, run).await)
}

/// A public row (the checkout): no credentials; otherwise as any request.
async fn respond_public(app: Arc<App>, route: &'static PublicRoute, params: Vec<(&'static str, String)>, req: Request<hyper::body::Incoming>) -> HttpResponse {
    // The client's address is the connection's (never a forwarding header a client could set).
    let client = req
        .extensions()
        .get::<PeerAddr>()
        .map(|p| p.0.ip().to_canonical().to_string())
        .unwrap_or_default();
    let mark = req.extensions().get::<connections::Mark>().cloned();
    let (parts, body) = req.into_parts();
    let limits = untrusted::limits(app.config.body_limit, app.config.body_timeout);
    let req = match untrusted::read(&app.untrusted_bodies, mark.as_ref(), parts, body, limits).await {
        Ok(r) => r,
        Err(untrusted::Refused::Busy) => return busy(),
        Err(untrusted::Refused::Read(e)) => return read_failed(limits, e),
    };
    let mut input = OpRequest::new(&req, params);
    input.client = client;
    let handler = route.handler;
    let run = move |app: Arc<App>| {
        input.query.check()?;
        handler(&app.billing, input)
    };
    reply(on_lane(app, route.lane, run).await)
}

/// Runs an operation where its lane says (see `respond`).
pub(crate) async fn on_lane<R: Send + 'static>(app: Arc<App>, lane: Lane, run: impl FnOnce(Arc<App>) -> Result<R, Error> + Send + 'static) -> Result<R, Error> {
    match lane {
        Lane::Read => on_read_lane(&app, run).await,
        Lane::Io => tokio::task::spawn_blocking(move || run(app)).await.unwrap_or_else(|e| Err(panicked(e))),
        Lane::Write => {
            let backend = app.clone();
            backend.billing.engine().store.execute(move || run(app)).await
        }
    }
}

pub(crate) fn reply(result: Result<Reply, Error>) -> HttpResponse {
    match result {
        Ok(Reply::Json(v)) => json_response(StatusCode::OK, &v),
        Ok(Reply::Bytes(b)) => http::bytes_response(StatusCode::OK, b),
        Ok(Reply::Empty) => json_response(StatusCode::OK, &serde_json::json!({})),
        Ok(Reply::Page(p)) => http::page_response(p),
        Err(e) => error_response(&e),
    }
}

fn not_allowed<B>(req: &Request<B>) -> HttpResponse {
    envelope(
        Code::METHOD_NOT_ALLOWED,
        Some(format!("{} is not allowed on {}", req.method(), req.uri().path())),
    )
}

/// Too many unauthenticated bodies are being read at once ([`untrusted::BUDGET`]).
pub(crate) fn busy() -> HttpResponse {
    let mut r = envelope(
        Code::SERVICE_UNAVAILABLE,
        Some("too many requests are being received; try again shortly".into()),
    );
    r.headers_mut().insert(hyper::header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// The answer to a body that was not read, under `(limit, timeout)`.
pub(crate) fn read_failed((limit, timeout): (usize, std::time::Duration), e: ReadError) -> HttpResponse {
    match e {
        ReadError::TooLarge => envelope(Code::PAYLOAD_TOO_LARGE, Some(format!("the limit is {limit} bytes"))),
        ReadError::TimedOut => envelope(
            Code::REQUEST_TIMEOUT,
            Some(format!("the body did not arrive within {} ms", timeout.as_millis())),
        ),
        ReadError::Broken => error_response(&Error::invalid(FieldError::new(
            "json_invalid",
            vec!["body".into()],
            "the request body could not be read",
        ))),
    }
}

/// Runs a read: right here when the backend reads from local memory without waiting (SQLite in
/// WAL mode, in one snapshot), else on a blocking thread.
async fn on_read_lane<R: Send + 'static>(app: &Arc<App>, f: impl FnOnce(Arc<App>) -> Result<R, Error> + Send + 'static) -> Result<R, Error> {
    if app.billing.engine().store.reads_are_local() {
        let session = app.clone();
        // Right here is the connection's task: a bug that panics must still be a 500 answer,
        // not a connection closed without one (as on the other lanes).
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| session.billing.engine().store.read_session(|| f(app.clone())))).unwrap_or_else(
            |_| {
                tracing::error!("operation panicked");
                Err(Error::Store(billing_core::error::StoreError::backend("the operation panicked")))
            },
        );
    }
    let run = app.clone();
    app.billing.engine().store.blocking(move || f(run)).await
}

fn header<'a>(headers: &'a hyper::HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn panicked(e: tokio::task::JoinError) -> Error {
    tracing::error!(error = %e, "operation panicked");
    Error::Store(billing_core::error::StoreError::backend("the operation panicked"))
}

/// `x-api-key` or `Authorization: Bearer`; neither is a 401.
fn credential(headers: &hyper::HeaderMap) -> Result<Credential, Error> {
    if let Some(k) = header(headers, "x-api-key") {
        return Credential::from_api_key_header(k);
    }
    if let Some(a) = header(headers, "authorization") {
        return Credential::from_authorization_header(a);
    }
    Err(Error::unauthorized("send an x-api-key header or an Authorization: Bearer token"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read that panics on the connection's own task (SQLite reads run there) is an error
    /// answer, like a panic on the other lanes, and the next read works.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_read_is_an_error_not_a_dropped_connection() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("panic.db").display());
        let app = App::open(Config {
            worker: false,
            ..Config::new(url)
        })
        .unwrap();
        assert!(app.billing.engine().store.reads_are_local());
        let failed = on_lane(app.clone(), Lane::Read, |_| -> Result<(), Error> { panic!("a bug") }).await;
        assert!(matches!(failed, Err(Error::Store(_))), "{failed:?}");
        let after = on_lane(app.clone(), Lane::Read, |app| app.billing.org().is_empty()).await;
        assert!(after.unwrap(), "a fresh database");
    }
}
