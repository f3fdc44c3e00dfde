//! Embedded migrations (every `migrations/NNNN_name.sql`, found by `build.rs`), applied in
//! order on open and recorded in `schema_migrations`.

use billing_model::error::StoreError;
use rusqlite::Connection;
use std::collections::HashMap;

/// Every migration, by version, in order: `migrations/NNNN_name.sql`, listed by `build.rs`.
const MIGRATIONS: &[(i64, &str)] = include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// How long opening and migrating wait for another process's lock on the database file.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// How long a connection waits for another's lock, once open.
pub(crate) const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Called by SQLite while another connection holds the lock that opening and migrating need:
/// says so in the log (once), then waits in steps of 10 ms, up to [`LOCK_WAIT`].
pub(crate) fn wait_for_lock(tries: i32) -> bool {
    if tries == 0 {
        tracing::info!("the database file is locked by another process; waiting for it");
    }
    std::thread::sleep(std::time::Duration::from_millis(10));
    (tries as u128) * 10 < LOCK_WAIT.as_millis()
}

/// Applies the migrations this database has not had, in order, each in its own transaction,
/// saying in the log what it does and what it waits for.
pub fn apply(conn: &Connection) -> Result<(), StoreError> {
    let err = |e: rusqlite::Error| StoreError::backend(format!("migration failed: {e}"));
    conn.busy_handler(Some(wait_for_lock)).map_err(err)?;
    let applied = apply_pending(conn);
    // Back to the connection's usual wait (the handler above replaced it).
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    applied
}

fn apply_pending(conn: &Connection) -> Result<(), StoreError> {
    let err = |e: rusqlite::Error| StoreError::backend(format!("migration failed: {e}"));
    conn.execute_batch("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)")
        .map_err(err)?;
    // Every migration not yet recorded, in order: not only those above the highest applied one,
    // so a migration merged after a later-numbered one still reaches databases made meanwhile.
    let applied: Vec<i64> = {
        let mut st = conn.prepare("SELECT version FROM schema_migrations").map_err(err)?;
        let rows = st.query_map([], |r| r.get(0)).map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)?
    };
    let pending: Vec<&(i64, &str)> = MIGRATIONS.iter().filter(|(v, _)| !applied.contains(v)).collect();
    if pending.is_empty() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    match applied.is_empty() {
        true => tracing::info!(migrations = pending.len(), "creating the database schema"),
        false => tracing::info!(migrations = pending.len(), "migrating the database; large tables can take a while"),
    }
    for (version, sql) in pending {
        tracing::debug!(version, "applying migration");
        let t = std::time::Instant::now();
        let tx = conn.unchecked_transaction().map_err(err)?;
        tx.execute_batch(sql).map_err(err)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, strftime('%s','now'))",
            [version],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        if t.elapsed() > std::time::Duration::from_secs(1) {
            tracing::info!(version, elapsed_ms = t.elapsed().as_millis() as u64, "migration applied");
        }
    }
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "database schema up to date");
    Ok(())
}

