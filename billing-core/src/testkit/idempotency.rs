//! Idempotency keys (`crate::idempotency`): the store slice round-trips records (the stored
//! response byte for byte) and scopes them by organization, credential and key; claims are
//! decided one at a time, also when they race; the mark written in an operation's transaction
//! commits and rolls back with it and fences off a request whose claim was taken over; a key
//! whose operation committed is never run again; keys expire after 24 hours of the
//! organization's time.

use super::{expect_code, Harness, World};
use crate::error::{Code, Error, StoreError};
use crate::idempotency::{self, Begin, Claim, Fingerprint, IdempotencyKey, IdempotencyRecord, State, StoredResponse};
use crate::store::Store;
use chrono::Duration;
use std::sync::Barrier;

fn key(k: &str) -> IdempotencyKey {
    IdempotencyKey::parse(k.as_bytes()).unwrap()
}

fn print<S: Store>(w: &World<S>, body: &str) -> Fingerprint {
    Fingerprint::of("POST", "/api/v2/consumers", "", w.boot.branch.id, body.as_bytes())
}

fn response(body: &[u8]) -> StoredResponse {
    StoredResponse {
        status: 201,
        headers: vec![("content-type".into(), "application/json".into()), ("x-other".into(), "a, b".into())],
        body: body.to_vec(),
    }
}

fn record<S: Store>(w: &World<S>, c: &Claim) -> Option<IdempotencyRecord> {
    w.read(|tx| tx.idempotency_record(c.org_id, &c.scope, &c.key))
}

#[track_caller]
fn run(b: crate::error::Result<Begin>) -> Claim {
    match b {
        Ok(Begin::Run(c)) => c,
        other => panic!("expected Begin::Run, got {other:?}"),
    }
}

/// A write of the operation under `claim`: it records a notification, so that what it kept can
/// be seen.
fn operation_write<S: Store>(w: &World<S>, claim: &Claim, fail: bool) -> crate::error::Result<()> {
    let _marking = w.billing.engine().idempotency_marking(claim);
    let org = w.boot.org.id;
    let now = w.now();
    w.billing.engine().store.write(crate::store::marking(|tx| {
        tx.insert_notification(&crate::notification::Notification {
            id: crate::ids::NotificationId::new(),
            org_id: org,
            branch_id: None,
            consumer_id: None,
            kind: crate::notification::Kind::OrganizationInvite,
            channel: crate::notification::Channel::Email,
            recipient: "op@example.com".into(),
            language: crate::fields::Language::En,
            payload: serde_json::json!({}),
            status: crate::notification::Status::Pending,
            attempts: vec![],
            next_attempt_at: None,
            updated_at: now,
            created_at: now,
            sent_at: None,
        })?;
        match fail {
            true => Err(Error::code(Code::INVALID_STATUS)),
            false => Ok(()),
        }
    }))
}

fn operations<S: Store>(w: &World<S>) -> usize {
    w.notifications().iter().filter(|n| n.recipient == "op@example.com").count()
}

