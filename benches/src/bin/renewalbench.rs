//! The renewal day:
//!
//! ```text
//! cargo run --release -p benches --bin renewalbench -- [--subscriptions 100000] [--database-url URL] [--processes 2]
//! ```
//!
//! Makes `--subscriptions` ACTIVE monthly subscriptions of one sandbox organization whose
//! current period ended a minute ago, each with its own consumer and a saved, active tokenized
//! card with consent (`billing_core::testkit::renewal_day::seed`: one through the engine's
//! operations, the rest copies of its rows written through the store). Then it starts the
//! server's background worker (`billing_server::worker`, the code a `billing-server serve`
//! process runs) and measures how long the renewal day takes: for every subscription the
//! renewal into cycle 2 (its invoice, INVOICE_CREATED), then the renewal charge through the
//! sandbox gateway (the attempt recorded, the gateway called with no transaction open, the
//! outcome recorded: PAYMENT_SUCCEEDED, INVOICE_COMPLETED). It prints the seconds and
//! renewals/s, then checks the outcome with SQL counts and exits non-zero on any difference:
//! every subscription ACTIVE in cycle 2, exactly one invoice per subscription and cycle, each
//! renewal invoice COMPLETED with exactly one payment, SUCCEEDED, and the outbox holding
//! exactly one INVOICE_CREATED, PAYMENT_SUCCEEDED and INVOICE_COMPLETED per renewal and no
//! SUBSCRIPTION_CYCLE_RENEWAL_FAILED.
//!
//! Default: a temporary SQLite file, the worker in this process. `--database-url
//! postgres://user@host:port/db` makes a new database on that server (dropped at the end);
//! `--processes P` then runs the worker in P child processes (this binary re-executed with
//! `--worker-child`), which share the work through the database's leases as `billing-server`
//! processes do. The clock starts when the children are told to go (they have connected).

// Links the benches library, which installs the allocator of the server's binary (mimalloc).
extern crate benches;

use billing_core::auth::Credential;
use billing_core::fields::Email;
use billing_core::org::BootstrapRequest;
use billing_server::{App, Config};
use clap::Parser;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 100_000)]
    subscriptions: usize,
    /// A PostgreSQL server (`postgres://user@host:port/db`, allowed to create databases): the
    /// benchmark runs on a new database there. Default: a temporary SQLite file.
    #[arg(long)]
    database_url: Option<String>,
    /// Worker processes (PostgreSQL only; 1 runs the worker in this process).
    #[arg(long, default_value_t = 1)]
    processes: usize,
    /// Runners of each worker (the server's `--worker-concurrency`).
    #[arg(long, default_value_t = billing_server::DEFAULT_WORKER_CONCURRENCY)]
    concurrency: usize,
    /// PostgreSQL pool size of each process.
    #[arg(long, default_value_t = billing_server::DEFAULT_DATABASE_POOL_SIZE)]
    pool_size: u32,
    /// Subscriptions copied per seeding transaction.
    #[arg(long, default_value_t = 1000)]
    seed_batch: usize,
    /// Give up (and fail) after this many seconds of renewing.
    #[arg(long, default_value_t = 1800)]
    timeout: u64,
    /// Internal: run as a worker process on `--database-url` (an existing database).
    #[arg(long, hide = true)]
    worker_child: bool,
}

fn config(url: &str, args: &Args) -> Config {
    Config {
        jwt_secret: "bench".into(),
        public_url: "http://127.0.0.1".into(),
        worker: false,
        worker_poll_interval: Duration::from_millis(20),
        worker_concurrency: args.concurrency,
        database_pool_size: args.pool_size,
        ..Config::new(url.to_string())
    }
}

fn start_worker(app: &std::sync::Arc<App>) -> std::sync::Arc<billing_server::worker::Worker> {
    let options = billing_server::worker::WorkerOptions {
        poll_interval: app.config.worker_poll_interval,
        concurrency: app.config.worker_concurrency,
    };
    billing_server::worker::start(app, options)
}

/// A worker child: connects, says `ready`, starts its worker on `go`, and ends when its stdin
/// closes (the parent is done or gone).
fn worker_child(args: &Args) {
    let url = args.database_url.as_deref().expect("--worker-child needs --database-url");
    let app = App::open(config(url, args)).expect("open the database");
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut lines = std::io::stdin().lock().lines();
    match lines.next() {
        Some(Ok(l)) if l.trim() == "go" => {}
        _ => return,
    }
    let _worker = start_worker(&app);
    for _ in lines {}
}

