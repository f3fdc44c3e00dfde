//! How the store runs a closure in a transaction: BEGIN with the write gate (and a batch's lock),
//! the closure, COMMIT or ROLLBACK, and the retries of attempts that met a conflict (see
//! [`crate::WRITE_GATE`], [`crate::BATCH_LOCK`]).

use crate::error::{self, is_retryable, store_error};
use crate::support::{PgTx, TxMode, TxState};
use crate::{Gate, PgStore, BATCH_LOCK, EXCLUSIVE_AFTER, WRITE_GATE};
use billing_model::error::{Error, Result, StoreError};
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::pg::PgConnection;
use diesel::r2d2::R2D2Connection;
use diesel::result::Error as DieselError;
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

/// How one transaction attempt ended, when it did not commit.
enum Attempt {
    /// The closure's own error.
    App(Error),
    /// BEGIN (or the write gate) failed: nothing ran.
    Begin(DieselError),
    /// COMMIT failed.
    Db(DieselError),
    /// The closure returned `Ok` although one of its statements had aborted the transaction.
    Aborted(String),
    /// The closure returned `Ok` although one of its statements met a conflict.
    Conflict,
}

/// A pause before retrying a conflicted write: exponential from about 1 ms, capped near 64 ms,
/// with jitter so that the transactions that collided do not collide again.
fn backoff(attempt: u32) {
    let base_us = 1000u64 << attempt.min(6);
    let jitter = std::collections::hash_map::RandomState::new().hash_one(attempt) % base_us;
    std::thread::sleep(Duration::from_micros(base_us / 2 + jitter));
}

