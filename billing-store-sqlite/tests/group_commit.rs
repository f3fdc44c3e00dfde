//! The writer's guarantees under concurrency: every answered write is committed, failures roll
//! back alone, and concurrent writers share commits.

use billing_core::error::{Error, StoreError};
use billing_core::ids::OrgId;
use billing_core::org::{OrgSettings, Organization};
use billing_core::store::Store;
use billing_store_sqlite::SqliteStore;
use std::sync::{Arc, Barrier};

fn org(name: &str) -> Organization {
    Organization {
        id: OrgId::new(),
        name: name.into(),
        name_en: None,
        sandbox: true,
        settings: OrgSettings::default(),
        clock_offset_us: 0,
        clock_advancing_to: None,
        created_at: billing_core::clock::parse_datetime("2026-01-01T00:00:00Z").unwrap(),
    }
}

#[test]
fn concurrent_writes_all_commit_and_share_fsyncs() {
    let store = SqliteStore::open_temporary().unwrap();
    let threads = 16;
    let per_thread = 50;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = store.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..per_thread {
                    let o = org(&format!("t{t}-{i}"));
                    store.write(|tx| Ok(tx.insert_org(&o)?)).unwrap();
                    // Answered means committed: a fresh reader sees it.
                    let seen = store.read(|tx| Ok(tx.org(o.id)?)).unwrap();
                    assert_eq!(seen.as_ref(), Some(&o));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let n = store.read(|tx| Ok(tx.list_orgs()?.len())).unwrap();
    assert_eq!(n, threads * per_thread);
    let (txs, commits) = store.commit_stats();
    assert_eq!(txs as usize, threads * per_thread);
    assert!(
        commits < txs,
        "group commit should batch some transactions ({commits} commits for {txs} transactions)"
    );
}

#[test]
fn a_failing_transaction_rolls_back_alone() {
    let store = SqliteStore::open_temporary().unwrap();
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = store.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let mut kept = vec![];
                for i in 0..40 {
                    let o = org(&format!("t{t}-{i}"));
                    let fail = i % 3 == 0;
                    let r = store.write(|tx| {
                        tx.insert_org(&o)?;
                        if fail {
                            return Err(Error::Store(StoreError::backend("deliberate")));
                        }
                        Ok(())
                    });
                    assert_eq!(r.is_err(), fail);
                    if !fail {
                        kept.push(o.id);
                    }
                }
                kept
            })
        })
        .collect();
    let kept: Vec<OrgId> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let stored: Vec<OrgId> = store.read(|tx| Ok(tx.list_orgs()?.into_iter().map(|o| o.id).collect())).unwrap();
    assert_eq!(stored.len(), kept.len());
    for id in kept {
        assert!(stored.contains(&id));
    }
}

#[test]
fn data_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.db");
    let o = org("durable");
    {
        let store = SqliteStore::open(&path).unwrap();
        store.write(|tx| Ok(tx.insert_org(&o)?)).unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.read(|tx| Ok(tx.org(o.id)?)).unwrap(), Some(o));
}

#[test]
fn in_memory_store_works_and_is_private() {
    let a = SqliteStore::in_memory().unwrap();
    let b = SqliteStore::in_memory().unwrap();
    let o = org("mem");
    a.write(|tx| Ok(tx.insert_org(&o)?)).unwrap();
    assert!(a.read(|tx| Ok(tx.org(o.id)?)).unwrap().is_some());
    assert!(b.read(|tx| Ok(tx.org(o.id)?)).unwrap().is_none());
}

#[test]
fn a_panicking_transaction_leaves_the_writer_usable() {
    let store = SqliteStore::open_temporary().unwrap();
    let o = org("before-panic");
    let s2 = store.clone();
    let o2 = o.clone();
    let r = std::thread::spawn(move || {
        s2.write(|tx| {
            tx.insert_org(&o2)?;
            panic!("boom");
            #[allow(unreachable_code)]
            Ok(())
        })
    })
    .join();
    assert!(r.is_err());
    assert!(
        store.read(|tx| Ok(tx.org(o.id)?)).unwrap().is_none(),
        "the panicking transaction must not be kept"
    );
    let o3 = org("after-panic");
    store.write(|tx| Ok(tx.insert_org(&o3)?)).unwrap();
    assert!(store.read(|tx| Ok(tx.org(o3.id)?)).unwrap().is_some());
}

