//! The SQLite store: rusqlite (bundled SQLite), WAL mode with `synchronous=FULL`, migrations
//! embedded and applied on open.
//!
//! - Writes go through one writer connection with *group commit*: concurrent transactions run
//!   one after another inside a shared SQLite transaction (each in its own savepoint, so a
//!   failing one rolls back alone) and are committed together with one fsync; each caller is
//!   answered only after the commit that made its work durable.
//! - Reads use a pool of separate connections; in WAL mode they read the last committed state
//!   and never wait for the writer.
//!
//! Layout: `writer.rs`, `executor.rs` and `migrate.rs` are the plumbing; `sql.rs` is what the
//! table files share (the `table!` macro declares each table's columns once); each resource has
//! one file implementing its slice of `billing_model::store::Tx`. Adding a resource: one file
//! here and one migration in `migrations/`.

// The plumbing: the writer (group commit), the executor that feeds it, migrations, and what
// every table file shares.
mod checkpoint;
mod executor;
mod memo;
mod memory;
mod migrate;
mod numbers;
mod priced_line;
#[macro_use]
mod sql;
mod statements;
mod writer;

// One file per resource, each implementing its slice of `billing_model::store::Tx`.
mod api_key;
mod auth_watch;
mod branch;
mod consumer;
mod coupon;
mod event;
mod idempotency;
mod invoice;
mod notification;
mod org;
mod payment;
mod payment_link;
mod plan_change;
mod product;
mod subscription;
mod subscription_freeze;
mod webhook;
mod work;

use billing_model::error::{Result, StoreError};
use billing_model::store::{Store, Tx};
use rusqlite::{Connection, OpenFlags};
use sql::ConstraintNames;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use writer::Writer;

#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    writer: Writer,
    /// `None` for an in-memory database, which has a single connection.
    path: Option<PathBuf>,
    readers: Mutex<Vec<Connection>>,
    constraints: ConstraintNames,
    /// Remove the database files when the store goes away (temporary databases).
    delete_on_drop: bool,
    /// The write executor's queue, started on first use.
    executor: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<executor::Job>>>,
    /// Commits by other processes, for the auth generation.
    auth_watch: auth_watch::AuthWatch,
    /// Copies the WAL into the database file off the writer's path (file databases).
    checkpointer: Option<checkpoint::Checkpointer>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.checkpointer.take();
        if let (true, Some(p)) = (self.delete_on_drop, &self.path) {
            self.readers.get_mut().map(|r| r.clear()).ok();
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
            }
        }
    }
}

/// Idle read connections kept for reuse; opening one costs far more than a query.
const READ_POOL_MAX_IDLE: usize = 256;

/// Whether SQLite allocates from the process's (Rust's global) allocator: true when the first
/// SQLite connection of the process was opened by this store.
pub fn sqlite_memory_from_process_allocator() -> bool {
    memory::installed()
}

/// Process-wide SQLite settings, applied once before the first connection opens.
fn init_sqlite() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Memory statistics make every allocation take one global mutex, which serializes the
        // reader connections; this store never reads the statistics.
        // SAFETY: sqlite3_config is called before any connection exists, as SQLite requires.
        unsafe {
            rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as std::os::raw::c_int);
        }
        memory::install();
    });
}

/// Whether `haystack` contains `needle_folded` (already lower-cased), ignoring case across all of
/// Unicode. SQLite's LIKE folds ASCII only; searches must fold every script the same way.
pub(crate) fn contains_folded(haystack: &str, needle_folded: &str) -> bool {
    if haystack.is_ascii() && needle_folded.is_ascii() {
        let (h, n) = (haystack.as_bytes(), needle_folded.as_bytes());
        return n.is_empty() || h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
    }
    haystack.to_lowercase().contains(needle_folded)
}

fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function("contains_folded", 2, FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC, |ctx| {
        let hay: Option<String> = ctx.get(0)?;
        let needle: String = ctx.get(1)?;
        Ok(hay.is_some_and(|h| contains_folded(&h, &needle)))
    })
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    register_functions(conn)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // mmap lets every connection read pages straight from the OS page cache instead of keeping
    // its own copy, which matters with many reader connections.
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -8192; PRAGMA mmap_size = 1073741824;")?;
    conn.set_prepared_statement_cache_capacity(256);
    Ok(())
}

/// BEGIN / COMMIT through the statement cache (no re-parsing per transaction).
fn exec_cached(conn: &Connection, sql: &str) -> std::result::Result<(), StoreError> {
    conn.prepare_cached(sql).and_then(|mut st| st.execute([])).map(|_| ()).map_err(backend)
}

/// The read transaction a thread has open through [`SqliteStore::read_session`].
mod session {
    use rusqlite::Connection;
    use std::cell::Cell;

    thread_local! {
        static CURRENT: Cell<Option<(usize, *const Connection)>> = const { Cell::new(None) };
    }

    pub fn current(store: usize) -> Option<*const Connection> {
        CURRENT.with(|c| c.get()).filter(|(s, _)| *s == store).map(|(_, conn)| conn)
    }

