//! Integration-test support: a real `billing-server` on 127.0.0.1 port 0 over a fresh database,
//! and a small blocking HTTP client. Tests are written once as `fn(&TestServer)` and run against
//! every backend by `http_tests!`.
#![allow(dead_code)]

use billing_core::fields::Email;
use billing_core::org::{Bootstrap, BootstrapRequest};
use billing_server::{App, Config};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Method;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use std::sync::Arc;

pub mod fixtures;
pub mod invoice_fixtures;
pub mod process;
pub mod raw_http;
pub mod snapshot;
pub mod webdriver;

pub struct TestServer {
    pub base: String,
    pub app: Arc<App>,
    pub boot: Bootstrap,
    /// The admin's `x-api-key` value.
    pub key: String,
    rt: tokio::runtime::Runtime,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    /// The database the server runs on (for [`Self::snapshot`]).
    database_url: String,
    /// Keeps the database alive (a temporary directory or database); dropped last.
    _db: Box<dyn std::any::Any + Send + Sync>,
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Resp {
    /// `error.code` of an error envelope.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
    /// The `loc` arrays of a 422 `detail` list.
    pub fn locs(&self) -> Vec<Value> {
        self.body["detail"]
            .as_array()
            .map(|d| d.iter().map(|e| e["loc"].clone()).collect())
            .unwrap_or_default()
    }
}

pub const JWT_SECRET: &str = "integration-test-secret";
/// The token the test servers' `GET /metrics` requires.
pub const METRICS_TOKEN: &str = "integration-metrics-token";

impl TestServer {
    /// A server on a new SQLite file.
    pub fn sqlite() -> Self {
        Self::sqlite_with(|_| {})
    }

    /// A server on a new SQLite file, its configuration changed by `tweak` first.
    pub fn sqlite_with(tweak: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("billing.db").display());
        Self::start_with(url, Box::new(dir), tweak)
    }

    /// A server on a new PostgreSQL database of the server named by `BILLING_TEST_DATABASE_URL`,
    /// or `None` when it is not set.
    pub fn postgres() -> Option<Self> {
        let server = billing_store_postgres::testing::server_url()?;
        let db = billing_store_postgres::testing::TempDatabase::create(&server).expect("create test database");
        let url = db.url().to_string();
        Some(Self::start(url, Box::new(db)))
    }

    pub fn start(database_url: String, db: Box<dyn std::any::Any + Send + Sync>) -> Self {
        Self::start_with(database_url, db, |_| {})
    }

    pub fn start_with(database_url: String, db: Box<dyn std::any::Any + Send + Sync>, tweak: impl FnOnce(&mut Config)) -> Self {
        Self::start_inner(database_url, db, tweak, false)
    }