pub fn record_round_trip_and_scoping<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let other = w.other_org("Other", false);
    let done = IdempotencyRecord {
        org_id: org,
        scope: "key:a".into(),
        key: "order-1 ~!".into(),
        fingerprint: "f".repeat(64),
        state: State::Done,
        owner: uuid::Uuid::now_v7(),
        created_at: w.now(),
        lease_until: w.now() + Duration::seconds(60),
        // Not UTF-8: the body is kept as bytes.
        response: Some(response(&[0, 159, 146, 150, b'{', b'}'])),
    };
    w.write(|tx| tx.insert_idempotency_record(&done));
    assert_eq!(w.read(|tx| tx.idempotency_record(org, "key:a", "order-1 ~!")), Some(done.clone()));
    // Another organization, scope or key (keys compare exactly) is another record.
    assert_eq!(w.read(|tx| tx.idempotency_record(other.org.id, "key:a", "order-1 ~!")), None);
    assert_eq!(w.read(|tx| tx.idempotency_record(org, "key:b", "order-1 ~!")), None);
    assert_eq!(w.read(|tx| tx.idempotency_record(org, "key:a", "ORDER-1 ~!")), None);
    let twin = IdempotencyRecord {
        org_id: other.org.id,
        ..done.clone()
    };
    w.write(|tx| tx.insert_idempotency_record(&twin));
    assert_eq!(
        w.try_write(|tx| tx.insert_idempotency_record(&done)),
        Err(Error::Store(StoreError::UniqueViolation("idempotency_keys_pkey".into())))
    );

    // Updates and marks need the owner; a DONE record is not marked.
    let claim = Claim {
        org_id: org,
        scope: done.scope.clone(),
        key: done.key.clone(),
        owner: done.owner,
    };
    let stranger = Claim {
        owner: uuid::Uuid::now_v7(),
        ..claim.clone()
    };
    let later = w.now() + Duration::seconds(120);
    assert!(!w.write(|tx| tx.mark_idempotency_committed(&claim, later)));
    let running = IdempotencyRecord {
        state: State::Running,
        response: None,
        ..done.clone()
    };
    assert!(!w.write(|tx| tx.update_idempotency_record(&running, stranger.owner)));
    assert!(w.write(|tx| tx.update_idempotency_record(&running, claim.owner)));
    assert_eq!(record(&w, &claim), Some(running.clone()));
    assert!(!w.write(|tx| tx.mark_idempotency_committed(&stranger, later)));
    assert!(w.write(|tx| tx.mark_idempotency_committed(&claim, later)));
    let marked = record(&w, &claim).unwrap();
    assert_eq!((marked.state, marked.lease_until), (State::Committed, later));
    // Only a RUNNING record is released.
    assert!(!w.write(|tx| tx.release_idempotency_record(&claim)));
    assert!(w.write(|tx| tx.update_idempotency_record(&running, claim.owner)));
    assert!(!w.write(|tx| tx.release_idempotency_record(&stranger)));
    assert!(w.write(|tx| tx.release_idempotency_record(&claim)));
    assert_eq!(record(&w, &claim), None);
    // The other organization's twin is untouched throughout.
    assert_eq!(w.read(|tx| tx.idempotency_record(other.org.id, "key:a", "order-1 ~!")), Some(twin.clone()));

    // Purging is per organization and strictly before the time given.
    let old = IdempotencyRecord {
        key: "old".into(),
        created_at: w.now() - Duration::hours(25),
        ..done.clone()
    };
    let edge = IdempotencyRecord {
        key: "edge".into(),
        created_at: w.now() - Duration::hours(24),
        ..done.clone()
    };
    let old_other = IdempotencyRecord {
        org_id: other.org.id,
        ..old.clone()
    };
    w.write(|tx| {
        tx.insert_idempotency_record(&old)?;
        tx.insert_idempotency_record(&edge)?;
        tx.insert_idempotency_record(&old_other)
    });
    let before = w.now() - Duration::hours(24);
    assert_eq!(w.write(|tx| tx.purge_idempotency_records(org, before)), 1);
    assert_eq!(w.read(|tx| tx.idempotency_record(org, "key:a", "old")), None);
    assert!(w.read(|tx| tx.idempotency_record(org, "key:a", "edge")).is_some());
    assert!(w.read(|tx| tx.idempotency_record(other.org.id, "key:a", "old")).is_some());
}