/// The write executor (the server's path): concurrent operations are answered only once
/// committed, a failing one rolls back alone, and they share commits.
#[test]
fn executor_batches_and_answers_after_commit() {
    let store = SqliteStore::open_temporary().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let results = rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..400 {
            let s = store.clone();
            tasks.push(tokio::spawn(async move {
                let o = org(&format!("exec-{i}"));
                let id = o.id;
                let fail = i % 5 == 0;
                let inner = s.clone();
                let r = s
                    .execute(move || {
                        inner.write(|tx| {
                            tx.insert_org(&o)?;
                            if fail {
                                return Err(Error::Store(StoreError::backend("deliberate")));
                            }
                            Ok(())
                        })
                    })
                    .await;
                // Answered means durable: a fresh reader sees it (or, refused, never will).
                let seen = s.read(|tx| Ok(tx.org(id)?)).unwrap().is_some();
                (r.is_ok(), fail, seen, id)
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    for (ok, fail, seen, _) in &results {
        assert_eq!(*ok, !fail);
        assert_eq!(*seen, !fail);
    }
    let stored = store.read(|tx| Ok(tx.list_orgs()?.len())).unwrap();
    assert_eq!(stored, 320);
    let (txs, commits) = store.commit_stats();
    assert_eq!(txs, 400);
    assert!(commits < txs, "executor jobs should share commits ({commits} for {txs})");
}

#[test]
fn executor_survives_a_panicking_operation() {
    let store = SqliteStore::open_temporary().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let s = store.clone();
    let o = org("before");
    let id = o.id;
    let r: Result<(), _> = rt.block_on(store.execute(move || {
        s.write(|tx| {
            tx.insert_org(&o)?;
            panic!("boom")
        })
    }));
    assert!(r.is_err());
    assert!(store.read(|tx| Ok(tx.org(id)?)).unwrap().is_none());
    let s = store.clone();
    let o2 = org("after");
    let id2 = o2.id;
    rt.block_on(store.execute(move || s.write(|tx| Ok(tx.insert_org(&o2)?)))).unwrap();
    assert!(store.read(|tx| Ok(tx.org(id2)?)).unwrap().is_some());
}

/// Inside a write executor job, a read after a write sees that write (the batch is not
/// committed yet, but it is the job's own transaction state).
#[test]
fn executor_jobs_read_their_own_writes() {
    let store = SqliteStore::open_temporary().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let s = store.clone();
    let o = org("read-your-writes");
    let id = o.id;
    let seen = rt
        .block_on(store.execute(move || {
            s.write(|tx| Ok(tx.insert_org(&o)?))?;
            s.read(|tx| Ok(tx.org(id)?.is_some()))
        }))
        .unwrap();
    assert!(seen, "the job's own write is visible to its later read");
}

/// A database that recorded a later migration but not an earlier one (migrations merged out of
/// order) gets the missing one on open.
#[test]
fn missing_migrations_are_applied_whatever_their_number() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    drop(SqliteStore::open(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP TRIGGER consumers_search_insert; DROP TRIGGER consumers_search_delete; DROP TRIGGER consumers_search_update;
             DROP INDEX consumers_branch_iban; DROP TABLE consumers_search; DELETE FROM schema_migrations WHERE version = 2;",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let q = billing_core::list::ListQuery::new(billing_core::consumer::ConsumerSort::CreatedAt);
    let q = billing_core::list::ListQuery {
        search: Some("abc".into()),
        ..q
    };
    // The search index (migration 2) is back: a trigram search runs.
    store
        .read(|tx| Ok(tx.list_consumers(billing_core::ids::BranchId::new(), &q, &Default::default())?))
        .unwrap();
}

/// The auth generation moves after a committed change of what authentication reads, and
/// only then: not for other tables, not for a rolled-back change (beyond one harmless extra
/// move at the next commit, never a missing one).
#[test]
fn auth_generation_moves_with_committed_auth_changes_only() {
    let store = SqliteStore::open_temporary().unwrap();
    let g0 = store.auth_generation().expect("a file store has a generation");
    let o = org("first");
    store.write(|tx| Ok(tx.insert_org(&o)?)).unwrap();
    let g1 = store.auth_generation().unwrap();
    assert!(g1 > g0, "an organization insert moves it");
    let b = billing_core::branch::Branch::new(o.id, "Main", o.created_at);
    store.write(|tx| Ok(tx.insert_branch(&b)?)).unwrap();
    let g2 = store.auth_generation().unwrap();
    assert!(g2 > g1, "a branch insert moves it");
    // A failed write that changed an organization commits nothing, and the reads stay right.
    let mut renamed = o.clone();
    renamed.name = "renamed".into();
    let r: Result<(), Error> = store.write(|tx| {
        tx.update_org(&renamed)?;
        Err(StoreError::backend("refused").into())
    });
    assert!(r.is_err());
    assert_eq!(store.read(|tx| Ok(tx.org(o.id)?)).unwrap().unwrap().name, "first");
    // Reads move nothing.
    let g3 = store.auth_generation().unwrap();
    store.read(|tx| Ok(tx.org(o.id)?)).unwrap();
    assert_eq!(store.auth_generation().unwrap(), g3);
    // The in-memory store reads on its writer and keeps nothing.
    assert_eq!(SqliteStore::open_url("sqlite::memory:").unwrap().auth_generation(), None);
}

/// A write whose savepoint journals many pages that earlier writes made (here: rewriting 20,000
/// organizations, several MiB of statement journal) commits like a small one. A writer
/// configured to keep the statement journal in memory up to 1 MiB and spill past it failed
/// such a write with "database or disk is full" (SQLite 3.50, spill sizes above 128 KiB), which
/// no small write showed.
#[test]
fn a_write_with_a_large_statement_journal_commits() {
    let store = SqliteStore::open_temporary().unwrap();
    let orgs: Vec<Organization> = (0..20_000).map(|i| org(&format!("org {i} {}", "x".repeat(100)))).collect();
    store
        .write(|tx| {
            for o in &orgs {
                tx.insert_org(o)?;
            }
            Ok(())
        })
        .unwrap();
    let renamed: Vec<Organization> = orgs
        .iter()
        .map(|o| Organization {
            name: format!("{} renamed", o.name),
            ..o.clone()
        })
        .collect();
    store
        .write(|tx| {
            for o in &renamed {
                tx.update_org(o)?;
            }
            Ok(())
        })
        .unwrap();
    let last = renamed.last().unwrap();
    assert_eq!(store.read(|tx| Ok(tx.org(last.id)?)).unwrap().map(|o| o.name), Some(last.name.clone()));
}