/// For every unique index (and primary key), the column list as SQLite words it in a
/// constraint error (`consumers.branch_id, consumers.phone_number`) mapped to the index name
/// (`consumers_branch_phone_key`; primary keys become `<table>_pkey`): the names PostgreSQL
/// reports, among them every name of [`billing_model::error::constraint`] (checked by
/// `the_constraints_the_core_tells_apart_are_named` below).
pub fn unique_constraint_names(conn: &Connection) -> Result<HashMap<String, String>, StoreError> {
    let err = |e: rusqlite::Error| StoreError::backend(e.to_string());
    let mut out = HashMap::new();
    let tables: Vec<String> = {
        let mut st = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            .map_err(err)?;
        let rows = st.query_map([], |r| r.get(0)).map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)?
    };
    for t in tables {
        let indexes: Vec<(String, bool, String)> = {
            let mut st = conn.prepare(&format!("PRAGMA index_list('{t}')")).map_err(err)?;
            let rows = st
                .query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, bool>(2)?, r.get::<_, String>(3)?)))
                .map_err(err)?;
            rows.collect::<Result<_, _>>().map_err(err)?
        };
        for (name, unique, origin) in indexes.into_iter().filter(|i| i.1) {
            let _ = unique;
            let cols: Vec<String> = {
                let mut st = conn.prepare(&format!("PRAGMA index_info('{name}')")).map_err(err)?;
                let rows = st.query_map([], |r| r.get::<_, String>(2)).map_err(err)?;
                rows.collect::<Result<_, _>>().map_err(err)?
            };
            let key = cols.iter().map(|c| format!("{t}.{c}")).collect::<Vec<_>>().join(", ");
            let label = if origin == "pk" {
                format!("{t}_pkey")
            } else if origin == "u" {
                format!("{t}_{}_key", cols.join("_"))
            } else {
                name
            };
            out.insert(key, label);
        }
        // A BLOB PRIMARY KEY on a rowid table shows as an automatic index with origin "pk".
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every constraint name the core tells apart is one this store reports.
    #[test]
    fn the_constraints_the_core_tells_apart_are_named() {
        let conn = Connection::open_in_memory().unwrap();
        apply(&conn).unwrap();
        let names = unique_constraint_names(&conn).unwrap();
        for name in billing_model::error::constraint::ALL {
            assert!(names.values().any(|n| n == name), "no unique index reports {name}: {names:?}");
        }
    }

    /// A database made before migration 16 keeps its queue through the rebuild (0016), and the
    /// renewal path's ordered reads run without a sort after 0017.
    #[test]
    fn the_queue_survives_its_rebuild_and_ordered_reads_need_no_sort() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)")
            .unwrap();
        for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v < 16) {
            conn.execute_batch(sql).unwrap();
            conn.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?1, 0)", [version])
                .unwrap();
        }
        let items: Vec<(Vec<u8>, i64, Option<i64>)> = (0..50u8).map(|k| (vec![k; 16], 1_000 + i64::from(k % 7), (k % 3 == 0).then_some(5))).collect();
        for (id, due, lease) in &items {
            conn.execute(
                "INSERT INTO due_work (id, org_id, kind, due_at, payload, attempts, leased_until) VALUES (?1, ?2, 'k', ?3, '{}', 2, ?4)",
                rusqlite::params![id, vec![9u8; 16], due, lease],
            )
            .unwrap();
        }

        apply(&conn).unwrap();

        let mut st = conn
            .prepare("SELECT id, due_at, leased_until, attempts, kind FROM due_work ORDER BY id")
            .unwrap();
        let kept: Vec<(Vec<u8>, i64, Option<i64>)> = st
            .query_map([], |r| {
                assert_eq!(r.get::<_, i64>(3)?, 2);
                assert_eq!(r.get::<_, String>(4)?, "k");
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(kept, items);
        let sql: String = conn
            .query_row("SELECT sql FROM sqlite_master WHERE name = 'due_work'", [], |r| r.get(0))
            .unwrap();
        assert!(sql.contains("WITHOUT ROWID"), "{sql}");
        let dup = conn.execute(
            "INSERT INTO due_work (id, org_id, kind, due_at, payload) VALUES (?1, ?2, 'k', 1, '{}')",
            rusqlite::params![vec![0u8; 16], vec![9u8; 16]],
        );
        assert!(dup.is_err(), "the id stays the key");

        for read in [
            "SELECT id FROM tokenized_cards WHERE consumer_id = ?1 AND is_active = 1 ORDER BY created_at DESC, id DESC LIMIT 1",
            "SELECT id FROM payments WHERE invoice_id = ?1 ORDER BY number, id",
            "SELECT id FROM subscription_freezes WHERE subscription_id = ?1 AND deleted_at IS NULL ORDER BY starts_at, id",
            "SELECT id FROM due_work WHERE due_at <= ?1 ORDER BY due_at, id LIMIT 10",
        ] {
            let mut st = conn.prepare(&format!("EXPLAIN QUERY PLAN {read}")).unwrap();
            let plan: Vec<String> = st.query_map([0], |r| r.get(3)).unwrap().collect::<Result<_, _>>().unwrap();
            assert!(plan.iter().all(|p| !p.contains("TEMP B-TREE") && !p.starts_with("SCAN")), "{read}: {plan:?}");
        }
    }
}
