//! billing-store-postgres: billing-core's [`Store`] on PostgreSQL, with diesel 2 (sync) and an
//! r2d2 connection pool.
//!
//! - [`PgStore::connect`] opens a pool and applies the embedded migrations (`migrations/`, the
//!   same schema as billing-store-sqlite's in native PostgreSQL types).
//! - [`Store::write`] runs the closure in a `SERIALIZABLE` transaction and retries it as a whole
//!   when PostgreSQL reports a serialization failure or a deadlock; each write statement runs in
//!   a savepoint, so a unique violation leaves the transaction usable.
//! - [`Store::read`] runs the closure in a `READ ONLY`, `REPEATABLE READ` transaction: one
//!   snapshot, never waiting for a writer.
//! - [`testing::TempDatabase`] gives tests a throw-away database on a server named by
//!   `BILLING_TEST_DATABASE_URL`.
//!
//! libpq is built from source (pq-sys's `bundled` feature), so no system libpq is needed.

// The plumbing: errors, what every resource file shares, the cross-table schema, test databases,
// priced lines (invoice, link and subscription items), and the batch machinery (what a batch
// defers and reads ahead, each resource through a part of its own: `deferred::Pending`,
// `prefetch::ReadAhead`).
mod auth_feed;
mod batch;
mod deferred;
mod error;
mod prefetch;
mod priced_line;
#[macro_use]
mod support;
mod schema;
pub mod testing;
mod transaction;

// One file per resource: its tables (`diesel::table!`), rows and queries, and its slice of
// `billing_model::store::Tx`.
mod api_key;
mod branch;
mod consumer;
mod coupon;
mod event;
mod idempotency;
mod invoice;
mod invoice_number;
mod notification;
mod org;
mod payment;
mod payment_link;
mod plan_change;
mod product;
mod subscription;
mod subscription_cycle;
mod subscription_freeze;
mod subscription_row;
mod webhook;
mod work;
mod work_claim;

pub use support::PgTx;

use billing_model::error::{Result, StoreError};
use billing_model::store::{Store, Tx};
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, Pool, PooledConnection};
use diesel::{Connection, RunQueryDsl};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use error::store_error;
use std::time::{Duration, Instant};
use support::TxMode;

/// The schema, compiled into the binary and applied by [`PgStore::connect`].
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");

type PgPool = Pool<ConnectionManager<PgConnection>>;

/// Pool and retry settings; [`Default`] suits a small service.
#[derive(Debug, Clone)]
pub struct PgStoreOptions {
    /// Most connections the pool opens (PostgreSQL's default `max_connections` is 100).
    pub max_connections: u32,
    /// Connections kept open while idle.
    pub min_idle: u32,
    /// How long a transaction waits for a free connection before failing.
    pub connection_timeout: Duration,
    /// How many times `write` runs its closure when every attempt meets a serialization
    /// failure or deadlock, before reporting `StoreError::Conflict`.
    pub max_write_attempts: u32,
    /// The collation case-insensitive search folds case with. `None` (the default) picks ICU's
    /// root collation when the server has it, else the database's default; set it only to pin
    /// the choice (a test, or a server whose ICU differs between replicas).
    pub search_collation: Option<&'static str>,
    /// How long a batch waits for the batch lock in all ([`DEFAULT_BATCH_LOCK_WAIT`]; see
    /// [`PgStore::set_batch_lock_wait`]).
    pub batch_lock_wait: Duration,
}

impl Default for PgStoreOptions {
    fn default() -> Self {
        PgStoreOptions {
            max_connections: 10,
            min_idle: 1,
            connection_timeout: Duration::from_secs(30),
            max_write_attempts: 20,
            search_collation: None,
            batch_lock_wait: DEFAULT_BATCH_LOCK_WAIT,
        }
    }
}