/// SQL counts on either database (the same table and column names on both).
enum Db {
    Sqlite(rusqlite::Connection),
    Pg(diesel::PgConnection),
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

#[derive(diesel::QueryableByName)]
struct TypeCount {
    #[diesel(sql_type = diesel::sql_types::Text)]
    t: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

impl Db {
    fn open(url: &str) -> Db {
        match url.strip_prefix("sqlite://") {
            Some(path) => Db::Sqlite(rusqlite::Connection::open(path).expect("open the SQLite file")),
            None => Db::Pg(diesel::Connection::establish(url).expect("connect to PostgreSQL")),
        }
    }

    fn count(&mut self, sql: &str) -> i64 {
        use diesel::RunQueryDsl;
        match self {
            Db::Sqlite(c) => c.query_row(sql, [], |r| r.get(0)).unwrap_or_else(|e| panic!("{sql}: {e}")),
            Db::Pg(c) => {
                diesel::sql_query(sql.replacen("count(*)", "count(*) AS n", 1))
                    .get_result::<Count>(c)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"))
                    .n
            }
        }
    }

    /// Events in the outbox by type.
    fn events(&mut self) -> BTreeMap<String, i64> {
        use diesel::RunQueryDsl;
        let sql = "SELECT event_type AS t, count(*) AS n FROM events GROUP BY event_type";
        match self {
            Db::Sqlite(c) => {
                let mut st = c.prepare(sql).unwrap();
                st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                    .unwrap()
                    .map(|r| r.unwrap())
                    .collect()
            }
            Db::Pg(c) => diesel::sql_query(sql).load::<TypeCount>(c).unwrap().into_iter().map(|r| (r.t, r.n)).collect(),
        }
    }
}

/// The number of the last event in the outbox (events are numbered in insertion order).
const LAST_EVENT: &str = "SELECT COALESCE(max(seq), 0) AS n FROM events";

const PAID_RENEWALS: &str = "SELECT count(*) FROM payments p JOIN subscription_cycles c ON c.invoice_id = p.invoice_id \
     WHERE c.cycle_number = 2 AND p.status = 'SUCCEEDED'";

/// Checks the renewal day's outcome; returns the differences (empty when all is right).
fn check(db: &mut Db, n: i64, before: &BTreeMap<String, i64>) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut expect = |what: &str, got: i64, want: i64| {
        if got != want {
            wrong.push(format!("{what}: {got}, expected {want}"));
        }
    };
    expect("subscriptions", db.count("SELECT count(*) FROM subscriptions"), n);
    expect(
        "subscriptions ACTIVE in cycle 2",
        db.count("SELECT count(*) FROM subscriptions WHERE status = 'ACTIVE' AND current_cycle_number = 2"),
        n,
    );
    expect("cycle rows", db.count("SELECT count(*) FROM subscription_cycles"), 2 * n);
    expect("cycle-2 rows", db.count("SELECT count(*) FROM subscription_cycles WHERE cycle_number = 2"), n);
    expect(
        "(subscription, cycle) with more than one invoice",
        db.count(
            "SELECT count(*) FROM (SELECT subscription_id, cycle_number FROM subscription_cycles GROUP BY subscription_id, cycle_number HAVING count(*) > 1) d",
        ),
        0,
    );
    expect(
        "invoices of subscriptions",
        db.count("SELECT count(*) FROM invoices WHERE subscription_id IS NOT NULL"),
        2 * n,
    );
    expect(
        "renewal invoices COMPLETED, of their subscription",
        db.count(
            "SELECT count(*) FROM invoices i JOIN subscription_cycles c ON c.invoice_id = i.id \
             WHERE c.cycle_number = 2 AND i.status = 'COMPLETED' AND i.subscription_id = c.subscription_id",
        ),
        n,
    );
    expect(
        "payments of renewal invoices",
        db.count("SELECT count(*) FROM payments p JOIN subscription_cycles c ON c.invoice_id = p.invoice_id WHERE c.cycle_number = 2"),
        n,
    );
    expect("SUCCEEDED payments of renewal invoices", db.count(PAID_RENEWALS), n);
    let after = db.events();
    let delta = |t: &str| after.get(t).copied().unwrap_or(0) - before.get(t).copied().unwrap_or(0);
    for t in ["INVOICE_CREATED", "PAYMENT_SUCCEEDED", "INVOICE_COMPLETED"] {
        expect(&format!("{t} events"), delta(t), n);
    }
    expect("SUBSCRIPTION_CYCLE_RENEWAL_FAILED events", delta("SUBSCRIPTION_CYCLE_RENEWAL_FAILED"), 0);
    let others: i64 = after
        .keys()
        .filter(|t| !["INVOICE_CREATED", "PAYMENT_SUCCEEDED", "INVOICE_COMPLETED"].contains(&t.as_str()))
        .map(|t| delta(t))
        .sum();
    expect("other events", others, 0);
    wrong
}

fn main() {
    let args = Args::parse();
    if args.worker_child {
        return worker_child(&args);
    }
    assert!(
        args.processes <= 1 || args.database_url.is_some(),
        "--processes needs --database-url (SQLite runs in one process)"
    );
    let dir = tempfile::tempdir().unwrap();
    let temp_db = args
        .database_url
        .as_ref()
        .map(|server| billing_store_postgres::testing::TempDatabase::create(server).expect("create a benchmark database"));
    let url = match &temp_db {
        Some(db) => db.url().to_string(),
        None => format!("sqlite://{}", dir.path().join("bench.db").display()),
    };
    let n = args.subscriptions.max(1);
    let app = App::open(config(&url, &args)).expect("open the database");
    let boot = app
        .billing
        .org()
        .bootstrap(&BootstrapRequest {
            org_name: "Renewals".into(),
            admin_email: Email::parse("bench@example.com").unwrap(),
            sandbox: true,
        })
        .unwrap();
    let scope = app
        .billing
        .auth()
        .authenticate(
            &Credential::ApiKey {
                key: boot.api_key.key.clone(),
                secret: boot.api_key.secret.clone(),
            },
            None,
        )
        .unwrap();
    // Periods that ended a minute ago: the renewal into cycle 2 is due now.
    let now = app.billing.engine().clock().now();
    let period_start = (now - chrono::Duration::minutes(1)).checked_sub_months(chrono::Months::new(1)).unwrap();
    let seeding = Instant::now();
    billing_core::testkit::renewal_day::seed(&app.billing, &scope, n, period_start, args.seed_batch).expect("seed the subscriptions");
    println!(
        "renewalbench: {n} subscriptions on {} seeded in {:.1} s; {} worker process(es), concurrency {}",
        if temp_db.is_some() { "PostgreSQL" } else { "SQLite (file)" },
        seeding.elapsed().as_secs_f64(),
        args.processes.max(1),
        args.concurrency
    );
    let mut db = Db::open(&url);
    let before = db.events();
    let events_before = db.count(LAST_EVENT);

    let mut children: Vec<Child> = Vec::new();
    let mut worker = None;
    let started;
    if args.processes > 1 {
        let exe = std::env::current_exe().unwrap();
        for _ in 0..args.processes {
            let mut child = Command::new(&exe)
                .args(["--worker-child", "--database-url", &url])
                .args(["--concurrency", &args.concurrency.to_string(), "--pool-size", &args.pool_size.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("start a worker process");
            let mut line = String::new();
            std::io::BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
            assert_eq!(line.trim(), "ready", "a worker process did not start");
            children.push(child);
        }
        started = Instant::now();
        for c in &mut children {
            writeln!(c.stdin.as_mut().unwrap(), "go").unwrap();
        }
    } else {
        started = Instant::now();
        worker = Some(start_worker(&app));
    }
    let mut last_report = Instant::now();
    loop {
        // Counting the paid renewals scans them (a large share of a core at 100,000): it is
        // asked only once the outbox holds as many new events as the renewals make, or for a
        // progress line. Waiting on the last event's number alone costs an index lookup.
        let report = last_report.elapsed() > Duration::from_secs(5);
        let events = db.count(LAST_EVENT) - events_before;
        let paid = if report || events >= 3 * n as i64 { db.count(PAID_RENEWALS) } else { 0 };
        if paid >= n as i64 {
            break;
        }
        if started.elapsed() > Duration::from_secs(args.timeout) {
            eprintln!("FAILED: only {paid} of {n} renewals paid after {} s", args.timeout);
            std::process::exit(1);
        }
        for c in &mut children {
            if let Some(status) = c.try_wait().unwrap() {
                eprintln!("FAILED: a worker process exited ({status}) with {paid} of {n} renewals paid");
                std::process::exit(1);
            }
        }
        if report {
            println!("  {:.0} s: {paid} of {n} renewals paid", started.elapsed().as_secs_f64());
            last_report = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed().as_secs_f64();
    if let Some(w) = &worker {
        w.stop();
        w.drained(Duration::from_secs(60));
    }
    for mut c in children {
        drop(c.stdin.take());
        let _ = c.wait();
    }
    println!(
        "renewal day: {n} renewals (invoice + payment + events each) in {took:.2} s: {:.0} renewals/s",
        n as f64 / took
    );
    let wrong = check(&mut db, n as i64, &before);
    if !wrong.is_empty() {
        eprintln!("FAILED: the renewal day's outcome is wrong:");
        for w in &wrong {
            eprintln!("  {w}");
        }
        std::process::exit(1);
    }
    println!("checked: every subscription renewed once, one invoice per subscription and cycle, every renewal paid once, events as expected");
    drop(db);
    drop(app);
}