    /// Marks a session open for its lifetime (also when `f` panics).
    pub struct Open;

    impl Open {
        pub fn new(store: usize, conn: &Connection) -> Self {
            CURRENT.with(|c| c.set(Some((store, conn as *const Connection))));
            Open
        }
    }

    impl Drop for Open {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(None));
        }
    }
}

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::backend_from(e)
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path` and migrates it.
    pub fn open(path: impl AsRef<Path>) -> std::result::Result<Self, StoreError> {
        init_sqlite();
        let path = path.as_ref().to_path_buf();
        // The writer is only ever used under the Writer's mutex: SQLite's own mutex is not needed.
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(backend)?;
        // Another process may hold the file's lock (a migration, a long write): wait for it,
        // saying so, rather than fail at the first statement.
        conn.busy_handler(Some(migrate::wait_for_lock)).map_err(backend)?;
        // WAL lets readers run beside the writer; FULL syncs the WAL on every commit, so an
        // answered write survives power loss.
        conn.pragma_update(None, "journal_mode", "WAL").map_err(backend)?;
        conn.pragma_update(None, "synchronous", "FULL").map_err(backend)?;
        configure(&conn).map_err(backend)?;
        migrate::apply(&conn)?;
        let constraints = Arc::new(migrate::unique_constraint_names(&conn)?);
        // Commits never checkpoint: the checkpoint thread does (see `checkpoint`).
        conn.pragma_update(None, "wal_autocheckpoint", 0).map_err(backend)?;
        // A WAL started over is cut back to this size (see `checkpoint`).
        conn.pragma_update(None, "journal_size_limit", checkpoint::WAL_SIZE_LIMIT).map_err(backend)?;
        let writer = Writer::new(conn, true);
        let checkpointer = checkpoint::Checkpointer::start(path.clone(), writer.restart_flag())?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                writer,
                path: Some(path),
                readers: Mutex::new(Vec::new()),
                constraints,
                delete_on_drop: false,
                executor: Default::default(),
                auth_watch: Default::default(),
                checkpointer: Some(checkpointer),
            }),
        })
    }

    /// A new file database in the system's temporary directory, deleted when the last handle to
    /// the store is dropped (tests and benchmarks).
    pub fn open_temporary() -> std::result::Result<Self, StoreError> {
        let path = std::env::temp_dir().join(format!("billing-{}.db", uuid::Uuid::new_v4()));
        let store = Self::open(&path)?;
        // Safe: nobody else holds the Arc yet.
        let mut inner = Arc::try_unwrap(store.inner).map_err(|_| StoreError::backend("store shared during open"))?;
        inner.delete_on_drop = true;
        Ok(SqliteStore { inner: Arc::new(inner) })
    }

    /// A private in-memory database (tests, examples). It has one connection, so reads share
    /// the writer and there is no group commit.
    pub fn in_memory() -> std::result::Result<Self, StoreError> {
        init_sqlite();
        let conn = Connection::open_in_memory().map_err(backend)?;
        configure(&conn).map_err(backend)?;
        migrate::apply(&conn)?;
        let constraints = Arc::new(migrate::unique_constraint_names(&conn)?);
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                writer: Writer::new(conn, false),
                path: None,
                readers: Mutex::new(Vec::new()),
                constraints,
                delete_on_drop: false,
                executor: Default::default(),
                auth_watch: Default::default(),
                checkpointer: None,
            }),
        })
    }

    /// Accepts `sqlite://path`, `sqlite:path`, `sqlite::memory:` or a plain path.
    pub fn open_url(url: &str) -> std::result::Result<Self, StoreError> {
        let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url);
        if path == ":memory:" {
            return Self::in_memory();
        }
        Self::open(path)
    }

    fn reader(&self) -> std::result::Result<Connection, StoreError> {
        if let Some(c) = self.inner.readers.lock().unwrap().pop() {
            return Ok(c);
        }
        let path = self.inner.path.as_ref().expect("file database");
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(backend)?;
        configure(&conn).map_err(backend)?;
        Ok(conn)
    }

    fn give_back(&self, conn: Connection) {
        let mut pool = self.inner.readers.lock().unwrap();
        if pool.len() < READ_POOL_MAX_IDLE {
            pool.push(conn);
        }
    }

    /// Runs `f` with one read transaction open on this thread: every `read` of this store that
    /// `f` makes shares it (one snapshot, one BEGIN/COMMIT). For a request that authenticates
    /// and then reads. Writes are unaffected.
    pub fn read_session<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.inner.path.is_none() || session::current(self.id()).is_some() {
            return f();
        }
        let Ok(conn) = self.reader() else { return f() };
        if exec_cached(&conn, "BEGIN").is_err() {
            return f();
        }
        let result = {
            let _open = session::Open::new(self.id(), &conn);
            let _tx = billing_model::store::OpenTransaction::new();
            f()
        };
        if exec_cached(&conn, "COMMIT").is_ok() {
            self.give_back(conn);
        }
        result
    }

    /// Runs `job` (an operation that writes) on the store's write executor and resolves with its
    /// result once the batch it ran in has committed. Jobs queued together run one after another
    /// in one transaction, each in its own savepoint, and share one fsync: the way an async
    /// server gets group commit without a blocking thread per request.
    pub fn execute<R: Send + 'static>(&self, job: impl FnOnce() -> Result<R> + Send + 'static) -> impl std::future::Future<Output = Result<R>> + Send {
        let (job, done) = executor::job(job);
        let sent = {
            let queue = self.inner.executor.get_or_init(|| Mutex::new(executor::start(Arc::downgrade(&self.inner))));
            queue.lock().unwrap_or_else(|p| p.into_inner()).send(job).is_ok()
        };
        async move {
            if !sent {
                return Err(StoreError::backend("the write executor has stopped").into());
            }
            done.await.unwrap_or_else(|_| Err(StoreError::backend("the write executor has stopped").into()))
        }
    }

    fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// Number of transactions committed and of commits (fsyncs) so far: their ratio shows how
    /// well group commit batches.
    pub fn commit_stats(&self) -> (u64, u64) {
        self.inner.writer.stats()
    }
}