/// billing-core's [`Store`] on PostgreSQL.
pub struct PgStore {
    // Field order matters: the pool (and its connections) is dropped before the temporary
    // database it may point into, so that dropping the database finds no session in it.
    pool: PgPool,
    max_write_attempts: u32,
    /// See [`support::ICU_COLLATION`].
    search_collation: &'static str,
    /// Announces changes of what authentication reads (see [`auth_feed`]).
    auth: auth_feed::AuthFeed,
    /// See [`PgStore::set_batch_lock_wait`], in milliseconds.
    batch_lock_wait_ms: std::sync::atomic::AtomicU64,
    _temp: Option<testing::TempDatabase>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("pool", &self.pool.state())
            .field("max_write_attempts", &self.max_write_attempts)
            .finish()
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::backend(e.to_string())
}

/// Applies the pending migrations, one process at a time (a session-level advisory lock), so
/// that stores opening together on a new database do not race. Says in the log when it waits
/// for another process's migration and what it applies.
pub(crate) fn run_migrations(conn: &mut PgConnection) -> std::result::Result<(), StoreError> {
    use diesel::dsl::sql;
    use diesel::sql_types::Bool;
    // "billing" in ASCII: the lock's key, shared by every process migrating this schema.
    const LOCK_KEY: i64 = 0x0062_696c_6c69_6e67;
    let locked = diesel::select(sql::<Bool>(&format!("pg_try_advisory_lock({LOCK_KEY})")))
        .get_result::<bool>(conn)
        .map_err(backend)?;
    if !locked {
        tracing::info!("another process is migrating the database; waiting for it to finish");
        diesel::sql_query(format!("SELECT pg_advisory_lock({LOCK_KEY})"))
            .execute(conn)
            .map_err(backend)?;
    }
    let applied = apply_pending(conn);
    let unlocked = diesel::sql_query(format!("SELECT pg_advisory_unlock({LOCK_KEY})"))
        .execute(conn)
        .map(drop)
        .map_err(backend);
    applied.and(unlocked)
}

fn apply_pending(conn: &mut PgConnection) -> std::result::Result<(), StoreError> {
    let failed_boxed = |e: Box<dyn std::error::Error + Send + Sync>| StoreError::backend(format!("migrations failed: {e}"));
    let pending = conn.pending_migrations(MIGRATIONS).map_err(failed_boxed)?;
    if pending.is_empty() {
        return Ok(());
    }
    let fresh = conn.applied_migrations().map_err(failed_boxed)?.is_empty();
    let started = Instant::now();
    match fresh {
        true => tracing::info!(migrations = pending.len(), "creating the database schema"),
        false => tracing::info!(migrations = pending.len(), "migrating the database; large tables can take a while"),
    }
    for migration in pending {
        let name = migration.name().to_string();
        tracing::debug!(migration = %name, "applying migration");
        let t = Instant::now();
        conn.run_migration(&migration).map_err(failed_boxed)?;
        if t.elapsed() > std::time::Duration::from_secs(1) {
            tracing::info!(migration = %name, elapsed_ms = t.elapsed().as_millis() as u64, "migration applied");
        }
    }
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "database schema up to date");
    Ok(())
}

fn collation_exists(conn: &mut PgConnection, name: &str) -> std::result::Result<bool, StoreError> {
    use diesel::dsl::sql;
    use diesel::sql_types::{Bool, Text};
    let query = sql::<Bool>("EXISTS (SELECT 1 FROM pg_collation WHERE collname = ")
        .bind::<Text, _>(name.to_string())
        .sql(")");
    diesel::select(query).get_result::<bool>(conn).map_err(backend)
}