pub fn finished_requests_replay_and_other_requests_are_refused<H: Harness>() {
    let w = World::new(H::store());
    let (k, fp) = (key("order-1"), print(&w, r#"{"name":"A"}"#));
    let claim = run(w.billing.engine().idempotency_begin(&w.admin, &k, &fp));
    assert_eq!(claim.scope, format!("key:{}", w.admin.actor.api_key_id.expect("an API key")));
    let rec = record(&w, &claim).expect("claimed");
    assert_eq!(
        (rec.state, rec.fingerprint.as_str(), rec.response.is_none()),
        (State::Running, fp.0.as_str(), true)
    );
    operation_write(&w, &claim, false).unwrap();
    assert!(w.billing.engine().idempotency_finish(&claim, Some(response(b"{\"id\":1}"))).unwrap());
    assert_eq!(record(&w, &claim).unwrap().state, State::Done);
    for _ in 0..2 {
        assert_eq!(
            w.billing.engine().idempotency_begin(&w.admin, &k, &fp),
            Ok(Begin::Replay(response(b"{\"id\":1}")))
        );
    }
    // The same key with another request (body, path, branch) is refused and changes nothing.
    let branch = w.new_branch("Second");
    for other in [
        print(&w, r#"{"name":"B"}"#),
        Fingerprint::of("POST", "/api/v2/products", "", w.boot.branch.id, br#"{"name":"A"}"#),
        Fingerprint::of("POST", "/api/v2/consumers", "", branch.id, br#"{"name":"A"}"#),
    ] {
        expect_code(w.billing.engine().idempotency_begin(&w.admin, &k, &other), Code::IDEMPOTENCY_KEY_MISMATCH);
    }
    assert_eq!(record(&w, &claim).unwrap().response, Some(response(b"{\"id\":1}")));
    assert_eq!(operations(&w), 1);
    // Another credential of the organization has keys of its own.
    let (_, cred) = w.scoped_key(&[w.boot.branch.id]);
    let scoped = w.auth(&cred, None);
    let theirs = run(w.billing.engine().idempotency_begin(&scoped, &k, &fp));
    assert_ne!(theirs.scope, claim.scope);
    // A finished claim is not finished again.
    assert!(!w.billing.engine().idempotency_finish(&claim, Some(response(b"other"))).unwrap());
    assert_eq!(record(&w, &claim).unwrap().response, Some(response(b"{\"id\":1}")));
}

pub fn running_requests_are_waited_for_then_taken_over<H: Harness>() {
    let w = World::new(H::store());
    let (k, fp) = (key("order-2"), print(&w, "{}"));
    let first = run(w.billing.engine().idempotency_begin(&w.admin, &k, &fp));
    assert_eq!(w.billing.engine().idempotency_begin(&w.admin, &k, &fp), Ok(Begin::InProgress));
    w.tick(59);
    assert_eq!(w.billing.engine().idempotency_begin(&w.admin, &k, &fp), Ok(Begin::InProgress));
    // The first request wrote nothing within its lease: presumed dead, its claim is taken over.
    w.tick(2);
    let second = run(w.billing.engine().idempotency_begin(&w.admin, &k, &fp));
    assert_ne!(first.owner, second.owner);
    // The first request, alive after all, cannot commit anything under the key now.
    expect_code(operation_write(&w, &first, false), Code::IDEMPOTENCY_KEY_IN_USE);
    assert_eq!(operations(&w), 0);
    assert!(!w.billing.engine().idempotency_finish(&first, Some(response(b"first"))).unwrap());
    operation_write(&w, &second, false).unwrap();
    assert_eq!(record(&w, &second).unwrap().state, State::Committed);
    assert!(w.billing.engine().idempotency_finish(&second, Some(response(b"second"))).unwrap());
    assert_eq!(w.billing.engine().idempotency_begin(&w.admin, &k, &fp), Ok(Begin::Replay(response(b"second"))));
    assert_eq!(operations(&w), 1);
}

pub fn marks_commit_and_roll_back_with_the_operation<H: Harness>() {
    let w = World::new(H::store());
    let (k, fp) = (key("order-3"), print(&w, "{}"));
    let claim = run(w.billing.engine().idempotency_begin(&w.admin, &k, &fp));
    let leased = record(&w, &claim).unwrap().lease_until;
    // A failed transaction keeps neither its rows nor the mark.
    expect_code(operation_write(&w, &claim, true), Code::INVALID_STATUS);
    assert_eq!((record(&w, &claim).unwrap().state, operations(&w)), (State::Running, 0));
    // A failed response (a 5xx) of a request that committed nothing releases the key.
    assert!(w.billing.engine().idempotency_finish(&claim, None).unwrap());
    assert_eq!(record(&w, &claim), None);
    let claim = run(w.billing.engine().idempotency_begin(&w.admin, &k, &fp));
    // A committed write marks the record and renews its lease.
    w.tick(30);
    operation_write(&w, &claim, false).unwrap();
    let marked = record(&w, &claim).unwrap();
    assert_eq!(marked.state, State::Committed);
    assert!(marked.lease_until > leased);
    // Without the marking guard, writes mark nothing.
    assert!(!idempotency::marking_active());
    w.billing.engine().store.write(crate::store::marking(|_| Ok(()))).unwrap();
    assert_eq!(record(&w, &claim), Some(marked));
}

pub fn committed_requests_are_never_run_again<H: Harness>() {
    let w = World::new(H::store());
    let (k, fp) = (key("order-4"), print(&w, "{}"));
    let claim = run(w.billing.engine().idempotency_begin(&w.admin, &k, &fp));
    operation_write(&w, &claim, false).unwrap();
    // The process dies before storing the response: while the lease runs the request is
    // presumed in progress, afterwards its outcome is unknown; it never runs again.
    assert_eq!(w.billing.engine().idempotency_begin(&w.admin, &k, &fp), Ok(Begin::InProgress));
    w.tick(61);
    expect_code(w.billing.engine().idempotency_begin(&w.admin, &k, &fp), Code::IDEMPOTENCY_OUTCOME_UNKNOWN);
    assert_eq!(record(&w, &claim).unwrap().state, State::Committed);
    // A 5xx after a commit keeps the key too, ending its lease at once.
    let (k2, fp2) = (key("order-5"), print(&w, "{}"));
    let c2 = run(w.billing.engine().idempotency_begin(&w.admin, &k2, &fp2));
    operation_write(&w, &c2, false).unwrap();
    assert!(w.billing.engine().idempotency_finish(&c2, None).unwrap());
    expect_code(w.billing.engine().idempotency_begin(&w.admin, &k2, &fp2), Code::IDEMPOTENCY_OUTCOME_UNKNOWN);
    assert_eq!(operations(&w), 2);
}

pub fn keys_expire_after_24_hours_of_org_time<H: Harness>() {
    let w = World::new(H::store());
    let (k, fp) = (key("order-6"), print(&w, "{}"));
    let first = run(w.billing.engine().idempotency_begin(&w.admin, &k, &fp));
    w.billing.engine().idempotency_finish(&first, Some(response(b"one"))).unwrap();
    // The sandbox test clock moves the organization's time, and with it the keys' age.
    w.billing
        .sandbox()
        .advance(&w.fresh_admin(), crate::sandbox::Advance::By(Duration::hours(24) - Duration::seconds(1)))
        .unwrap();
    assert_eq!(
        w.billing.engine().idempotency_begin(&w.fresh_admin(), &k, &fp),
        Ok(Begin::Replay(response(b"one")))
    );
    w.billing
        .sandbox()
        .advance(&w.fresh_admin(), crate::sandbox::Advance::By(Duration::seconds(2)))
        .unwrap();
    // Forgotten: the same key (even with another request) is new again.
    let other = print(&w, r#"{"x":1}"#);
    let again = run(w.billing.engine().idempotency_begin(&w.fresh_admin(), &k, &other));
    assert_ne!(again.owner, first.owner);
    assert_eq!(record(&w, &again).unwrap().fingerprint, other.0);
}

pub fn racing_claims_let_one_run<H: Harness>() {
    const THREADS: usize = 8;
    let w = World::new(H::store());
    let (k, fp) = (key("order-7"), print(&w, "{}"));
    let barrier = Barrier::new(THREADS);
    let outcomes: Vec<Begin> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    w.billing.engine().idempotency_begin(&w.admin, &k, &fp).expect("begin")
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let runs: Vec<&Claim> = outcomes
        .iter()
        .filter_map(|b| match b {
            Begin::Run(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(runs.len(), 1, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|b| **b == Begin::InProgress).count(), THREADS - 1);
    assert_eq!(record(&w, runs[0]).unwrap().owner, runs[0].owner);
}
