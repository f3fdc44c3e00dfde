//! The WAL is copied into the database file by the store's checkpoint thread, not by commits
//! (`checkpoint.rs`): committed writes reach the database file within moments, however few
//! pages they wrote (SQLite's own automatic checkpoint waits for 1,000), and stay readable
//! after the store is gone.

use billing_core::consumer::ConsumerFields;
use billing_core::fields::PhoneNumber;
use billing_core::testkit::World;
use billing_store_sqlite::SqliteStore;
use std::time::{Duration, Instant};

/// In WAL mode only a checkpoint writes to the database file.
fn contents(p: &std::path::Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn committed_pages_reach_the_database_file_without_waiting_for_a_thousand() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checkpoint.db");
    let w = World::new(SqliteStore::open(&path).unwrap());
    let s = w.admin.clone();
    // Wait for the schema's own pages to settle, then write a few dozen pages (20 small
    // transactions: far fewer than the 1,000 WAL pages SQLite's own checkpoint waits for).
    std::thread::sleep(Duration::from_millis(500));
    let before = contents(&path);
    for n in 0..20u32 {
        let fields = ConsumerFields {
            name: Some(format!("Checkpoint consumer {n}")),
            phone_number: Some(PhoneNumber::parse(&format!("+96651{n:07}")).unwrap()),
            ..Default::default()
        };
        w.billing.consumers().create(&s, fields).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while contents(&path) == before {
        assert!(Instant::now() < deadline, "nothing was copied from the WAL into the database file");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(w);

    // Every committed consumer is there for the next process to open the file.
    let c = rusqlite::Connection::open(&path).unwrap();
    let count: i64 = c
        .query_row("SELECT count(*) FROM consumers WHERE name LIKE 'Checkpoint consumer %'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 20);
}
