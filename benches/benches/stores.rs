//! The two stores compared on the same operations, through billing-core (no HTTP):
//!
//! ```sh
//! BILLING_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench -p benches --bench stores
//! ```
//!
//! Each store gets a fresh database (a temporary SQLite file; a temporary PostgreSQL database
//! of the server named by `BILLING_TEST_DATABASE_URL`, skipped when it is not set) loaded with
//! 10,000 consumers in one branch through the engine (PostgreSQL then gets `VACUUM ANALYZE`, the
//! state autovacuum reaches shortly after such a load), then measures:
//!
//! - `create_consumer`: a durable create (validation, the uniqueness check, the insert, committed);
//! - `get_consumer`: one consumer by id;
//! - `list_consumers_search`: `search_term` matching one consumer (substring of the e-mail),
//!   the first page and the count;
//! - `list_consumers_metadata`: `external_metadata.n=<value>` matching one consumer;
//! - `create_invoice`: a durable invoice of 3 items (VAT inclusive, exclusive, exempt) and one
//!   invoice-level percentage coupon, for one of the loaded consumers.
//!
//! Operations run one at a time (latency, not throughput; see `loadbench` for concurrency).

use billing_core::auth::Credential;
use billing_core::auth::Scope;
use billing_core::clock::SystemClock;
use billing_core::consumer::{parse_consumer_list, ConsumerFields};
use billing_core::error::StoreError;
use billing_core::fields::{Email, PhoneNumber};
use billing_core::ids::ConsumerId;
use billing_core::list::QueryParams;
use billing_core::org::BootstrapRequest;
use billing_core::store::Store;
use billing_core::{Billing, Error};
use billing_store_postgres::testing::{server_url, TempDatabase, DATABASE_URL_ENV};
use billing_store_postgres::PgStore;
use billing_store_sqlite::SqliteStore;
use criterion::measurement::WallTime;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkGroup, Criterion};
use diesel::connection::SimpleConnection;
use diesel::Connection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONSUMERS: u64 = 10_000;
const LOADERS: u64 = 8;
const FIRST_NAMES: [&str; 8] = ["Sara", "Omar", "Fatima", "Émile", "Noura", "Khalid", "Lina", "Yousef"];

/// One store, loaded, ready to measure.
struct Subject<S> {
    name: &'static str,
    billing: Billing<S>,
    scope: Scope,
    ids: Vec<ConsumerId>,
    /// The next consumer number for `create_consumer` (past the loaded ones).
    next: AtomicU64,
}

/// The n-th consumer's key for phone and e-mail: a bijection of 0..10^7 that scatters
/// neighbours, so that consumers created together do not have adjacent keys.
fn key(n: u64) -> u64 {
    (n * 48_271) % 10_000_000
}

fn fields(n: u64) -> ConsumerFields {
    let k = key(n);
    let mut meta = serde_json::Map::new();
    meta.insert("plan".into(), ["gold", "silver", "bronze"][(n % 3) as usize].into());
    meta.insert("n".into(), n.to_string().into());
    ConsumerFields {
        name: Some(format!("{} Customer{n}", FIRST_NAMES[(n % 8) as usize])),
        phone_number: Some(PhoneNumber::parse(&format!("+96650{k:07}")).expect("a phone number")),
        email: Some(Email::parse(&format!("user{k}@example.com")).expect("an e-mail")),
        external_id: Some(format!("EXT-{n}")),
        external_metadata: Some(meta),
        ..Default::default()
    }
}

