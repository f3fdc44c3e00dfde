//! The single writer connection, with group commit.
//!
//! Each caller runs its transaction on the caller's own thread, in a savepoint inside a shared
//! SQLite transaction (the *batch*). A caller that sees others queued behind it leaves the batch
//! open and waits; the last caller in line commits the batch (one fsync) and wakes everyone in
//! it. So under load many transactions share an fsync, and alone a transaction commits at once.
//! A transaction that fails rolls back to its savepoint and leaves the batch unharmed.

use crate::sql::{ConstraintNames, SqliteTx};
use billing_model::error::{Result, StoreError};
use billing_model::store::Tx;
use rusqlite::Connection;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The tables authentication reads: a committed change to one of them moves the auth
/// generation ([`Writer::auth_generation`]).
const AUTH_TABLES: [&str; 5] = ["organizations", "branches", "users", "user_branches", "api_keys"];

/// Upper bound of transactions per commit, so that latency stays bounded under heavy load.
const MAX_BATCH: usize = 512;

pub struct Writer {
    state: Mutex<State>,
    /// Which batches have finished committing, under a lock of its own: the callers waiting
    /// for their batch's commit wake up and leave without taking the connection's lock, so a
    /// commit does not make them queue (one context switch each) behind the next batch's
    /// transactions.
    outcome: Mutex<Outcome>,
    committed: Condvar,
    /// Callers waiting for the connection: when non-zero, the current holder need not commit.
    queued: AtomicUsize,
    group_commit: bool,
    transactions: AtomicU64,
    commits: AtomicU64,
    /// A statement on the writer changed an auth table since the last commit (set by SQLite's
    /// update hook, so no write can forget it).
    auth_dirty: Arc<AtomicBool>,
    /// Moves after each commit that changed an auth table (`Store::auth_generation`): the
    /// writer is the only one that changes them, so it knows every change of the process.
    auth_generation: AtomicU64,
    /// Set by the checkpoint thread when the WAL should start over (`checkpoint`): done by the
    /// writer after its next commit, between two of its transactions.
    restart_wal: Arc<AtomicBool>,
}

struct State {
    conn: Connection,
    /// Whether a batch transaction is open.
    open: bool,
    /// Id of the open batch (or of the last one).
    batch: u64,
    in_batch: usize,
    /// No WAL restart before then (readers kept the last one from finishing).
    restart_not_before: std::time::Instant,
}

struct Outcome {
    /// Every batch up to this id has finished committing (successfully or not).
    done: u64,
    /// Recently failed batches and why, for the callers still waiting on them.
    failed: Vec<(u64, String)>,
}

impl Outcome {
    fn failure(&self, batch: u64) -> Option<StoreError> {
        self.failed
            .iter()
            .find(|(b, _)| *b == batch)
            .map(|(_, why)| StoreError::backend(format!("commit failed: {why}")))
    }
}

impl Writer {
    pub fn new(conn: Connection, group_commit: bool) -> Self {
        let auth_dirty = Arc::new(AtomicBool::new(false));
        let dirty = auth_dirty.clone();
        conn.update_hook(Some(move |_: rusqlite::hooks::Action, _: &str, table: &str, _: i64| {
            if AUTH_TABLES.contains(&table) {
                dirty.store(true, Ordering::SeqCst);
            }
            if crate::memo::TABLES.contains(&table) {
                crate::memo::forget();
            }
        }));
        Writer {
            state: Mutex::new(State {
                conn,
                open: false,
                batch: 0,
                in_batch: 0,
                restart_not_before: std::time::Instant::now(),
            }),
            outcome: Mutex::new(Outcome { done: 0, failed: Vec::new() }),
            committed: Condvar::new(),
            queued: AtomicUsize::new(0),
            group_commit,
            transactions: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            auth_dirty,
            auth_generation: AtomicU64::new(0),
            restart_wal: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The flag that asks this writer to start the WAL over after its next commit.
    pub fn restart_flag(&self) -> Arc<AtomicBool> {
        self.restart_wal.clone()
    }

    /// Starts the WAL over if the checkpoint thread asked: a RESTART checkpoint on the writer's
    /// own connection, between two of its transactions (no lock to win from it), which copies
    /// what PASSIVE checkpoints left and waits for readers to leave the WAL, each for at most
    /// [`crate::checkpoint::RESTART_WAIT`]; the next write then starts at the WAL's beginning.
    /// When readers outlast that, it is tried again after [`crate::checkpoint::RESTART_BACKOFF`].
    fn restart_wal_if_asked(&self, st: &mut State) {
        if st.open || !self.restart_wal.swap(false, Ordering::SeqCst) || std::time::Instant::now() < st.restart_not_before {
            return;
        }
        let _ = st.conn.busy_timeout(crate::checkpoint::RESTART_WAIT);
        // (busy, frames, copied): busy is 1 when a reader kept it from finishing.
        let done = st.conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0));
        let _ = st.conn.busy_timeout(crate::migrate::BUSY_TIMEOUT);
        if !matches!(done, Ok(0)) {
            st.restart_not_before = std::time::Instant::now() + crate::checkpoint::RESTART_BACKOFF;
        }
    }