impl PgStore {
    /// Runs one attempt of `f` in a transaction. `mode` says how a write takes the write gate
    /// (see [`WRITE_GATE`]). BEGIN and the gate go to the server in one round trip.
    fn attempt<R>(
        &self,
        conn: &mut PgConnection,
        mode: Gate,
        f: &mut impl FnMut(&mut PgTx<'_>) -> Result<R>,
        state: &mut TxState,
        batch_wait: Option<&mut Duration>,
    ) -> std::result::Result<R, Attempt> {
        let Some(left) = batch_wait else {
            return self.attempt_in(conn, mode, f, state);
        };
        // No transaction is open: the wait takes no snapshot. It is bounded by what is left of
        // the batch's budget (see `set_batch_lock_wait`); past it, the batch runs beside the
        // others, as it would without the lock. (`lock_timeout = 0` would mean no bound: an
        // empty budget does not wait at all.)
        let ms = left.as_millis();
        if ms == 0 {
            return self.attempt_in(conn, mode, f, state);
        }
        let started = Instant::now();
        let taken = conn.batch_execute(&format!("SET lock_timeout = {ms}; SELECT pg_advisory_lock({BATCH_LOCK}); RESET lock_timeout"));
        *left = left.saturating_sub(started.elapsed());
        match taken {
            Ok(()) => {}
            // The three statements are one implicit transaction: the failure undid the SET.
            Err(e) if error::is_lock_timeout(&e) => {
                *left = Duration::ZERO;
                return self.attempt_in(conn, mode, f, state);
            }
            Err(e) => return Err(Attempt::Begin(e)),
        }
        let out = self.attempt_in(conn, mode, f, state);
        // A failed unlock means a broken connection, which the pool drops (and the lock with it).
        let _ = conn.batch_execute(&format!("SELECT pg_advisory_unlock({BATCH_LOCK})"));
        out
    }

    /// [`Self::attempt`] without the batch lock.
    fn attempt_in<R>(
        &self,
        conn: &mut PgConnection,
        mode: Gate,
        f: &mut impl FnMut(&mut PgTx<'_>) -> Result<R>,
        state: &mut TxState,
    ) -> std::result::Result<R, Attempt> {
        let begin = match mode {
            Gate::None => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY".to_string(),
            Gate::Shared => format!("BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT pg_advisory_xact_lock_shared({WRITE_GATE})"),
            // Row locks and the lease checks make it correct, and a lost commit only makes the
            // work run again, so it need not wait for the WAL flush (see `Store::write_leased`).
            Gate::SharedLeased => {
                format!("BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL synchronous_commit = off; SELECT pg_advisory_xact_lock_shared({WRITE_GATE})")
            }
            // Unique indexes keep its rules (see `Store::write_inserts`).
            Gate::SharedInserts => format!("BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock_shared({WRITE_GATE})"),
            // Alone among writers, a write needs no SERIALIZABLE; and under it, the snapshot
            // would date from before the wait for the gate (it is taken when the first statement
            // starts), older than the writes it waited for. READ COMMITTED reads them.
            Gate::Exclusive => format!("BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock({WRITE_GATE})"),
        };
        if let Err(e) = AnsiTransactionManager::begin_transaction_sql(conn, &begin) {
            // BEGIN may have run and the gate failed: end whatever was opened.
            let _ = conn.batch_execute("ROLLBACK");
            return Err(Attempt::Begin(e));
        }
        // `write_inserts` and `write_leased` closures end at their first failed statement (their
        // contract), so they need no savepoints: two round trips fewer per write.
        let tx_mode = match mode {
            Gate::SharedInserts | Gate::SharedLeased => TxMode::NoSavepoints,
            _ => TxMode::Savepoints,
        };
        let mut tx = PgTx::new(conn, self.search_collation, tx_mode);
        let out = {
            let _open = billing_model::store::OpenTransaction::new();
            f(&mut tx)
        };
        *state = std::mem::take(&mut tx.state);
        let out = match out {
            Err(e) => Err(Attempt::App(e)),
            Ok(_) if state.conflict => Err(Attempt::Conflict),
            Ok(_) if state.aborted.is_some() => Err(Attempt::Aborted(state.aborted.clone().unwrap_or_default())),
            Ok(v) => Ok(v),
        };
        match out {
            Ok(v) => {
                AnsiTransactionManager::commit_transaction(conn).map_err(Attempt::Db)?;
                if state.auth_changed {
                    self.auth.bump();
                }
                Ok(v)
            }
            Err(a) => {
                // A failed rollback leaves the connection broken; the pool then drops it.
                let _ = AnsiTransactionManager::rollback_transaction(conn);
                Err(a)
            }
        }
    }

    pub(crate) fn run<R>(&self, kind: Gate, f: impl FnMut(&mut PgTx<'_>) -> Result<R>) -> Result<R> {
        self.run_as(kind, None, f)
    }

    /// [`Self::run`]; with `batch_wait`, each attempt takes the batch lock ([`BATCH_LOCK`]),
    /// waiting for it at most what is left of that budget.
    pub(crate) fn run_as<R>(&self, kind: Gate, mut batch_wait: Option<&mut Duration>, mut f: impl FnMut(&mut PgTx<'_>) -> Result<R>) -> Result<R> {
        let mut conn = self.conn()?;
        let write = kind != Gate::None;
        let max = if write { self.max_write_attempts } else { 1 };
        let mut attempt = 1;
        let mut reconnects = 0;
        loop {
            let mut state = TxState::default();
            let mode = if write && attempt > EXCLUSIVE_AFTER { Gate::Exclusive } else { kind };
            let out = self.attempt(&mut conn, mode, &mut f, &mut state, batch_wait.as_deref_mut());
            if matches!(out, Err(Attempt::Begin(_))) && reconnects <= self.pool.max_size() && R2D2Connection::is_broken(&mut *conn) {
                // An idle connection broke (a server restart, say): nothing ran, so try a new
                // one. The pool discards the broken one when it comes back.
                reconnects += 1;
                drop(conn);
                conn = self.conn()?;
                continue;
            }
            let retry = match &out {
                Ok(_) => false,
                Err(Attempt::Db(e) | Attempt::Begin(e)) => is_retryable(e),
                Err(_) => state.conflict,
            };
            if retry && attempt < max {
                if R2D2Connection::is_broken(&mut *conn) {
                    drop(conn);
                    conn = self.conn()?;
                }
                backoff(attempt);
                attempt += 1;
                continue;
            }
            return match out {
                Ok(v) => Ok(v),
                Err(Attempt::App(e)) => Err(e),
                Err(Attempt::Db(e) | Attempt::Begin(e)) => Err(store_error(e).into()),
                Err(Attempt::Aborted(msg)) => {
                    Err(StoreError::backend(format!("the transaction was aborted by a failed statement and rolled back: {msg}")).into())
                }
                Err(Attempt::Conflict) => Err(StoreError::Conflict(format!("serialization conflict persisted over {attempt} attempts")).into()),
            };
        }
    }
}