/// Bootstraps an organization and creates `CONSUMERS` consumers through the engine, from
/// `LOADERS` threads (both stores commit concurrent writes together). A creation whose write
/// conflicts persisted over the store's retries (PostgreSQL, SERIALIZABLE) is run again and
/// counted.
fn load<S: Store + Sync>(name: &'static str, store: S) -> Subject<S> {
    let billing = Billing::new(store, Arc::new(SystemClock));
    let boot = billing
        .org()
        .bootstrap(&BootstrapRequest {
            org_name: "Bench".into(),
            admin_email: Email::parse("admin@example.com").unwrap(),
            sandbox: true,
        })
        .expect("bootstrap");
    let scope = billing
        .auth()
        .authenticate(
            &Credential::ApiKey {
                key: boot.api_key.key.clone(),
                secret: boot.api_key.secret.clone(),
            },
            None,
        )
        .expect("authenticate");
    let began = Instant::now();
    let gave_up = AtomicU64::new(0);
    let ids: Vec<ConsumerId> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..LOADERS)
            .map(|t| {
                let (billing, scope, gave_up) = (&billing, &scope, &gave_up);
                s.spawn(move || {
                    (t..CONSUMERS)
                        .step_by(LOADERS as usize)
                        .map(|n| loop {
                            match billing.consumers().create(scope, fields(n)) {
                                Ok(c) => break c.id,
                                // The store's own retries of a conflicting write ran out.
                                Err(Error::Store(StoreError::Conflict(_))) => {
                                    gave_up.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(e) => panic!("create consumer {n}: {e:?}"),
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("a loader panicked")).collect()
    });
    eprintln!(
        "{name}: loaded {CONSUMERS} consumers from {LOADERS} threads in {:.1?} ({} creations reported a persisting write conflict and were run again)",
        began.elapsed(),
        gave_up.load(Ordering::Relaxed)
    );
    Subject {
        name,
        billing,
        scope,
        ids,
        next: AtomicU64::new(CONSUMERS),
    }
}

fn create_consumer<S: Store>(g: &mut BenchmarkGroup<'_, WallTime>, s: &Subject<S>) {
    g.bench_function(s.name, |b| {
        b.iter(|| {
            let n = s.next.fetch_add(1, Ordering::Relaxed);
            black_box(s.billing.consumers().create(&s.scope, fields(n)).expect("create"))
        })
    });
}

fn create_invoice<S: Store>(g: &mut BenchmarkGroup<'_, WallTime>, s: &Subject<S>) {
    use billing_core::coupon::CouponFields;
    use billing_core::invoice::InvoiceCreate;
    use billing_core::money::Currency;
    use billing_core::product::ProductFields;
    use serde_json::json;
    let product = |body: serde_json::Value| {
        s.billing
            .products()
            .create(&s.scope, ProductFields::parse(&body, true, Currency::SAR).unwrap())
            .unwrap()
            .id
    };
    let a = product(json!({"name": "A", "type": "ONE_OFF", "price": "115.00"}));
    let b = product(json!({"name": "B", "type": "ONE_OFF", "price": "99.99", "is_price_inclusive_of_vat": false}));
    let e = product(json!({"name": "C", "type": "ONE_OFF", "price": "10.50", "is_price_exempt_from_vat": true}));
    let coupon = s
        .billing
        .coupons()
        .create(
            &s.scope,
            CouponFields::parse(&json!({"name": "TEN", "discount_value": 10, "is_percentage": true}), true).unwrap(),
        )
        .unwrap();
    let body = json!({
        "organization_consumer_id": s.ids[0],
        "items": [{"product_id": a, "quantity": 2}, {"product_id": b, "quantity": 1}, {"product_id": e, "quantity": 3}],
        "coupons": [coupon.id],
        "payment_methods": {"mada": true, "visa": true, "mastercard": true, "amex": false, "bank_transfer": false, "installment": true},
        "notify_consumer": false,
    });
    g.bench_function(s.name, |bench| {
        bench.iter(|| {
            let req = InvoiceCreate::parse(&body, Currency::SAR).expect("valid body");
            black_box(s.billing.invoices().create(&s.scope, req).expect("create invoice"))
        })
    });
}

fn get_consumer<S: Store>(g: &mut BenchmarkGroup<'_, WallTime>, s: &Subject<S>) {
    let mut i = 0usize;
    g.bench_function(s.name, |b| {
        b.iter(|| {
            i = (i + 7919) % s.ids.len();
            black_box(s.billing.consumers().get(&s.scope, s.ids[i]).expect("get"))
        })
    });
}

/// Lists with the query `make(k)` for rotating `k`, each expected to match one consumer.
fn list_one<S: Store>(g: &mut BenchmarkGroup<'_, WallTime>, s: &Subject<S>, make: impl Fn(u64) -> String) {
    let mut k = 0u64;
    g.bench_function(s.name, |b| {
        b.iter(|| {
            k = (k + 7919) % CONSUMERS;
            let (q, f) = parse_consumer_list(&QueryParams::parse(&make(k))).expect("query");
            let page = s.billing.consumers().list(&s.scope, &q, &f).expect("list");
            assert_eq!(page.items.len(), 1, "{} for {}", s.name, make(k));
            black_box(page)
        })
    });
}

/// Runs `$body` with `$s` bound to each store present, in one criterion group `$g`.
macro_rules! group {
    ($c:expr, $name:expr, $sqlite:expr, $pg:expr, |$g:ident, $s:ident| $body:expr) => {{
        let mut $g = $c.benchmark_group($name);
        {
            let $s = $sqlite;
            $body;
        }
        if let Some($s) = $pg {
            $body;
        }
        $g.finish();
    }};
}

fn stores(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = load("sqlite", SqliteStore::open(dir.path().join("bench.db")).expect("open SQLite"));
    let pg = match server_url() {
        Some(server) => {
            let db = TempDatabase::create(&server).expect("create a PostgreSQL database");
            let url = db.url().to_string();
            let subject = load("postgres", PgStore::open_temp(db).expect("open PostgreSQL"));
            // The steady state autovacuum reaches shortly after a bulk load: planner statistics
            // and GIN pending lists merged into the trigram indexes.
            let mut conn = diesel::PgConnection::establish(&url).expect("connect");
            conn.batch_execute("VACUUM ANALYZE").expect("vacuum");
            Some(subject)
        }
        None => {
            eprintln!("SKIPPED postgres: {DATABASE_URL_ENV} is not set (SQLite only)");
            None
        }
    };
    let pg = pg.as_ref();
    group!(c, "get_consumer", &sqlite, pg, |g, s| get_consumer(&mut g, s));
    let search = |k: u64| format!("search_term=user{}%40", key(k));
    let metadata = |k: u64| format!("external_metadata.n={k}");
    group!(c, "list_consumers_search", &sqlite, pg, |g, s| list_one(&mut g, s, search));
    group!(c, "list_consumers_metadata", &sqlite, pg, |g, s| list_one(&mut g, s, metadata));
    group!(c, "create_invoice", &sqlite, pg, |g, s| create_invoice(&mut g, s));
    // Last: it grows the table.
    group!(c, "create_consumer", &sqlite, pg, |g, s| create_consumer(&mut g, s));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = stores
}
criterion_main!(benches);