    /// A server on a new SQLite file whose public URL is its own address (`http://127.0.0.1:PORT`),
    /// so the addresses it hands out (hosted result pages) can be followed: for the browser test.
    pub fn sqlite_at_own_address() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("billing.db").display());
        Self::start_inner(url, Box::new(dir), |_| {}, true)
    }

    fn start_inner(database_url: String, db: Box<dyn std::any::Any + Send + Sync>, tweak: impl FnOnce(&mut Config), own_address: bool) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        // Bound first, so that the public URL can be the bound address.
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let database_url_copy = database_url.clone();
        let mut config = Config {
            jwt_secret: JWT_SECRET.into(),
            body_limit: 1024 * 1024,
            public_url: "http://127.0.0.1".into(),
            worker_poll_interval: std::time::Duration::from_millis(50),
            // The tests' webhook receivers listen on 127.0.0.1.
            webhook_allow_private: true,
            metrics_token: Some(METRICS_TOKEN.into()),
            ..Config::new(database_url)
        };
        if own_address {
            config.public_url = format!("http://{addr}");
        }
        tweak(&mut config);
        let app = App::open(config).expect("open app");
        let boot = app
            .billing
            .bootstrap(&BootstrapRequest {
                org_name: "Test Org".into(),
                admin_email: Email::parse("admin@example.com").unwrap(),
                sandbox: true,
            })
            .expect("bootstrap");
        rt.spawn(billing_server::serve(app.clone(), listener));
        let client = Client::builder(TokioExecutor::new()).build_http();
        let key = boot.api_key.header_value();
        TestServer {
            base: format!("http://{addr}"),
            app,
            boot,
            key,
            rt,
            client,
            database_url: database_url_copy,
            _db: db,
        }
    }

    /// Sends a request; `headers` are added as given (no credentials are added for you).
    pub fn raw(&self, method: Method, path: &str, headers: &[(&str, &str)], body: Option<Vec<u8>>) -> Resp {
        let mut req = hyper::Request::builder().method(method).uri(format!("{}{}", self.base, path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Full::new(Bytes::from(body.unwrap_or_default()))).unwrap();
        self.rt.block_on(async {
            let resp = self.client.request(req).await.expect("request sent");
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let bytes = resp.into_body().collect().await.unwrap().to_bytes();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            Resp { status, headers, body, text }
        })
    }

    /// A request as the admin key, with an optional JSON body.
    pub fn call(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        self.call_as(&self.key, None, method, path, body)
    }

    /// A request with the given `x-api-key` and optional `x-branch-id`.
    pub fn call_as(&self, key: &str, branch: Option<&str>, method: Method, path: &str, body: Option<Value>) -> Resp {
        let mut headers = vec![("x-api-key", key), ("content-type", "application/json")];
        if let Some(b) = branch {
            headers.push(("x-branch-id", b));
        }
        self.raw(method, path, &headers, body.map(|b| serde_json::to_vec(&b).unwrap()))
    }

    pub fn get(&self, path: &str) -> Resp {
        self.call(Method::GET, path, None)
    }
    pub fn post(&self, path: &str, body: Value) -> Resp {
        self.call(Method::POST, path, Some(body))
    }
    pub fn put(&self, path: &str, body: Value) -> Resp {
        self.call(Method::PUT, path, Some(body))
    }
    pub fn delete(&self, path: &str) -> Resp {
        self.call(Method::DELETE, path, None)
    }

    /// Every row of every table of the database, found from the schema itself (so a new table
    /// is covered without anyone listing it): compare two snapshots to prove that a refused
    /// request wrote nothing.
    pub fn snapshot(&self) -> String {
        snapshot::dump(&self.database_url)
    }

    /// Asserts that `f` (a refused request) leaves the store exactly as it was.
    pub fn unchanged<T>(&self, f: impl FnOnce() -> T) -> T {
        let before = self.snapshot();
        let r = f();
        assert_eq!(before, self.snapshot(), "a refused request changed the database");
        r
    }

    /// The raw bytes of the SQLite database (main file and write-ahead log), or `None` on
    /// PostgreSQL: to search what was stored anywhere, in any column or page.
    pub fn database_bytes(&self) -> Option<Vec<u8>> {
        let path = self.database_url.strip_prefix("sqlite://")?;
        let mut out = Vec::new();
        for suffix in ["", "-wal"] {
            if let Ok(b) = std::fs::read(format!("{path}{suffix}")) {
                out.extend(b);
            }
        }
        Some(out)
    }

    pub fn branch_id(&self) -> String {
        self.boot.branch.id.to_string()
    }
}

/// Runs each listed test body on SQLite, as separate tests `sqlite::name`. HTTP tests own the
/// HTTP mapping (statuses, envelopes, `detail` locations, headers, auth, routing); the store
/// behaviour under them is owned by the conformance suite, which runs on both stores.
#[macro_export]
macro_rules! http_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    let srv = $crate::common::TestServer::sqlite();
                    super::$name(&srv);
                }
            )*
        }
    };
}

/// The PostgreSQL smoke pass: the listed bodies run on PostgreSQL too, as `postgres::name` (a
/// loud SKIPPED line when `BILLING_TEST_DATABASE_URL` is not set), for the paths that reach the
/// store differently there (its own executor, isolation, retries, search and error mapping).
#[macro_export]
macro_rules! postgres_smoke {
    ($($name:ident),* $(,)?) => {
        mod postgres {
            $(
                #[test]
                fn $name() {
                    match $crate::common::TestServer::postgres() {
                        Some(srv) => super::$name(&srv),
                        None => eprintln!("SKIPPED postgres::{}: BILLING_TEST_DATABASE_URL is not set", stringify!($name)),
                    }
                }
            )*
        }
    };
}
