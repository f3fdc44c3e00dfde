//! Throw-away databases for tests.
//!
//! Tests name a PostgreSQL server in `BILLING_TEST_DATABASE_URL` (for example
//! `postgres://postgres@127.0.0.1:5432/postgres`; the user must be allowed to create
//! databases). Each [`TempDatabase`] is a new database copied from a template that has the
//! migrations applied (`CREATE DATABASE … TEMPLATE`, much faster than migrating each one), and
//! is dropped when the value is dropped. The template is named after a fingerprint of the
//! migrations (`billing_tmpl_<hash>`), built once and kept on the server for later runs; a
//! schema change makes a new one.

use crate::{run_migrations, PgStore};
use billing_model::error::StoreError;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::Text;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The environment variable that names the test server.
pub const DATABASE_URL_ENV: &str = "BILLING_TEST_DATABASE_URL";

/// The test server's URL, if one is configured.
pub fn server_url() -> Option<String> {
    std::env::var(DATABASE_URL_ENV).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// A fresh, migrated store on a temporary database of the server named by
/// `BILLING_TEST_DATABASE_URL`; the database is dropped with the store.
pub fn temp_store() -> Result<PgStore, StoreError> {
    let url = server_url().ok_or_else(|| StoreError::backend(format!("{DATABASE_URL_ENV} is not set")))?;
    PgStore::open_temp(TempDatabase::create(&url)?)
}

/// A uniquely named database, migrated, dropped (with `FORCE`) when this value is dropped.
#[derive(Debug)]
pub struct TempDatabase {
    server_url: String,
    name: String,
    url: String,
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::backend(e.to_string())
}

/// `url` with its database replaced by `database`. Both URL (`postgres://…/db?opts`) and
/// keyword/value (`host=… dbname=…`) connection strings are understood.
pub fn url_with_database(url: &str, database: &str) -> String {
    for scheme in ["postgres://", "postgresql://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
            let (authority, tail) = rest.split_at(authority_end);
            let query = tail.find('?').map(|i| &tail[i..]).unwrap_or("");
            return format!("{scheme}{authority}/{database}{query}");
        }
    }
    // Later keywords override earlier ones in libpq's keyword/value strings.
    format!("{url} dbname={database}")
}

/// The identifier quoted for SQL; the names made here are plain, but be safe.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn connect(url: &str) -> Result<PgConnection, StoreError> {
    PgConnection::establish(url).map_err(|e| StoreError::backend(format!("cannot connect to the test server: {e}")))
}

#[derive(QueryableByName)]
struct Exists {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    exists: bool,
}

fn database_exists(conn: &mut PgConnection, name: &str) -> Result<bool, StoreError> {
    let row: Exists = diesel::sql_query("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS exists")
        .bind::<Text, _>(name)
        .get_result(conn)
        .map_err(backend)?;
    Ok(row.exists)
}

fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{}_{n}_{nanos:09}", std::process::id())
}

/// Makes sure the migrated template database exists on the server; returns its name.
fn ensure_template(server_url: &str) -> Result<String, StoreError> {
    let name = format!("billing_tmpl_{}", env!("BILLING_PG_MIGRATIONS_HASH"));
    let mut admin = connect(server_url)?;
    if database_exists(&mut admin, &name)? {
        return Ok(name);
    }
    // Build under a private name and rename, so that no one copies a half-migrated template.
    let building = format!("billing_tmpl_build_{}", unique_suffix());
    diesel::sql_query(format!("CREATE DATABASE {}", quoted(&building)))
        .execute(&mut admin)
        .map_err(backend)?;
    let migrated = connect(&url_with_database(server_url, &building)).and_then(|mut conn| run_migrations(&mut conn));
    let renamed = migrated.and_then(|()| {
        diesel::sql_query(format!("ALTER DATABASE {} RENAME TO {}", quoted(&building), quoted(&name)))
            .execute(&mut admin)
            .map_err(backend)
    });
    if let Err(e) = renamed {
        // Another process may have built it meanwhile; either way ours is not needed.
        let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", quoted(&building))).execute(&mut admin);
        if !database_exists(&mut admin, &name)? {
            return Err(e);
        }
    }
    Ok(name)
}

impl TempDatabase {
    /// Creates a new migrated database on the server at `server_url`.
    pub fn create(server_url: &str) -> Result<TempDatabase, StoreError> {
        static TEMPLATE: OnceLock<Result<String, StoreError>> = OnceLock::new();
        let template = TEMPLATE.get_or_init(|| ensure_template(server_url)).clone()?;
        let name = format!("billing_test_{}", unique_suffix());
        let mut admin = connect(server_url)?;
        diesel::sql_query(format!("CREATE DATABASE {} TEMPLATE {}", quoted(&name), quoted(&template)))
            .execute(&mut admin)
            .map_err(backend)?;
        let url = url_with_database(server_url, &name);
        Ok(TempDatabase {
            server_url: server_url.to_string(),
            name,
            url,
        })
    }

    /// The connection URL of the new database.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TempDatabase {
    fn drop(&mut self) {
        let dropped = connect(&self.server_url).and_then(|mut admin| {
            diesel::sql_query(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", quoted(&self.name)))
                .execute(&mut admin)
                .map_err(backend)
        });
        if let Err(e) = dropped {
            eprintln!("warning: could not drop test database {}: {e}", self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::url_with_database;

    #[test]
    fn replaces_the_database() {
        assert_eq!(
            url_with_database("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            url_with_database("postgresql://u:p@h/db?sslmode=disable", "x"),
            "postgresql://u:p@h/x?sslmode=disable"
        );
        assert_eq!(url_with_database("postgres://h:5432", "x"), "postgres://h:5432/x");
        assert_eq!(url_with_database("postgres://h?sslmode=disable", "x"), "postgres://h/x?sslmode=disable");
        assert_eq!(
            url_with_database("host=h user=u dbname=postgres", "x"),
            "host=h user=u dbname=postgres dbname=x"
        );
    }
}