    pub fn auth_generation(&self) -> u64 {
        self.auth_generation.load(Ordering::SeqCst)
    }

    /// After a commit (or rollback): a change of an auth table moves the generation. Only
    /// after, so that no reader can keep the old rows under the new generation.
    fn settle_auth_changes(&self) {
        if self.auth_dirty.swap(false, Ordering::SeqCst) {
            self.auth_generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub fn stats(&self) -> (u64, u64) {
        (self.transactions.load(Ordering::Relaxed), self.commits.load(Ordering::Relaxed))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        let guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.queued.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Runs `f` on the writer connection in a transaction of its own, committed at once (the
    /// in-memory store's reads and writes).
    pub fn run_alone<R>(&self, names: &ConstraintNames, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        let st = self.lock();
        exec(&st.conn, "BEGIN")?;
        let result = catch_unwind(AssertUnwindSafe(|| {
            let _open = billing_model::store::OpenTransaction::new();
            f(&mut SqliteTx::new(&st.conn, names))
        }));
        let ended = match &result {
            Ok(Ok(_)) => match index_new_consumers(&st.conn) {
                Ok(()) => exec(&st.conn, "COMMIT"),
                Err(e) => exec(&st.conn, "ROLLBACK").and(Err(e)),
            },
            _ => exec(&st.conn, "ROLLBACK"),
        };
        self.settle_auth_changes();
        ended?;
        drop(st);
        match result {
            Ok(r) => r,
            Err(p) => resume_unwind(p),
        }
    }

    /// Runs `f` with a batch transaction open on this thread: every `write` that `f` makes on
    /// this writer runs in its own savepoint of that transaction, which commits once (one
    /// fsync) after `f` returns. Returns why the commit failed, if it did; then nothing that
    /// `f` wrote was kept.
    pub fn run_batch(&self, f: impl FnOnce()) -> Option<StoreError> {
        let mut st = self.lock();
        let batch = match self.open_batch(&mut st) {
            Ok(b) => b,
            Err(e) => return Some(e),
        };
        {
            let _open = batch_mark::Open::new(self.key(), &st.conn);
            let _tx = billing_model::store::OpenTransaction::new();
            f();
        }
        self.commit(&mut st);
        drop(st);
        self.outcome().failure(batch)
    }

    /// Begins a batch transaction of its own (committing first a batch of the leader/follower
    /// path that is waiting for its last member); returns its id.
    fn open_batch(&self, st: &mut State) -> Result<u64, StoreError> {
        if st.open {
            self.commit(st);
        }
        exec(&st.conn, "BEGIN IMMEDIATE")?;
        st.open = true;
        st.batch += 1;
        st.in_batch = 0;
        Ok(st.batch)
    }

    /// Runs `f` with a batch transaction open, first without a savepoint per `write` (the
    /// statement journal of a savepoint copies every page a write touches first, a large share
    /// of a small write's work): `f` runs every item and returns whether all of them succeeded.
    /// When one failed (or `f` panicked), the whole transaction is rolled back and `f` runs
    /// again as [`Self::run_batch`] runs it, a savepoint per `write`, so that only the failed
    /// items' writes are undone. `f` is told which pass it is in (`true`: savepoints). Returns
    /// why the commit failed, if it did.
    pub fn run_batch_optimistic(&self, mut f: impl FnMut(bool) -> bool) -> Option<StoreError> {
        let mut st = self.lock();
        let batch = match self.open_batch(&mut st) {
            Ok(b) => b,
            Err(e) => return Some(e),
        };
        let all_ok = {
            let _open = batch_mark::Open::direct(self.key(), &st.conn);
            let _tx = billing_model::store::OpenTransaction::new();
            catch_unwind(AssertUnwindSafe(|| f(false))).unwrap_or(false)
        };
        if !all_ok {
            // Some item failed: nothing of this pass is kept; run again, each item alone.
            // (SQLite may have rolled the transaction back itself after an I/O error: then
            // there is nothing to roll back.)
            let _ = st.conn.execute_batch("ROLLBACK");
            if let Err(e) = exec(&st.conn, "BEGIN IMMEDIATE") {
                st.open = false;
                return Some(e);
            }
            let _open = batch_mark::Open::new(self.key(), &st.conn);
            let _tx = billing_model::store::OpenTransaction::new();
            f(true);
        }
        self.commit(&mut st);
        drop(st);
        self.outcome().failure(batch)
    }

    fn outcome(&self) -> MutexGuard<'_, Outcome> {
        self.outcome.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection of the batch open on this thread, if any: reads made by a job of the
    /// write executor go through it, so an operation sees its own (not yet committed) writes.
    pub fn batch_connection(&self) -> Option<*const Connection> {
        batch_mark::current(self.key())
    }

    fn key(&self) -> usize {
        self as *const Writer as usize
    }

    /// One transaction as a savepoint of the batch transaction open on `conn`.
    fn in_savepoint<R>(&self, conn: &Connection, names: &ConstraintNames, f: &mut dyn FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        exec(conn, "SAVEPOINT op")?;
        let result = catch_unwind(AssertUnwindSafe(|| {
            let _open = billing_model::store::OpenTransaction::new();
            f(&mut SqliteTx::new(conn, names))
        }));
        let ended = match &result {
            Ok(Ok(_)) => exec(conn, "RELEASE op"),
            _ => {
                // What the batch read may include what the rolled-back part wrote.
                crate::memo::forget();
                exec(conn, "ROLLBACK TO op").and_then(|_| exec(conn, "RELEASE op"))
            }
        };
        self.transactions.fetch_add(1, Ordering::Relaxed);
        let result = match result {
            Ok(r) => r,
            Err(panic) => resume_unwind(panic),
        };
        ended?;
        result
    }

    pub fn write<R>(&self, names: &ConstraintNames, mut f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        if let Some((conn, savepoints)) = batch_mark::current_mode(self.key()) {
            // SAFETY: `run_batch` keeps the connection (and its lock) until `f` returns, and `f`
            // runs on this thread, which is where this call is.
            let conn = unsafe { &*conn };
            if !savepoints {
                // The optimistic pass of `run_batch_optimistic`: a failure undoes the whole
                // transaction, and the batch runs again with savepoints.
                self.transactions.fetch_add(1, Ordering::Relaxed);
                return f(&mut SqliteTx::new(conn, names));
            }
            return self.in_savepoint(conn, names, &mut f);
        }
        if !self.group_commit {
            return self.run_alone(names, &mut f);
        }
        let mut st = self.lock();
        if !st.open {
            exec(&st.conn, "BEGIN IMMEDIATE")?;
            st.open = true;
            st.batch += 1;
            st.in_batch = 0;
        }
        let my_batch = st.batch;
        exec(&st.conn, "SAVEPOINT op")?;
        let result = catch_unwind(AssertUnwindSafe(|| {
            let _open = billing_model::store::OpenTransaction::new();
            f(&mut SqliteTx::new(&st.conn, names))
        }));
        let kept = matches!(result, Ok(Ok(_)));
        let ended = if kept {
            exec(&st.conn, "RELEASE op")
        } else {
            exec(&st.conn, "ROLLBACK TO op").and_then(|_| exec(&st.conn, "RELEASE op"))
        };
        st.in_batch += 1;
        self.transactions.fetch_add(1, Ordering::Relaxed);

        let commit_now = self.queued.load(Ordering::SeqCst) == 0 || st.in_batch >= MAX_BATCH;
        if commit_now {
            self.commit(&mut st);
        }
        drop(st);
        let result = match result {
            Ok(r) => r,
            Err(panic) => resume_unwind(panic),
        };
        if let Err(e) = ended {
            return Err(e.into());
        }
        if !kept {
            // Nothing of ours is in the batch: no need to wait for its commit.
            return result;
        }
        let mut outcome = self.outcome();
        while outcome.done < my_batch {
            outcome = self.committed.wait(outcome).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(e) = outcome.failure(my_batch) {
            return Err(e.into());
        }
        result
    }

    fn commit(&self, st: &mut State) {
        let batch = st.batch;
        let committed = index_new_consumers(&st.conn).and_then(|()| exec(&st.conn, "COMMIT"));
        if committed.is_err() {
            let _ = st.conn.execute_batch("ROLLBACK");
        }
        self.settle_auth_changes();
        self.commits.fetch_add(1, Ordering::Relaxed);
        st.open = false;
        let mut outcome = self.outcome();
        if let Err(e) = committed {
            outcome.failed.push((batch, e.to_string()));
            if outcome.failed.len() > 64 {
                outcome.failed.remove(0);
            }
        }
        outcome.done = batch;
        drop(outcome);
        self.committed.notify_all();
        self.restart_wal_if_asked(st);
    }
}

/// The batch transaction a thread has open through [`Writer::run_batch`].
mod batch_mark {
    use rusqlite::Connection;
    use std::cell::Cell;

    thread_local! {
        /// The writer, its connection, and whether each `write` runs in a savepoint of its own.
        static CURRENT: Cell<Option<(usize, *const Connection, bool)>> = const { Cell::new(None) };
    }

    pub fn current(writer: usize) -> Option<*const Connection> {
        current_mode(writer).map(|(conn, _)| conn)
    }

    pub fn current_mode(writer: usize) -> Option<(*const Connection, bool)> {
        CURRENT.with(|c| c.get()).filter(|(w, _, _)| *w == writer).map(|(_, conn, sp)| (conn, sp))
    }

    pub struct Open;

    impl Open {
        /// A batch whose writes each run in a savepoint.
        pub fn new(writer: usize, conn: &Connection) -> Self {
            CURRENT.with(|c| c.set(Some((writer, conn as *const Connection, true))));
            crate::memo::open(conn);
            crate::statements::open(conn);
            Open
        }

        /// A batch whose writes run directly in the transaction (any failure undoes it all).
        pub fn direct(writer: usize, conn: &Connection) -> Self {
            CURRENT.with(|c| c.set(Some((writer, conn as *const Connection, false))));
            crate::memo::open(conn);
            crate::statements::open(conn);
            Open
        }
    }

    impl Drop for Open {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(None));
            crate::memo::close();
            crate::statements::close();
        }
    }
}

/// Indexes the consumers this transaction inserted (`consumers_search_pending`, filled by a
/// trigger) for search, all at once, just before COMMIT: committed consumers are always
/// searchable, and a batch pays one FTS5 index flush instead of one per consumer (migration
/// 0011 says why).
fn index_new_consumers(conn: &Connection) -> Result<(), StoreError> {
    let run = |sql: &str| conn.prepare_cached(sql).and_then(|mut st| st.execute([])).map_err(StoreError::backend_from);
    let pending = conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM consumers_search_pending)")
        .and_then(|mut st| st.query_row([], |r| r.get::<_, bool>(0)))
        .map_err(StoreError::backend_from)?;
    if pending {
        run("INSERT INTO consumers_search (rowid, name, email, phone_number, alias, external_id) \
             SELECT c.seq, c.name, c.email, c.phone_number, c.alias, c.external_id \
             FROM consumers_search_pending p JOIN consumers c ON c.seq = p.seq")?;
        run("DELETE FROM consumers_search_pending")?;
    }
    Ok(())
}

/// One statement without parameters, through the statement cache: the savepoint statements run
/// around every write, and parsing them each time was a measurable share of the writer's time.
fn exec(conn: &Connection, sql: &str) -> std::result::Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut st| st.execute([]))
        .map(drop)
        .map_err(StoreError::backend_from)
}
