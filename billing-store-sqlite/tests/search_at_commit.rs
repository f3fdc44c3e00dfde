//! New consumers join the FTS5 search index when their transaction commits (migration 0011,
//! `index_new_consumers` in the writer): whatever a transaction does to a consumer it inserted
//! (update, several in one group-commit batch, a rolled-back savepoint), every committed
//! consumer is found by its current values and by no old ones, and the index stays intact.

use billing_core::consumer::{ConsumerFields, ConsumerSort};
use billing_core::fields::PhoneNumber;
use billing_core::list::ListQuery;
use billing_core::store::Store;
use billing_core::testkit::World;
use billing_store_sqlite::SqliteStore;
use std::sync::{Arc, Barrier};

fn names_found<S: Store>(w: &World<S>, term: &str) -> Vec<String> {
    let mut q = ListQuery::new(ConsumerSort::CreatedAt);
    q.search = Some(term.to_string());
    q.limit = 100;
    let page = w
        .billing
        .engine()
        .store
        .read(|tx| Ok(tx.list_consumers(w.admin.branch_id(), &q, &Default::default())?))
        .unwrap();
    let mut names: Vec<String> = page.items.into_iter().map(|c| c.name).collect();
    names.sort();
    names
}

fn fields(name: &str, n: u32) -> ConsumerFields {
    ConsumerFields {
        name: Some(name.into()),
        phone_number: Some(PhoneNumber::parse(&format!("+96650{n:07}")).unwrap()),
        ..Default::default()
    }
}

#[test]
fn consumers_are_searchable_from_their_commit_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("search.db");
    let w = World::new(SqliteStore::open(&path).unwrap());
    let s = w.admin.clone();

    // Inserted and renamed in one transaction: indexed once, with the new name.
    let made = w.billing.consumers().create(&s, fields("Zzold Firstname", 1)).unwrap();
    let mut twice = made.clone();
    twice.id = billing_core::ids::ConsumerId::new();
    twice.phone_number = Some(PhoneNumber::parse("+966500000002").unwrap());
    twice.name = "Qqbefore Rename".into();
    w.billing
        .engine()
        .store
        .write(|tx| {
            tx.insert_consumer(&twice)?;
            twice.name = "Qqafter Rename".into();
            tx.update_consumer(&twice)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(names_found(&w, "qqafter"), vec!["Qqafter Rename"]);
    assert!(names_found(&w, "qqbefore").is_empty(), "the name it had before its commit is not indexed");

    // An indexed consumer renamed later: the index follows.
    w.billing
        .consumers()
        .update(
            &s,
            made.id,
            ConsumerFields {
                name: Some("Yynew Name".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(names_found(&w, "yynew"), vec!["Yynew Name"]);
    assert!(names_found(&w, "zzold").is_empty());

    // An insert rolled back with its savepoint leaves nothing to index.
    let ghost = billing_core::consumer::Consumer {
        id: billing_core::ids::ConsumerId::new(),
        name: "Ghost Person".into(),
        phone_number: Some(PhoneNumber::parse("+966500000003").unwrap()),
        ..made.clone()
    };
    let refused = w.billing.engine().store.write(|tx| {
        tx.insert_consumer(&ghost)?;
        Err::<(), _>(billing_core::Error::rule(billing_core::Code::INVALID_PARAMETERS, "no"))
    });
    assert!(refused.is_err());
    assert!(names_found(&w, "ghost").is_empty());

    // Many writers at once (group commit batches them): each consumer is found as soon as its
    // write returns.
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let w = Arc::new(w);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (w, barrier, s) = (w.clone(), barrier.clone(), s.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..20u32 {
                    let n = 100 + t as u32 * 100 + i;
                    let name = format!("Batchperson{n:05} X");
                    w.billing.consumers().create(&s, fields(&name, n)).unwrap();
                    assert_eq!(names_found(&w, &format!("batchperson{n:05}")), vec![name], "found right after its write");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let all = w
        .billing
        .engine()
        .store
        .read(|tx| {
            let mut q = ListQuery::new(ConsumerSort::CreatedAt);
            q.search = Some("batchperson".into());
            Ok(tx.list_consumers(s.branch_id(), &q, &Default::default())?.total)
        })
        .unwrap();
    assert_eq!(all, 160);

    // Nothing left pending, and FTS5's own check of the index against the table passes.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let pending: i64 = conn.query_row("SELECT COUNT(*) FROM consumers_search_pending", [], |r| r.get(0)).unwrap();
    assert_eq!(pending, 0);
    conn.execute("INSERT INTO consumers_search (consumers_search, rank) VALUES ('integrity-check', 1)", [])
        .expect("the search index matches the consumers table");
}
