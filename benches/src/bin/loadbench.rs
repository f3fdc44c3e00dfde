//! The HTTP load benchmark of the foundation:
//!
//! ```text
//! cargo run --release -p benches --bin loadbench -- [--consumers 100000] [--seconds 10] [--connections 64]
//! ```
//!
//! Starts billing-server in this process on a fresh SQLite file (WAL, synchronous=FULL), loads
//! the consumers through billing-core, then drives, at 64 keep-alive connections each:
//! a bare hyper JSON endpoint (the ceiling of the stack), `GET /api/v2/consumers/{id}`,
//! `GET /api/v2/consumers?search_term=…`, durable `POST /api/v2/consumers`, and paid attempts
//! of the public checkout (`POST /pay/{short_id}/attempts` of a one-product link, a new payer
//! and an approved sandbox card each time: the attempt is recorded, the sandbox gateway is
//! called with no transaction open, then consumer + saved card + invoice + payment + events are
//! committed durably).
//!
//! With `--database-url postgres://…` the server runs on a new database of that PostgreSQL
//! server instead (dropped at the end), and `--pgbench` then measures, on the same cluster and
//! in the same run, the database's own rate for the statements behind the two paths (`pgbench
//! -M prepared`, 8 clients): a primary-key select of a consumer row, and one-row insert
//! transactions into a table with two unique indexes; it prints the server / database ratios.

use benches::{run, spawn_bare_server, RequestFn};
use billing_core::consumer::ConsumerFields;
use billing_core::fields::{Email, PhoneNumber};
use billing_core::org::BootstrapRequest;
use billing_core::store::Store;
use billing_server::{App, Config};
use clap::Parser;
use hyper::Method;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 100_000)]
    consumers: usize,
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Run only these scenarios (bare, get, search, post, pay); all by default.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Worker threads of the server's runtime (the load generator gets its own).
    #[arg(long, default_value_t = 2)]
    server_threads: usize,
    /// A PostgreSQL server (`postgres://user@host:port/db`, allowed to create databases): the
    /// server runs on a new database there. Default: a temporary SQLite file.
    #[arg(long)]
    database_url: Option<String>,
    /// The PostgreSQL pool size (default: the server's default).
    #[arg(long)]
    pool_size: Option<u32>,
    /// With `--database-url`: also measure the database's own rate with pgbench.
    #[arg(long)]
    pgbench: bool,
    /// Switch the organization's consumer notifications off (on by default: a paid attempt then
    /// also records the payer's receipt), to measure what they cost.
    #[arg(long)]
    no_notifications: bool,
}

