//! The concurrency promises of the `Store` contract: reads never wait for a writer and never see
//! uncommitted rows; a failing transaction never takes concurrent ones with it; and the core's
//! read-check-write operations stay correct when they race (one duplicate wins, clock advances
//! add up, concurrent get-or-create of a branch agrees on one branch).

use super::consumers::fields as consumer_fields;
use super::tx::{all_consumers, phone, raw_consumer};
use super::{start, Harness, World};
use crate::consumer::ConsumerFilter;
use crate::error::{Code, Error};
use crate::ids::ConsumerId;
use crate::sandbox::Advance;
use crate::store::Store;
use chrono::Duration;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::mpsc;
use std::sync::Barrier;
use std::time::Duration as StdDuration;

const THREADS: usize = 8;

fn live_consumer_ids<S: Store>(w: &World<S>) -> BTreeSet<ConsumerId> {
    let main = w.boot.branch.id;
    w.read(|tx| tx.list_consumers(main, &all_consumers(), &ConsumerFilter::default()))
        .items
        .into_iter()
        .map(|c| c.id)
        .collect()
}

pub fn reads_do_not_wait_for_writers<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let c = raw_consumer(org, main, "Uncommitted");
    let id = c.id;
    let store = &w.billing.engine().store;
    let (inserted_tx, inserted_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let early = std::thread::scope(|scope| {
        let writer = scope.spawn(move || {
            store.write(|tx| {
                tx.insert_consumer(&c)?;
                let _ = inserted_tx.send(());
                let _ = release_rx.recv_timeout(StdDuration::from_secs(30));
                Ok(())
            })
        });
        inserted_rx.recv_timeout(StdDuration::from_secs(30)).expect("the writer started");
        let (read_tx, read_rx) = mpsc::channel();
        let reader = scope.spawn(move || {
            let r = store.read(|tx| Ok(tx.consumer(main, id)?));
            let _ = read_tx.send(r);
        });
        let early = read_rx.recv_timeout(StdDuration::from_secs(5));
        let _ = release_tx.send(());
        writer.join().expect("writer thread").expect("the writer commits");
        reader.join().expect("reader thread");
        early
    });
    let seen = early.expect("a read waited for an open write transaction");
    assert_eq!(seen.expect("read"), None, "a read never sees uncommitted rows");
    assert!(w.read(|tx| tx.consumer(main, id)).is_some(), "visible once committed");
}

pub fn failing_writes_do_not_take_others_down<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let mut taken = raw_consumer(org, main, "Taken");
    taken.phone_number = Some(phone("+966501234567"));
    w.write(|tx| tx.insert_consumer(&taken));
    let store = &w.billing.engine().store;
    let barrier = Barrier::new(THREADS * 2);
    let outcomes = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS * 2)
            .map(|i| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut c = raw_consumer(org, main, &format!("T{i}"));
                    if i % 4 == 3 {
                        c.phone_number = Some(phone("+966501234567"));
                    }
                    barrier.wait();
                    let r = store.write(|tx| {
                        tx.insert_consumer(&c)?;
                        if i % 4 == 1 {
                            return Err(Error::rule(Code::INVALID_STATUS, "this one fails"));
                        }
                        Ok(())
                    });
                    (i, c.id, r)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect::<Vec<_>>()
    });
    let mut want = BTreeSet::from([taken.id]);
    for (i, id, r) in outcomes {
        match i % 4 {
            1 => assert_eq!(r, Err(Error::rule(Code::INVALID_STATUS, "this one fails")), "T{i}"),
            3 => assert!(matches!(r, Err(Error::Store(crate::error::StoreError::UniqueViolation(_)))), "T{i}: {r:?}"),
            _ => {
                assert_eq!(r, Ok(()), "T{i} must commit although others failed");
                want.insert(id);
            }
        }
    }
    assert_eq!(live_consumer_ids(&w), want, "exactly the successful writes are kept");
}

pub fn concurrent_duplicate_consumers_one_wins<H: Harness>() {
    let w = World::new(H::store());
    let barrier = Barrier::new(THREADS);
    for contact in [json!({"phone_number": "+966501234567"}), json!({"email": "Same@Example.com"})] {
        let before = live_consumer_ids(&w).len();
        let results = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|i| {
                    let (w, barrier, contact) = (&w, &barrier, &contact);
                    scope.spawn(move || {
                        let mut v = contact.clone();
                        v["name"] = json!(format!("T{i}"));
                        if let Some(e) = v.get("email").and_then(|e| e.as_str()) {
                            // Vary the case: the rule is case-insensitive.
                            v["email"] = json!(if i % 2 == 0 { e.to_uppercase() } else { e.to_lowercase() });
                        }
                        let f = consumer_fields(v);
                        barrier.wait();
                        w.billing.consumers().create(&w.admin, f)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("thread")).collect::<Vec<_>>()
        });
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 1, "exactly one of the racing creates wins ({contact}): {results:?}");
        for r in results.iter().filter(|r| r.is_err()) {
            assert_eq!(
                r.as_ref().err().and_then(|e| e.rule_code()),
                Some(Code::DUPLICATE_CONSUMER),
                "the losers get DUPLICATE_CONSUMER, not a store error: {r:?}"
            );
        }
        assert_eq!(live_consumer_ids(&w).len(), before + 1);
    }
}

pub fn concurrent_clock_advances_add_up<H: Harness>() {
    let w = World::new(H::store());
    let barrier = Barrier::new(THREADS);
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (w, barrier) = (&w, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::seconds(10)))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect::<Vec<_>>()
    });
    let times: BTreeSet<_> = results.into_iter().map(|r| r.expect("advance")).collect();
    let want: BTreeSet<_> = (1..=THREADS as i64).map(|i| start() + Duration::seconds(10 * i)).collect();
    assert_eq!(times, want, "each advance starts where the previous one ended");
    let org = w.read(|tx| tx.org(w.boot.org.id)).unwrap();
    assert_eq!(org.clock_offset_us, 10_000_000 * THREADS as i64, "no advance is lost");
}

pub fn concurrent_branch_creates_agree<H: Harness>() {
    let w = World::new(H::store());
    let barrier = Barrier::new(THREADS);
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let (w, barrier) = (&w, &barrier);
                scope.spawn(move || {
                    let name = if i % 2 == 0 { "Racing" } else { "RACING" };
                    barrier.wait();
                    w.billing.branches().create(&w.admin, name.to_string())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect::<Vec<_>>()
    });
    let ids: BTreeSet<_> = results.iter().map(|r| r.as_ref().map(|b| b.id).map_err(|e| format!("{e:?}"))).collect();
    assert_eq!(ids.len(), 1, "every racing create returns the same branch: {results:?}");
    assert!(results[0].is_ok(), "{results:?}");
    assert_eq!(w.all_branches().len(), 2);
}
