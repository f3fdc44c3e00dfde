//! billing-server: the public API v2 over HTTP, as a thin hyper 1.x shell around billing-core.

pub mod api;
pub mod backend;
pub mod http;
pub mod router;
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
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use router::{resolve, Resolution};
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
}

/// Default PostgreSQL pool size per process.
pub const DEFAULT_DATABASE_POOL_SIZE: u32 = 10;
pub const DEFAULT_WEBHOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
pub const DEFAULT_WORKER_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);
pub const DEFAULT_WORKER_CONCURRENCY: usize = 16;
pub const DEFAULT_WORK_LEASE_MARGIN: std::time::Duration = std::time::Duration::from_secs(30);

pub struct App {
    pub billing: Billing<Backend>,
    pub config: Config,
}

impl App {
    pub fn open(config: Config) -> Result<Arc<App>, Error> {
        Self::open_with_clock(config, Arc::new(SystemClock))
    }

    pub fn open_with_clock(config: Config, clock: Arc<dyn Clock>) -> Result<Arc<App>, Error> {
        // Deliveries are sent by the worker, by sandbox clock advances and by manual retries.
        // Built first: a bad CA file stops the start before the database is touched.
        let mut transport =
            HttpTransport::with_ca_file(config.webhook_timeout, config.webhook_ca_file.as_deref()).map_err(|e| Error::rule(Code::INVALID_PARAMETERS, e))?;
        transport.lease_margin = config.work_lease_margin;
        let store = Backend::open(&config.database_url, config.database_pool_size)?;
        let billing = Billing::new(store, clock)
            .with_jwt_secret(config.jwt_secret.as_bytes().to_vec())
            .with_public_url(config.public_url.clone());
        let app = Arc::new(App { billing, config });
        app.billing.set_webhook_transport(Arc::new(transport));
        if app.config.worker {
            let options = worker::WorkerOptions {
                poll_interval: app.config.worker_poll_interval,
                concurrency: app.config.worker_concurrency,
            };
            worker::start(&app, options);
        }
        Ok(app)
    }
}

/// Serves HTTP/1.1 on `listener` until the process ends.
pub async fn serve(app: Arc<App>, listener: TcpListener) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let app = app.clone();
                async move { Ok::<_, std::convert::Infallible>(handle(app, req).await) }
            });
            if let Err(e) = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), svc).await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
}

/// Binds `addr` (port 0 picks a free one) and serves in the background; returns the address.
pub async fn spawn(app: Arc<App>, addr: SocketAddr) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tokio::spawn(serve(app, listener));
    Ok(local)
}

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
    let mut resp = respond(app, req).await;
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    resp
}

async fn respond(app: Arc<App>, req: Request<hyper::body::Incoming>) -> HttpResponse {
    let (route, params) = match resolve(req.method(), req.uri().path()) {
        Resolution::Found(r, params) => (r, params),
        Resolution::MethodNotAllowed => {
            return envelope(
                Code::METHOD_NOT_ALLOWED,
                Some(format!("{} is not allowed on {}", req.method(), req.uri().path())),
            )
        }
        Resolution::NotFound => return envelope(Code::NOT_FOUND, Some(format!("no route for {}", req.uri().path()))),
    };
    let req = match read_request(req, app.config.body_limit).await {
        Ok(r) => r,
        Err(ReadError::TooLarge) => return envelope(Code::PAYLOAD_TOO_LARGE, Some(format!("the limit is {} bytes", app.config.body_limit))),
        Err(ReadError::Broken) => {
            return error_response(&Error::invalid(FieldError::new(
                "json_invalid",
                vec!["body".into()],
                "the request body could not be read",
            )))
        }
    };
    let credential = credential(&req);
    // An empty header is the same as none.
    let branch = req.header("x-branch-id").map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let input = OpRequest::new(&req, params);
    let handler = route.handler;
    let run = move |app: Arc<App>| {
        let credential = credential?;
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
        let scope = app.billing.authenticate(&credential, branch)?;
        handler(&app.billing, &scope, input)
    };
    // Operations are synchronous (they hold a database connection); the route's lane says
    // where one runs. Reads that the backend serves from local memory without waiting (SQLite
    // in WAL mode) run right here; other reads on a blocking thread. Writes go to the store's
    // write executor (SQLite: the group-commit writer, many operations per transaction). An
    // operation that calls outside the process runs on a blocking thread of its own, never on
    // the write executor, so a slow gateway or receiver holds up only its own request.
    let result = match route.lane {
        Lane::Read if app.billing.store.reads_are_local() => {
            let session = app.clone();
            session.billing.store.read_session(|| run(app))
        }
        Lane::Read | Lane::Io => tokio::task::spawn_blocking(move || run(app)).await.unwrap_or_else(|e| Err(panicked(e))),
        Lane::Write => {
            let backend = app.clone();
            backend.billing.store.execute(move || run(app)).await
        }
    };
    match result {
        Ok(Reply::Json(v)) => json_response(StatusCode::OK, &v),
        Ok(Reply::Bytes(b)) => http::bytes_response(StatusCode::OK, b),
        Ok(Reply::Empty) => json_response(StatusCode::OK, &serde_json::json!({})),
        Err(e) => error_response(&e),
    }
}

fn panicked(e: tokio::task::JoinError) -> Error {
    tracing::error!(error = %e, "operation panicked");
    Error::Store(billing_core::error::StoreError::backend("the operation panicked"))
}

/// `x-api-key` or `Authorization: Bearer`; neither is a 401.
fn credential(req: &http::Incoming2) -> Result<Credential, Error> {
    if let Some(k) = req.header("x-api-key") {
        return Credential::from_api_key_header(k);
    }
    if let Some(a) = req.header("authorization") {
        return Credential::from_authorization_header(a);
    }
    Err(Error::unauthorized("send an x-api-key header or an Authorization: Bearer token"))
}