fn main() {
    let args = Args::parse();
    let dir = tempfile::tempdir().unwrap();
    let temp_db = args
        .database_url
        .as_ref()
        .map(|server| billing_store_postgres::testing::TempDatabase::create(server).expect("create a benchmark database"));
    let url = match &temp_db {
        Some(db) => db.url().to_string(),
        None => format!("sqlite://{}", dir.path().join("bench.db").display()),
    };
    let mut config = Config {
        jwt_secret: "bench".into(),
        public_url: "http://127.0.0.1".into(),
        worker: false,
        ..Config::new(url.clone())
    };
    if let Some(n) = args.pool_size {
        config.database_pool_size = n;
    }
    let app = App::open(config).unwrap();
    let boot = app
        .billing
        .org()
        .bootstrap(&BootstrapRequest {
            org_name: "Bench".into(),
            admin_email: Email::parse("bench@example.com").unwrap(),
            sandbox: true,
        })
        .unwrap();
    if args.no_notifications {
        let off = billing_core::org::settings::SupportSettingsPatch {
            consumer_notifications: Some(false),
            ..Default::default()
        };
        app.billing.org().support_update_settings(boot.org.id, &off).unwrap();
    }
    let key = boot.api_key.header_value();
    let scope = app
        .billing
        .auth()
        .authenticate(
            &billing_core::auth::Credential::ApiKey {
                key: boot.api_key.key.clone(),
                secret: boot.api_key.secret.clone(),
            },
            None,
        )
        .unwrap();

    // Load the consumers in large transactions (the load itself is not what is measured).
    let t = Instant::now();
    let mut ids = Vec::with_capacity(args.consumers);
    for chunk in (0..args.consumers).collect::<Vec<_>>().chunks(2000) {
        let made: Vec<billing_core::consumer::Consumer> = chunk
            .iter()
            .map(|i| {
                let f = ConsumerFields {
                    name: Some(format!("Consumer {i} Name{}", i % 977)),
                    phone_number: Some(PhoneNumber::parse(&format!("+9665{:08}", 10_000_000 + i)).unwrap()),
                    email: Some(Email::parse(&format!("user{i}@example.com")).unwrap()),
                    external_id: Some(format!("ext-{i}")),
                    ..Default::default()
                };
                consumer_from(&scope, f)
            })
            .collect();
        app.billing
            .engine()
            .store
            .write(|tx| {
                for c in &made {
                    tx.insert_consumer(c)?;
                }
                Ok(())
            })
            .unwrap();
        ids.extend(made.iter().map(|c| c.id));
    }
    eprintln!("loaded {} consumers in {:.1}s", ids.len(), t.elapsed().as_secs_f64());
    if let Some(db) = &temp_db {
        // As autovacuum would soon after a bulk load: planner statistics for the new rows (the
        // trigram search index is chosen only with them).
        pgbench::psql(db.url(), "VACUUM ANALYZE consumers");
    }

    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.server_threads)
        .enable_all()
        .build()
        .unwrap();
    let addr = server_rt.block_on(billing_server::spawn(app.clone(), "127.0.0.1:0".parse().unwrap())).unwrap();
    let bare = server_rt.block_on(spawn_bare_server());

    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(benches::cpu::LOAD_THREADS)
        .enable_all()
        .build()
        .unwrap();
    // Each scenario's line, then where its CPU went.
    let report = |r: &benches::LoadResult| {
        println!("{r}");
        if let (true, Some(line)) = (r.requests > 0, r.cpu_line()) {
            println!("{line}");
        }
    };
    let headers = vec![("x-api-key".to_string(), key), ("content-type".to_string(), "application/json".to_string())];
    let d = Duration::from_secs(args.seconds);
    let warm = Duration::from_secs(1);
    let c = args.connections;
    let ids = Arc::new(ids);

    let store_name = match &temp_db {
        Some(_) => format!("PostgreSQL, pool of {}", app.config.database_pool_size),
        None => "SQLite WAL synchronous=FULL".to_string(),
    };
    println!(
        "loadbench: {} consumers, {} connections, {}s per scenario, {store_name}",
        args.consumers, c, args.seconds
    );
    let want = |name: &str| args.only.is_empty() || args.only.iter().any(|o| o == name);
    let skipped = |name: &str| benches::LoadResult {
        name: name.into(),
        requests: 0,
        errors: 0,
        seconds: 1.0,
        p50_ms: 0.0,
        p99_ms: 0.0,
        max_ms: 0.0,
        cpu: None,
    };
    let bare_r = if !want("bare") {
        skipped("bare")
    } else {
        client_rt.block_on(run(
            "bare hyper JSON endpoint",
            bare,
            vec![],
            c,
            warm,
            d,
            Arc::new(|_| (Method::GET, "/".into(), None)),
        ))
    };
    report(&bare_r);

    let ids2 = ids.clone();
    let get: RequestFn = Arc::new(move |n| {
        let id = ids2[(n as usize * 7919) % ids2.len()];
        (Method::GET, format!("/api/v2/consumers/{id}"), None)
    });
    let get_r = if !want("get") {
        skipped("get")
    } else {
        client_rt.block_on(run("GET /api/v2/consumers/{id}", addr, headers.clone(), c, warm, d, get))
    };
    report(&get_r);

    // A customer lookup: a fragment of one consumer's e-mail address.
    let total = args.consumers as u64;
    let search: RequestFn = Arc::new(move |n| {
        (
            Method::GET,
            format!("/api/v2/consumers?search_term=user{}%40&limit=10", (n * 7919) % total),
            None,
        )
    });
    let search_r = if !want("search") {
        skipped("search")
    } else {
        client_rt.block_on(run("GET /api/v2/consumers?search_term=", addr, headers.clone(), c, warm, d, search))
    };
    report(&search_r);

    let offset = args.consumers as u64;
    let post: RequestFn = Arc::new(move |n| {
        let i = offset + n;
        let body =
            serde_json::json!({"name": format!("New {i}"), "phone_number": format!("+9665{:08}", 10_000_000 + i), "email": format!("new{i}@example.com")});
        (Method::POST, "/api/v2/consumers".into(), Some(serde_json::to_vec(&body).unwrap()))
    });
    let commit_stats = || match &app.billing.engine().store {
        billing_server::backend::Backend::Sqlite(s) => s.commit_stats(),
        billing_server::backend::Backend::Postgres(..) => (0, 0),
    };
    let before = commit_stats();
    let post_r = if !want("post") {
        skipped("post")
    } else {
        client_rt.block_on(run("POST /api/v2/consumers (durable)", addr, headers.clone(), c, warm, d, post))
    };
    let after = commit_stats();
    report(&post_r);
    let (txs, commits) = (after.0 - before.0, after.1 - before.1);
    println!(
        "group commit: {txs} transactions in {commits} commits ({:.1} per fsync)",
        txs as f64 / commits.max(1) as f64
    );

    let pay_r = if !want("pay") {
        skipped("pay")
    } else {
        let short_id = one_product_link(&app.billing, &scope);
        let offset = 2 * args.consumers as u64;
        let pay: RequestFn = Arc::new(move |n| {
            let i = offset + n;
            let body = serde_json::json!({
                "customer": {"name": format!("Payer {i}"), "phone_number": format!("+9665{:08}", 10_000_000 + i)},
                "method": {"type": "card", "number": "4111111111111111", "name": "Sara Al-Harbi", "expiry_month": 12, "expiry_year": 2030, "cvc": "123"},
                "installments": 1,
                "language": "en"
            });
            (Method::POST, format!("/pay/{short_id}/attempts"), Some(serde_json::to_vec(&body).unwrap()))
        });
        let before = commit_stats();
        let r = client_rt.block_on(run("POST /pay/{short_id}/attempts (paid)", addr, headers.clone(), c, warm, d, pay));
        let after = commit_stats();
        report(&r);
        println!("group commit: {} transactions in {} commits", after.0 - before.0, after.1 - before.1);
        r
    };
    if want("pay") {
        let paid = app
            .billing
            .engine()
            .store
            .read(|tx| {
                Ok(tx
                    .list_events(scope.org_id())?
                    .iter()
                    .filter(|e| e.event_type == billing_core::event::EventType::PaymentSucceeded)
                    .count())
            })
            .unwrap();
        println!(
            "paid attempts recorded: {paid} PAYMENT_SUCCEEDED events ({} answered, {} errors)",
            pay_r.requests, pay_r.errors
        );
    }
    println!("GET by id / bare endpoint: {:.2}", get_r.rps() / bare_r.rps());
    if let (true, Some(db)) = (args.pgbench, &temp_db) {
        let own = pgbench::measure(db.url(), args.consumers, args.seconds);
        println!("pgbench primary-key select (8 clients)      {:>9.0} tx/s", own.select.tps);
        println!("{}", own.select.cpu_line());
        println!("pgbench one-row insert, 2 unique (8 clients) {:>9.0} tx/s", own.insert.tps);
        println!("{}", own.insert.cpu_line());
        println!("GET by id / pgbench select: {:.2}", get_r.rps() / own.select.tps);
        println!("POST / pgbench insert: {:.2}", post_r.rps() / own.insert.tps);
    }
    drop(server_rt);
    drop(app);
    drop(temp_db);
}