/// The collation search folds case with: the one `options` names (which must exist), else
/// ICU's root collation if the server has it, else the database's default. Migration
/// `0002_search_trigram` makes the same automatic choice for its trigram indexes: keep them in
/// step.
fn search_collation(conn: &mut PgConnection, named: Option<&'static str>) -> std::result::Result<&'static str, StoreError> {
    if let Some(name) = named {
        return match collation_exists(conn, name)? {
            true => Ok(name),
            false => Err(StoreError::backend(format!("the server has no collation named {name:?}"))),
        };
    }
    Ok(match collation_exists(conn, support::ICU_COLLATION)? {
        true => support::ICU_COLLATION,
        false => support::DEFAULT_COLLATION,
    })
}

/// The write gate: an advisory lock (database-wide, so across processes) that every write
/// transaction takes first. Normally in shared mode, so writes run concurrently and
/// SERIALIZABLE sorts out their conflicts with retries. A write that has lost
/// [`EXCLUSIVE_AFTER`] attempts to conflicts retries in exclusive mode: it waits for the writes
/// in flight, holds new ones back, and runs alone, where nothing can conflict with it. So every
/// write finishes, however contended, at the cost of a short pause for the others.
pub const WRITE_GATE: i64 = 0x0062_696c_6c69_6e67; // "billing" in ASCII
/// Conflicted attempts before a write runs alone.
pub const EXCLUSIVE_AFTER: u32 = 3;

/// The batch lock: a session-level advisory lock (database-wide) that every pass of
/// [`Store::write_each`] takes *before* its BEGIN, so the due-work engine's batches run one at a
/// time, each with a snapshot taken after the one before it committed.
///
/// Why: a renewal batch and a charge-outcome batch of other subscriptions still touch the same
/// rows and index pages (the organization's invoice counter, the newest pages of the payments',
/// invoices' and queue's indexes, subscriptions sharing a heap page), so under SERIALIZABLE most
/// of them, run side by side, failed on a conflict and ran again, and after [`EXCLUSIVE_AFTER`]
/// failures stopped every writer of the database. Measured on a renewal day of 10,000 with two
/// processes: 132 conflicts and 28.7 s side by side, none and 23.3 s in turn. Only these
/// batches take it: requests and the other background writes run beside them as before.
pub const BATCH_LOCK: i64 = 0x0062_6174_6368_6573; // "batches" in ASCII
/// How long a [`Store::write_each`] waits for the batch lock, over all its attempts, before it
/// runs without it (see [`BATCH_LOCK`] and [`PgStore::set_batch_lock_wait`]): a quarter of the
/// due-work engine's default lease.
pub const DEFAULT_BATCH_LOCK_WAIT: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// A read: no gate.
    None,
    Shared,
    /// A due-work transaction ([`Store::write_leased`]): the gate shared, READ COMMITTED,
    /// asynchronous commit.
    SharedLeased,
    /// An insert-only transaction ([`Store::write_inserts`]): the gate shared, READ COMMITTED.
    SharedInserts,
    Exclusive,
}

impl PgStore {
    /// The pool's connections: (open, idle, most it opens), for monitoring.
    pub fn pool_use(&self) -> (u32, u32, u32) {
        let st = self.pool.state();
        (st.connections, st.idle_connections, self.pool.max_size())
    }

    /// Opens a pool on `url` (`postgres://user@host:port/database`) with default options and
    /// applies the pending migrations.
    pub fn connect(url: &str) -> std::result::Result<PgStore, StoreError> {
        Self::connect_with(url, PgStoreOptions::default())
    }

    pub fn connect_with(url: &str, options: PgStoreOptions) -> std::result::Result<PgStore, StoreError> {
        let mut conn = PgConnection::establish(url).map_err(backend)?;
        run_migrations(&mut conn)?;
        let search_collation = search_collation(&mut conn, options.search_collation)?;
        drop(conn);
        let pool = Pool::builder()
            .max_size(options.max_connections.max(1))
            .min_idle(Some(options.min_idle.min(options.max_connections)))
            .connection_timeout(options.connection_timeout)
            // No `SELECT 1` per checkout (a round trip per transaction): a connection that broke
            // while idle fails its BEGIN, and `run` then retries on a new one.
            .test_on_check_out(false)
            .connection_customizer(Box::new(CountStatements))
            .build(ConnectionManager::<PgConnection>::new(url))
            .map_err(backend)?;
        Ok(PgStore {
            pool,
            max_write_attempts: options.max_write_attempts.max(1),
            search_collation,
            auth: auth_feed::AuthFeed::start(url),
            batch_lock_wait_ms: (options.batch_lock_wait.as_millis() as u64).into(),
            _temp: None,
        })
    }