impl Store for SqliteStore {
    fn read<R>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        if self.inner.path.is_none() {
            return self.inner.writer.run_alone(&self.inner.constraints, &mut f);
        }
        if let Some(conn) = self.inner.writer.batch_connection() {
            // SAFETY: a batch keeps its connection until the job that is calling returns.
            let conn = unsafe { &*conn };
            return f(&mut sql::SqliteTx::new(conn, &self.inner.constraints));
        }
        if let Some(conn) = session::current(self.id()) {
            // SAFETY: the session's connection lives until `read_session` returns, which is
            // after this call, on this same thread.
            let conn = unsafe { &*conn };
            return f(&mut sql::SqliteTx::new(conn, &self.inner.constraints));
        }
        let conn = self.reader()?;
        // An explicit transaction gives every statement of `f` the same snapshot.
        exec_cached(&conn, "BEGIN")?;
        let result = {
            let _open = billing_model::store::OpenTransaction::new();
            let mut tx = sql::SqliteTx::new(&conn, &self.inner.constraints);
            f(&mut tx)
        };
        if exec_cached(&conn, "COMMIT").is_ok() {
            self.give_back(conn);
        }
        result
    }

    fn write<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.inner.writer.write(&self.inner.constraints, f)
    }

    /// One batch transaction (the writer's, as group commit makes it), committed once; the items
    /// run in it without savepoints, and only when one fails does the batch run again with a
    /// savepoint per item: one lock hand-over and one fsync for the lot. Reads made by `f`
    /// see the batch's own writes. (The in-memory store reads on the writer itself, which the
    /// batch holds: it runs one `write` per item.)
    fn write_each<T, R>(&self, items: &[T], mut f: impl FnMut(&mut dyn Tx, &T) -> Result<R>) -> Vec<Result<R>> {
        if self.inner.path.is_none() || items.len() < 2 {
            return items.iter().map(|item| self.write(|tx| f(tx, item))).collect();
        }
        let mut out = Vec::with_capacity(items.len());
        // First all in the transaction without savepoints; if one fails, all again, each in a
        // savepoint (see `Writer::run_batch_optimistic`).
        let failed = self.inner.writer.run_batch_optimistic(|savepoints| {
            out.clear();
            // The first pass takes invoice numbers a batch at a time (see `numbers`).
            let _taking = (!savepoints).then(|| numbers::take_ahead(items.len()));
            for item in items {
                let r = self.write(|tx| f(tx, item));
                let ok = r.is_ok();
                out.push(r);
                if !ok && !savepoints {
                    return false;
                }
            }
            if !savepoints {
                let Some(conn) = self.inner.writer.batch_connection() else { return false };
                // SAFETY: the batch keeps its connection until this closure returns.
                let tx = sql::SqliteTx::new(unsafe { &*conn }, &self.inner.constraints);
                if tx.give_back_numbers().is_err() {
                    return false;
                }
            }
            true
        });
        match failed {
            Some(e) => items.iter().map(|_| Err(e.clone().into())).collect(),
            None => out,
        }
    }

    /// Every change of an auth table goes through this process's writer (SQLite is for one
    /// process), which moves the generation after committing it. The in-memory store reads
    /// on the writer itself and keeps nothing.
    fn auth_generation(&self) -> Option<u64> {
        self.inner.path.as_ref()?;
        let others = self.inner.auth_watch.generation(|| self.reader().ok());
        Some(self.inner.writer.auth_generation() + others)
    }

    /// Another process on the same file (the command line revoking a key) is noticed within
    /// [`auth_watch::POLL`] of a request asking: waiting twice that makes the change in force
    /// there when this returns.
    fn await_auth_propagation(&self) {
        if self.inner.path.is_some() {
            std::thread::sleep(auth_watch::POLL * 2);
        }
    }
}