/// The database's own rate for the statements behind `GET` and `POST /api/v2/consumers`.
mod pgbench {
    use std::process::Command;

    pub struct Rates {
        pub select: Rate,
        pub insert: Rate,
    }

    /// A pgbench run: its transactions per second and where the CPU went meanwhile.
    pub struct Rate {
        pub tps: f64,
        cpu: Option<benches::cpu::Used>,
        seconds: f64,
    }

    impl Rate {
        /// CPU microseconds per transaction: pgbench itself, and the rest of the machine (the
        /// database), as the server's scenarios print them.
        pub fn cpu_line(&self) -> String {
            let Some(u) = self.cpu else {
                return "  cpu per transaction: not measured".into();
            };
            let per = |s: f64| s * 1e6 / (self.tps * self.seconds).max(1.0);
            format!(
                "  cpu per transaction: pgbench {:.0} µs, rest of the machine {:.0} µs (machine busy {:.0}% of {} cores)",
                per(u.children),
                per(u.rest),
                100.0 * u.machine / (self.seconds * benches::cpu::cores() as f64),
                benches::cpu::cores()
            )
        }
    }

    pub fn psql(url: &str, sql: &str) {
        let out = Command::new("psql")
            .args([url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql])
            .output()
            .expect("run psql");
        assert!(out.status.success(), "psql failed: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn run(url: &str, script: &str, seconds: u64) -> Rate {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), script).unwrap();
        let from = benches::cpu::sample();
        let started = std::time::Instant::now();
        let out = Command::new("pgbench")
            .args(["-n", "-M", "prepared", "-c", "8", "-j", "2", "-T", &seconds.to_string(), "-f"])
            .arg(file.path())
            .arg(url)
            .output()
            .expect("run pgbench (Debian package postgresql-client)");
        // pgbench's connecting and reporting fall in the window too: a few milliseconds.
        let elapsed = started.elapsed().as_secs_f64();
        let cpu = benches::cpu::sample().zip(from).map(|(to, from)| to.since(&from));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "pgbench failed: {text}{}", String::from_utf8_lossy(&out.stderr));
        let tps = text
            .lines()
            .find_map(|l| l.strip_prefix("tps = "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no tps in pgbench's output: {text}"));
        Rate { tps, cpu, seconds: elapsed }
    }

    pub fn measure(url: &str, rows: usize, seconds: u64) -> Rates {
        // A copy of the loaded consumer rows, numbered so that pgbench can pick one at random.
        psql(
            url,
            "CREATE TABLE pgb_consumers AS SELECT row_number() OVER () AS n, c.* FROM consumers c; \
             ALTER TABLE pgb_consumers ADD PRIMARY KEY (n); \
             CREATE TABLE pgb_inserts (id uuid PRIMARY KEY, email text NOT NULL UNIQUE, name text NOT NULL, \
             created_at timestamptz NOT NULL DEFAULT now());",
        );
        psql(url, "VACUUM ANALYZE pgb_consumers");
        let select = run(url, &format!("\\set n random(1, {rows})\nSELECT * FROM pgb_consumers WHERE n = :n;\n"), seconds);
        let insert = run(
            url,
            "INSERT INTO pgb_inserts (id, email, name) VALUES (gen_random_uuid(), gen_random_uuid()::text || '@example.com', 'New');\n",
            seconds,
        );
        Rates { select, insert }
    }
}

/// A payment link of one 115.00 SAR product, without a consumer (each payer gives their
/// details); returns its short id.
fn one_product_link(b: &billing_core::Billing<billing_server::backend::Backend>, scope: &billing_core::auth::Scope) -> String {
    use billing_core::payment_link::PaymentLinkCreate;
    use billing_core::product::ProductFields;
    let currency = scope.org.settings.default_currency;
    let product = b
        .products()
        .create(
            scope,
            ProductFields::parse(&serde_json::json!({"name": "Gym day", "type": "ONE_OFF", "price": "115.00"}), true, currency).unwrap(),
        )
        .unwrap();
    let link = serde_json::json!({
        "name": "Gym day",
        "items": [{"product_id": product.id.to_string(), "quantity": 1}],
        "currency": "SAR",
    });
    b.payment_links()
        .create(scope, PaymentLinkCreate::parse(&link, currency).unwrap())
        .unwrap()
        .link
        .short_id
}

fn consumer_from(scope: &billing_core::auth::Scope, f: ConsumerFields) -> billing_core::consumer::Consumer {
    billing_core::consumer::Consumer {
        id: billing_core::ids::ConsumerId::new(),
        org_id: scope.org_id(),
        branch_id: scope.branch_id(),
        name: f.name.unwrap(),
        phone_number: f.phone_number,
        email: f.email,
        external_id: f.external_id,
        iban: None,
        alias: None,
        comment: None,
        preferred_language: Default::default(),
        communication_methods: vec![],
        consumer_type: billing_core::consumer::ConsumerType::Individual,
        address: None,
        vat_number: None,
        commercial_registration: None,
        external_metadata: Default::default(),
        is_deleted: false,
        created_at: billing_core::clock::Clock::now(&billing_core::clock::SystemClock),
        updated_at: None,
    }
}