    /// Sets how long a [`Store::write_each`] waits for the batch lock ([`BATCH_LOCK`]), over
    /// all its attempts, before it runs without it. The batch's items are leased while it
    /// waits: a wait that ate their leases would have other runners claim them again, and
    /// batches queued behind the lock would keep losing their items (on a slow machine, in a
    /// debug build, with short leases). So set it well inside the due-work lease; the server
    /// sets a quarter of its lease. Zero: a batch never waits for the lock, and runs without it.
    pub fn set_batch_lock_wait(&self, wait: Duration) {
        self.batch_lock_wait_ms.store(wait.as_millis() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// See [`Self::set_batch_lock_wait`].
    pub fn batch_lock_wait(&self) -> Duration {
        Duration::from_millis(self.batch_lock_wait_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// A store on a temporary database, which is dropped with the store.
    pub fn open_temp(db: testing::TempDatabase) -> std::result::Result<PgStore, StoreError> {
        let options = PgStoreOptions {
            max_connections: 8,
            min_idle: 0,
            ..PgStoreOptions::default()
        };
        let mut store = Self::connect_with(db.url(), options)?;
        store._temp = Some(db);
        Ok(store)
    }

    fn conn(&self) -> std::result::Result<PooledConnection<ConnectionManager<PgConnection>>, StoreError> {
        self.pool.get().map_err(|e| StoreError::backend(format!("no database connection: {e}")))
    }
}

impl Store for PgStore {
    fn read<R>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.run(Gate::None, |tx: &mut PgTx<'_>| f(tx))
    }

    fn write<R>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.run(Gate::Shared, |tx: &mut PgTx<'_>| f(tx))
    }

    fn write_leased<R>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.run(Gate::SharedLeased, |tx: &mut PgTx<'_>| f(tx))
    }

    fn write_inserts<R>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.run(Gate::SharedInserts, |tx: &mut PgTx<'_>| f(tx))
    }

    /// One SERIALIZABLE transaction (retried as a whole on a conflict, like `write`) for the
    /// lot: one BEGIN, gate and COMMIT (one WAL flush). First every item runs directly in it,
    /// without savepoints (a write statement is then one round trip instead of three: SAVEPOINT,
    /// the statement, RELEASE); when an item fails, that attempt is rolled back and the batch
    /// runs again with a savepoint per item: an item whose closure fails, or whose statement
    /// failed, is rolled back to its savepoint and the next one carries on.
    fn write_each<T, R>(&self, items: &[T], mut f: impl FnMut(&mut dyn Tx, &T) -> Result<R>) -> Vec<Result<R>> {
        if items.len() < 2 {
            return items.iter().map(|item| self.write(|tx| f(tx, item))).collect();
        }
        let mut out: Vec<Result<R>> = Vec::with_capacity(items.len());
        let mut an_item_failed = false;
        // One budget for every attempt of both passes (see `set_batch_lock_wait`).
        let mut wait = self.batch_lock_wait();
        let direct = self.run_as(Gate::Shared, Some(&mut wait), |tx: &mut PgTx<'_>| {
            tx.mode = TxMode::NoSavepoints;
            tx.defer_appends(deferred_parts(items.len()));
            out.clear();
            an_item_failed = false;
            for item in items {
                let r = f(tx, item);
                if tx.state.conflict {
                    // The whole transaction runs again.
                    return Err(StoreError::Conflict("serialization conflict in a batch".into()).into());
                }
                if r.is_err() || tx.state.aborted.is_some() {
                    an_item_failed = true;
                    return Err(StoreError::backend("an item of the batch failed: it runs again with savepoints").into());
                }
                out.push(r);
            }
            // What the items appended goes out now; a failure there is one item's (a
            // duplicate, a foreign key), which the pass with savepoints finds.
            let sent = tx.end_deferring();
            if tx.state.conflict {
                return Err(StoreError::Conflict("serialization conflict in a batch".into()).into());
            }
            if sent.is_err() || tx.state.aborted.is_some() {
                an_item_failed = true;
                return Err(StoreError::backend("the batch's appends failed: it runs again with savepoints").into());
            }
            Ok(())
        });
        match direct {
            Ok(()) => return out,
            Err(e) if !an_item_failed => return items.iter().map(|_| Err(e.clone())).collect(),
            Err(_) => {}
        }
        let ran = self.run_as(Gate::Shared, Some(&mut wait), |tx: &mut PgTx<'_>| {
            out.clear();
            for item in items {
                AnsiTransactionManager::begin_transaction(&mut *tx.conn).map_err(store_error)?;
                let r = f(tx, item);
                // A statement that failed outside its own savepoint aborted only this item's
                // savepoint, which is rolled back below.
                let aborted = tx.state.aborted.take();
                let keep = r.is_ok() && aborted.is_none();
                if !keep {
                    // What it read may include what it wrote.
                    tx.forget_reads();
                }
                let ended = match keep {
                    true => AnsiTransactionManager::commit_transaction(&mut *tx.conn),
                    false => AnsiTransactionManager::rollback_transaction(&mut *tx.conn),
                };
                ended.map_err(store_error)?;
                if tx.state.conflict {
                    // The whole transaction runs again.
                    return Err(StoreError::Conflict("serialization conflict in a batch".into()).into());
                }
                out.push(match (r, aborted) {
                    (Ok(_), Some(msg)) => Err(StoreError::backend(format!("a failed statement rolled the item back: {msg}")).into()),
                    (r, _) => r,
                });
            }
            Ok(())
        });
        match ran {
            Ok(()) => out,
            Err(e) => items.iter().map(|_| Err(e.clone())).collect(),
        }
    }

    /// Runs `f` with no transaction (no BEGIN and COMMIT round trips): its one statement is its
    /// own snapshot. If it ran more than one after all, its answer may mix snapshots, so it is
    /// thrown away and `f` runs again in a read transaction.
    fn read_one<R>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        let mut conn = self.conn()?;
        let before = statements_run();
        let out = {
            let _open = billing_model::store::OpenTransaction::new();
            f(&mut PgTx::new(&mut conn, self.search_collation, TxMode::Autocommit))
        };
        if statements_run() - before <= 1 {
            return out;
        }
        drop(conn);
        self.run(Gate::None, |tx: &mut PgTx<'_>| f(tx))
    }

    fn auth_generation(&self) -> Option<u64> {
        self.auth.generation()
    }

    fn await_auth_propagation(&self) {
        std::thread::sleep(auth_feed::POLL * 2);
    }
}

/// What a batch's first pass of `items` items defers into: one part per batched resource, in
/// the order their writes go out (see `deferred`: the referenced tables first), and the invoice
/// numbers it takes ahead.
fn deferred_parts(items: usize) -> batch::Parts {
    vec![
        Box::<invoice::Deferred>::default(),
        Box::new(invoice_number::Numbers::ahead(items)),
        Box::<payment::Deferred>::default(),
        Box::<subscription::Deferred>::default(),
        Box::<subscription_cycle::Deferred>::default(),
        Box::<event::Deferred>::default(),
        Box::<work::Deferred>::default(),
    ]
}

thread_local! {
    static STATEMENTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Statements this thread has sent on the store's connections so far.
fn statements_run() -> u64 {
    STATEMENTS.with(|c| c.get())
}

/// Counts the statements each pooled connection sends (on the sending thread), so that
/// [`Store::read_one`] can tell a lone statement from several.
#[derive(Debug)]
struct CountStatements;

impl diesel::r2d2::CustomizeConnection<PgConnection, diesel::r2d2::Error> for CountStatements {
    fn on_acquire(&self, conn: &mut PgConnection) -> std::result::Result<(), diesel::r2d2::Error> {
        // No JIT compilation on the store's sessions. PostgreSQL compiles a statement whose
        // estimated cost passes `jit_above_cost`, and the estimates of a queue that grows
        // faster than its statistics follow do: during a renewal day of 30,000 subscriptions
        // each claim spent 13 to 165 ms compiling a statement that then ran in 5 ms (the
        // claims alone took 13.3 s of the database's time; 1.8 s without). Every statement
        // here reads or writes a few hundred rows at most, which JIT never pays back.
        conn.batch_execute("SET jit = off").map_err(diesel::r2d2::Error::QueryError)?;
        conn.set_instrumentation(|event: diesel::connection::InstrumentationEvent<'_>| {
            if matches!(event, diesel::connection::InstrumentationEvent::StartQuery { .. }) {
                STATEMENTS.with(|c| c.set(c.get() + 1));
            }
        });
        Ok(())
    }
}
