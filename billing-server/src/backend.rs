//! The store the server runs on, chosen from the database URL scheme.

use billing_core::error::{Result, StoreError};
use billing_core::store::{marking, Store, Tx};
use billing_store_postgres::PgStore;
use billing_store_sqlite::SqliteStore;

pub enum Backend {
    Sqlite(SqliteStore),
    /// The store and one permit per pooled connection: operations wait for a permit here, on
    /// the async side, before they take a blocking thread, so that no blocking thread ever
    /// sleeps waiting for a connection (with 64 requests on 10 connections, those waits and
    /// wake-ups cost more than the queries).
    Postgres(PgStore, tokio::sync::Semaphore),
}

impl Backend {
    /// `postgres://…` / `postgresql://…` for PostgreSQL; `sqlite://path`, `sqlite::memory:` or a
    /// plain path for SQLite.
    /// `pool_size` is the most connections a PostgreSQL pool opens (SQLite ignores it).
    pub fn open(url: &str, pool_size: u32) -> std::result::Result<Self, StoreError> {
        // A URL of another scheme (`mysql://`, a misspelt `postgress://`) is not a file path.
        if let Some((scheme, _)) = url.split_once("://") {
            if !matches!(scheme, "postgres" | "postgresql" | "sqlite") {
                return Err(StoreError::backend(format!(
                    "unsupported database URL scheme '{scheme}://': use a SQLite file path, sqlite://path, sqlite::memory: or postgres://user@host:port/database"
                )));
            }
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let options = billing_store_postgres::PgStoreOptions {
                max_connections: pool_size.max(1),
                ..Default::default()
            };
            let permits = tokio::sync::Semaphore::new(options.max_connections as usize);
            return Ok(Backend::Postgres(PgStore::connect_with(url, options)?, permits));
        }
        Ok(Backend::Sqlite(SqliteStore::open_url(url)?))
    }

    /// Fits the store's waits to how long the due-work engine's claims hold their items: on
    /// PostgreSQL, a batch waits for the batch lock at most a quarter of `lease`, so that its
    /// items are not claimed again while it waits (see `PgStore::set_batch_lock_wait`).
    pub fn fit_to_work_lease(&self, lease: chrono::Duration) {
        if let Backend::Postgres(store, _) = self {
            store.set_batch_lock_wait(lease.to_std().unwrap_or_default() / 4);
        }
    }

    /// `url` as it may be logged: the password of a `postgres://user:password@…` URL replaced.
    pub fn redacted(url: &str) -> String {
        let Some((scheme, rest)) = url.split_once("://") else {
            return url.to_string();
        };
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        match authority.rsplit_once('@') {
            Some((userinfo, host)) => match userinfo.split_once(':') {
                Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
                None => url.to_string(),
            },
            None => url.to_string(),
        }
    }

    /// Runs `f` (authentication and a read operation) in one read transaction where the backend
    /// supports it, so both see one snapshot at the cost of one transaction.
    pub fn read_session<R>(&self, f: impl FnOnce() -> R) -> R {
        match self {
            Backend::Sqlite(s) => s.read_session(f),
            Backend::Postgres(..) => f(),
        }
    }

    /// Runs an operation that writes, off the async threads: on SQLite through the store's
    /// write executor (group commit without a thread per request), elsewhere on a blocking
    /// thread.
    pub async fn execute<R: Send + 'static>(&self, job: impl FnOnce() -> Result<R> + Send + 'static) -> Result<R> {
        match self {
            Backend::Sqlite(s) => s.execute(job).await,
            Backend::Postgres(..) => self.blocking(job).await,
        }
    }

    /// Runs `job` on a blocking thread; on PostgreSQL once a pooled connection is free for it.
    pub async fn blocking<R: Send + 'static>(&self, job: impl FnOnce() -> Result<R> + Send + 'static) -> Result<R> {
        let _permit = match self {
            Backend::Postgres(_, permits) => Some(permits.acquire().await.map_err(|_| StoreError::backend("the store is closed"))?),
            Backend::Sqlite(_) => None,
        };
        tokio::task::spawn_blocking(job)
            .await
            .unwrap_or_else(|e| Err(StoreError::backend(format!("the operation did not finish: {e}")).into()))
    }

    /// Whether a read is served from this process's memory and disk without waiting on other
    /// transactions or the network, so it may run on an async worker thread.
    pub fn reads_are_local(&self) -> bool {
        matches!(self, Backend::Sqlite(_))
    }
}

impl Store for Backend {
    fn read<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        match self {
            Backend::Sqlite(s) => s.read(f),
            Backend::Postgres(s, _) => s.read(f),
        }
    }
    // Every write closure marks the idempotency key of the request it runs for, if any, in its
    // own transaction (`billing_core::idempotency::mark`): an operation that committed anything
    // under a key is never run again for it.
    fn write<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        let f = marking(f);
        match self {
            Backend::Sqlite(s) => s.write(f),
            Backend::Postgres(s, _) => s.write(f),
        }
    }
    fn write_leased<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        let f = marking(f);
        match self {
            Backend::Sqlite(s) => s.write_leased(f),
            Backend::Postgres(s, _) => s.write_leased(f),
        }
    }
    fn write_inserts<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        let f = marking(f);
        match self {
            Backend::Sqlite(s) => s.write_inserts(f),
            Backend::Postgres(s, _) => s.write_inserts(f),
        }
    }
    fn write_each<T, R>(&self, items: &[T], mut f: impl FnMut(&mut dyn Tx, &T) -> Result<R>) -> Vec<Result<R>> {
        let f = |tx: &mut dyn Tx, item: &T| {
            let out = f(tx, item)?;
            billing_core::idempotency::mark(tx)?;
            Ok(out)
        };
        match self {
            Backend::Sqlite(s) => s.write_each(items, f),
            Backend::Postgres(s, _) => s.write_each(items, f),
        }
    }
    fn read_one<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        match self {
            Backend::Sqlite(s) => s.read_one(f),
            Backend::Postgres(s, _) => s.read_one(f),
        }
    }
    fn await_auth_propagation(&self) {
        match self {
            Backend::Sqlite(s) => s.await_auth_propagation(),
            Backend::Postgres(s, _) => s.await_auth_propagation(),
        }
    }
    fn auth_generation(&self) -> Option<u64> {
        match self {
            Backend::Sqlite(s) => s.auth_generation(),
            Backend::Postgres(s, _) => s.auth_generation(),
        }
    }
}
