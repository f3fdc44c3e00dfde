//! The due-work queue (claims with leases, organization time, concurrent claims) and webhooks
//! (endpoints, the outbox fan-out, deliveries, the retry schedule on the sandbox clock), with an
//! in-memory transport standing in for HTTP.

use super::{expect_code, expect_invalid, expect_unique, start, Harness, World};
use crate::auth::Scope;
use crate::error::Code;
use crate::event::{EntityType, Event, EventType};
use crate::ids::{EventId, OrgId, WorkId};
use crate::sandbox::Advance;
use crate::store::Store;
use crate::webhook::{verify_at, Delivery, DeliveryFilter, DeliveryStatus, EndpointFields, Outcome, WebhookTransport, DELIVERED, FANNED_OUT, FANOUT_KIND};
use crate::work::{DueTimes, DueWork};
use chrono::Duration;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

const KIND: &str = "test.kind";

/// Writes an event as operations do ([`crate::event::record`]: with its fan-out item).
pub fn record<S: crate::store::Store>(w: &World<S>, ev: &Event) {
    w.billing.engine().store.write(|tx| crate::event::record(tx, ev)).expect("record the event");
}

fn item(org: OrgId, due: crate::clock::Timestamp) -> DueWork {
    DueWork::new(WorkId::new(), org, KIND, due, json!({"n": 1}))
}

pub fn work_round_trip_and_leases<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let now = w.now();
    let a = item(org, now - Duration::seconds(1));
    let b = item(org, now);
    let later = item(org, now + Duration::minutes(5));
    for x in [&a, &b, &later] {
        w.write(|tx| tx.insert_work(x));
    }
    expect_unique(w.try_write(|tx| tx.insert_work(&a)));
    assert_eq!(w.read(|tx| tx.work(a.id)), Some(a.clone()));
    let lease = now + Duration::seconds(60);
    assert!(w.read(|tx| tx.due_work_exists(Some(org), &[KIND], now)));
    assert!(!w.read(|tx| tx.due_work_exists(Some(org), &["other.kind"], now)));
    assert!(!w.read(|tx| tx.due_work_exists(Some(org), &[KIND], now - Duration::seconds(2))));
    let claimed = w.write(|tx| tx.claim_due_work(Some(org), &[KIND], now, lease, 10));
    assert_eq!(claimed.iter().map(|x| x.id).collect::<Vec<_>>(), vec![a.id, b.id], "due ones, earliest first");
    assert!(claimed.iter().all(|x| x.attempts == 1 && x.leased_until == Some(lease)));
    assert!(
        w.write(|tx| tx.claim_due_work(None, &[KIND], now, lease, 10)).is_empty(),
        "leased items are not claimed again"
    );
    assert!(w
        .write(|tx| tx.claim_due_work(None, &["other.kind"], now + Duration::hours(1), lease, 10))
        .is_empty());
    assert!(!w.read(|tx| tx.due_work_exists(None, &[KIND], now)), "leased items are not due work");
    // The lease runs out: the item is claimable again (a crashed claimer's work is not lost).
    let t2 = now + Duration::seconds(61);
    let again = w.write(|tx| tx.claim_due_work(None, &[KIND], t2, t2 + Duration::seconds(60), 1));
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].id, again[0].attempts), (a.id, 2));
    // The first claimer lost its lease: it cannot complete or reschedule.
    assert!(!w.write(|tx| tx.complete_work(a.id, Some(lease))));
    assert!(!w.write(|tx| tx.reschedule_work(a.id, Some(lease), now, &json!({}))));
    assert!(w.write(|tx| tx.reschedule_work(a.id, again[0].leased_until, now + Duration::hours(1), &json!({"n": 2}))));
    let a2 = w.read(|tx| tx.work(a.id)).unwrap();
    assert_eq!(
        (a2.due_at, a2.leased_until, a2.payload.clone()),
        (now + Duration::hours(1), None, json!({"n": 2}))
    );
    assert!(w.write(|tx| tx.complete_work(b.id, Some(lease))));
    assert_eq!(w.read(|tx| tx.work(b.id)), None);
    // A specific item is claimed whether due or not, unless it is leased.
    let c = w.write(|tx| tx.claim_work(later.id, now, lease)).expect("claimable");
    assert_eq!(c.leased_until, Some(lease));
    assert_eq!(w.write(|tx| tx.claim_work(later.id, now, lease)), None);
    assert_eq!(w.write(|tx| tx.claim_work(WorkId::new(), now, lease)), None);
}

pub fn due_follows_the_org_clock<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let other = w.other_org("Other", false).org.id;
    let now = w.now();
    let mine = item(org, now + Duration::hours(2));
    let theirs = item(other, now);
    w.write(|tx| tx.insert_work(&mine));
    w.write(|tx| tx.insert_work(&theirs));
    let lease = now + Duration::seconds(30);
    assert!(w.write(|tx| tx.claim_due_work(Some(org), &[KIND], now, lease, 10)).is_empty());
    assert!(!w.read(|tx| tx.due_work_exists(Some(org), &[KIND], now)));
    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::hours(2))).unwrap();
    let got = w.write(|tx| tx.claim_due_work(Some(org), &[KIND], now, lease, 10));
    assert_eq!(
        got.iter().map(|x| x.id).collect::<Vec<_>>(),
        vec![mine.id],
        "due on the test clock, of that organization only"
    );
    let all = w.write(|tx| tx.claim_due_work(None, &[KIND], now, lease, 10));
    assert_eq!(all.iter().map(|x| x.id).collect::<Vec<_>>(), vec![theirs.id]);
}

/// A claim across organizations whose clocks differ: the items due by the server's clock
/// (of every organization) and those due only on a clock that is ahead come in one due order,
/// earliest first, whatever the limit; items not yet due on their own clock, leased items and
/// other kinds are left; a claim that stops inside the first range takes nothing of the second.
pub fn claims_merge_server_time_and_clocks_ahead<H: Harness>() {
    let w = World::new(H::store());
    let ahead = w.boot.org.id;
    let live = w.other_org("Live", true).org.id;
    let now = w.now();
    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::hours(3))).unwrap();
    let at = |org, minutes: i64| item(org, now + Duration::minutes(minutes));
    let live_old = at(live, -20);
    let ahead_old = at(ahead, -10);
    let live_now = at(live, 0);
    let ahead_soon = at(ahead, 60);
    let ahead_later = at(ahead, 170);
    let live_soon = at(live, 60); // not due: its organization's clock is the server's
    let ahead_after = at(ahead, 190); // not due: after the test clock
    let held = at(ahead, 30);
    let other_kind = DueWork::new(WorkId::new(), ahead, "other.kind", now, json!({}));
    for x in [
        &live_old,
        &ahead_old,
        &live_now,
        &ahead_soon,
        &ahead_later,
        &live_soon,
        &ahead_after,
        &held,
        &other_kind,
    ] {
        w.write(|tx| tx.insert_work(x));
    }
    let lease = now + Duration::seconds(60);
    w.write(|tx| tx.claim_work(held.id, now, lease)).expect("held");
    let ids = |v: Vec<DueWork>| v.into_iter().map(|x| x.id).collect::<Vec<_>>();
    // Inside the first range: nothing of the second.
    let first = w.write(|tx| tx.claim_due_work(None, &[KIND], now, lease, 2));
    assert_eq!(ids(first), vec![live_old.id, ahead_old.id]);
    // Across both: the rest of the first, then the second, in due order.
    let rest = w.write(|tx| tx.claim_due_work(None, &[KIND], now, lease, 10));
    assert_eq!(ids(rest), vec![live_now.id, ahead_soon.id, ahead_later.id]);
    assert!(!w.read(|tx| tx.due_work_exists(None, &[KIND], now)), "nothing else is due");
    assert!(w.read(|tx| tx.due_work_exists(Some(ahead), &["other.kind"], now)));
    // One organization at a time, the same way: the test clock moves on.
    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::minutes(20))).unwrap();
    assert!(w.write(|tx| tx.claim_due_work(Some(live), &[KIND], now, lease, 10)).is_empty());
    let mine = w.write(|tx| tx.claim_due_work(Some(ahead), &[KIND], now, lease, 10));
    assert_eq!(ids(mine), vec![ahead_after.id]);
    // A claim with only the second range left, skipping the organizations passed over.
    let t = now + Duration::seconds(61);
    let again = w.write(|tx| tx.claim_due_work_except(&[live], &[KIND], t, t + Duration::seconds(60), 10));
    assert_eq!(
        ids(again),
        vec![ahead_old.id, held.id, ahead_soon.id, ahead_later.id, ahead_after.id],
        "leases run out: claimable again, in due order, without the excepted organization's"
    );
}

/// The queue's depth by kind: every item, the due free ones (in their organization's time),
/// the leased ones, and the longest wait of a due one.
pub fn queue_depths_by_kind<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let now = w.now();
    let of = |kind: &str, due: crate::clock::Timestamp| DueWork::new(WorkId::new(), org, kind, due, json!({}));
    let late = of("test.a", now - Duration::seconds(5));
    let held = of("test.a", now - Duration::seconds(9));
    for x in [
        &late,
        &held,
        &of("test.a", now - Duration::seconds(1)),
        &of("test.a", now + Duration::hours(1)),
        &of("test.b", now + Duration::hours(2)),
    ] {
        w.write(|tx| tx.insert_work(x));
    }
    w.write(|tx| tx.claim_work(held.id, now, now + Duration::seconds(60))).expect("claimed");
    let ours = |at| {
        w.read(|tx| tx.work_queue_depths(at))
            .into_iter()
            .filter(|d| d.kind.starts_with("test."))
            .map(|d| (d.kind, d.items, d.due, d.leased, d.lag_us))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ours(now),
        vec![("test.a".to_string(), 4, 2, 1, 5_000_000), ("test.b".to_string(), 1, 0, 0, 0)],
        "the held item is neither due nor the lag"
    );
    // On the organization's clock: two hours and ten seconds later test.b is 10 s late.
    w.billing
        .sandbox()
        .advance(&w.admin, Advance::By(Duration::hours(2) + Duration::seconds(10)))
        .unwrap();
    let after = ours(now);
    assert_eq!(after[1], ("test.b".to_string(), 1, 1, 0, 10_000_000), "{after:?}");
    assert_eq!(
        (after[0].2, after[0].4),
        (3, (Duration::hours(2) + Duration::seconds(15)).num_microseconds().unwrap()),
        "{after:?}"
    );
}

/// A fair claim passes over organizations that hold half the runners or more while another
/// organization has due work, and gives them what is left; with nobody busy it is a plain
/// claim in due order.
pub fn fair_claims_pass_over_busy_organizations<H: Harness>() {
    let w = World::new(H::store());
    let busy_org = w.boot.org.id;
    let other = w.other_org("Other", false).org.id;
    let now = w.now();
    let backlog: Vec<DueWork> = (1..=6).map(|k| item(busy_org, now - Duration::seconds(60 - k))).collect();
    let theirs = item(other, now - Duration::seconds(1));
    for x in backlog.iter().chain([&theirs]) {
        w.write(|tx| tx.insert_work(x));
    }
    let lease = now + Duration::seconds(60);
    let except = w.write(|tx| tx.claim_due_work_except(&[busy_org], &[KIND], now, lease, 10));
    assert_eq!(except.iter().map(|x| x.id).collect::<Vec<_>>(), vec![theirs.id]);
    w.write(|tx| tx.reschedule_work(theirs.id, Some(lease), theirs.due_at, &theirs.payload));

    // Four runners, two held by `busy_org`: the other organization's item comes first, although
    // it is due last; the rest of the limit goes to the busy one, earliest first.
    let held = std::collections::HashMap::from([(busy_org, 2usize)]);
    let got = w
        .billing
        .engine()
        .claim_due_work_fairly(&[KIND], Duration::seconds(30), 3, 4, &held, false)
        .unwrap();
    assert_eq!(got.iter().map(|x| x.id).collect::<Vec<_>>(), vec![theirs.id, backlog[0].id, backlog[1].id]);
    // Nobody busy: due order, whatever the organization.
    let got = w
        .billing
        .engine()
        .claim_due_work_fairly(&[KIND], Duration::seconds(30), 2, 4, &Default::default(), false)
        .unwrap();
    assert_eq!(got.iter().map(|x| x.id).collect::<Vec<_>>(), vec![backlog[2].id, backlog[3].id]);
    // After a full claim (no question first whether anything is due): the same items, in the
    // same order, and nothing once nothing is due.
    let got = w
        .billing
        .engine()
        .claim_due_work_fairly(&[KIND], Duration::seconds(30), 1, 4, &Default::default(), true)
        .unwrap();
    assert_eq!(got.iter().map(|x| x.id).collect::<Vec<_>>(), vec![backlog[4].id]);
    let got = w.billing.engine().claim_more_due_work(None, &[KIND], Duration::seconds(30), 5).unwrap();
    assert_eq!(got.iter().map(|x| x.id).collect::<Vec<_>>(), vec![backlog[5].id]);
    assert!(w
        .billing
        .engine()
        .claim_more_due_work(None, &[KIND], Duration::seconds(30), 5)
        .unwrap()
        .is_empty());
}

pub fn concurrent_claims_take_each_item_once<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let now = w.now();
    let ids: BTreeSet<WorkId> = (0..200)
        .map(|i| {
            let x = item(org, now - Duration::seconds(i));
            w.write(|tx| tx.insert_work(&x));
            x.id
        })
        .collect();
    let store = &w.billing.engine().store;
    let taken = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| loop {
                let got = store
                    .write(|tx| Ok(tx.claim_due_work(None, &[KIND], now, now + Duration::hours(1), 7)?))
                    .expect("claim");
                if got.is_empty() {
                    break;
                }
                taken.lock().unwrap().extend(got.into_iter().map(|x| x.id));
            });
        }
    });
    let taken = taken.into_inner().unwrap();
    assert_eq!(taken.len(), ids.len(), "every item claimed exactly once");
    assert_eq!(taken.into_iter().collect::<BTreeSet<_>>(), ids);
}

// --- webhooks ----------------------------------------------------------------------------------

/// One request as the transport saw it: URL, headers, body.
pub type Sent = (String, Vec<(String, String)>, Vec<u8>);

/// Records every request and answers with the configured status.
#[derive(Default)]
pub struct FakeTransport {
    pub status: Mutex<u16>,
    pub sent: Mutex<Vec<Sent>>,
}

impl FakeTransport {
    pub fn new(status: u16) -> Arc<Self> {
        Arc::new(FakeTransport {
            status: Mutex::new(status),
            sent: Mutex::default(),
        })
    }
    pub fn count(&self) -> usize {
        self.sent.lock().unwrap().len()
    }
    pub fn set(&self, status: u16) {
        *self.status.lock().unwrap() = status;
    }
}

impl WebhookTransport for FakeTransport {
    fn post(&self, url: &str, headers: &[(String, String)], body: &[u8], _timeout: std::time::Duration) -> Outcome {
        self.sent.lock().unwrap().push((url.to_string(), headers.to_vec(), body.to_vec()));
        let status = *self.status.lock().unwrap();
        Outcome {
            status: Some(status),
            body: format!("answer {status}"),
            error: None,
            duration: std::time::Duration::from_millis(3),
        }
    }
}

pub fn event_in(scope: &Scope, t: EventType, at: crate::clock::Timestamp) -> Event {
    Event {
        id: EventId::new(),
        org_id: scope.org_id(),
        branch_id: scope.branch_id(),
        event_type: t,
        entity_type: EntityType::Payment,
        entity_id: uuid::Uuid::now_v7(),
        payload: json!({"event_type": t, "entity_type": "PAYMENT", "status": "SUCCEEDED", "data": {"metadata": {"k": "v"}}}),
        created_at: at,
    }
}

fn endpoint<S: Store>(w: &World<S>, scope: &Scope, body: Value) -> crate::webhook::Endpoint {
    w.billing
        .webhooks()
        .create(scope, EndpointFields::parse(&body, true).unwrap())
        .expect("create endpoint")
}

fn deliveries<S: Store>(w: &World<S>, endpoint: uuid::Uuid) -> Vec<Delivery> {
    w.read(|tx| tx.list_webhook_deliveries(endpoint, &DeliveryFilter::default(), 1, 100)).items
}

pub fn endpoints_round_trip_and_validation<H: Harness>() {
    let w = World::new(H::store());
    let e = endpoint(
        &w,
        &w.admin,
        json!({"url": "https://example.com/hook", "event_types": ["PAYMENT_SUCCEEDED"], "description": "d"}),
    );
    assert!(e.secret_key.starts_with("whsec_") && e.enabled);
    assert_eq!(w.billing.webhooks().get(&w.admin, e.id).unwrap(), e);
    let all = endpoint(
        &w,
        &w.admin,
        json!({"url": "http://hooks.example.net:9/x", "event_types": "all", "enabled": false}),
    );
    assert_eq!(all.event_types, None);
    assert!(!all.enabled);
    let listed = w.billing.webhooks().list(&w.admin, 1, 10).unwrap();
    assert_eq!(listed.items.iter().map(|x| x.id).collect::<Vec<_>>(), vec![e.id, all.id]);
    for bad in [json!({"url": "ftp://x/y"}), json!({"url": "not a url"}), json!({"url": "http://"}), json!({})] {
        expect_invalid(EndpointFields::parse(&bad, true), "url");
    }
    match EndpointFields::parse(&json!({"url": "https://a.b", "event_types": ["PAYMENT_FAILED", "NOPE"]}), true) {
        Err(crate::error::Error::Validation(d)) => assert_eq!(serde_json::to_value(&d[0].loc).unwrap(), json!(["body", "event_types", 1])),
        other => panic!("an unknown event type is a 422, got {other:?}"),
    }
    expect_invalid(EndpointFields::parse(&json!({"url": "https://a.b", "event_types": []}), true), "event_types");
    let upd = w
        .billing
        .webhooks()
        .update(
            &w.admin,
            e.id,
            EndpointFields::parse(&json!({"enabled": false, "event_types": ["INVOICE_CREATED"]}), false).unwrap(),
        )
        .unwrap();
    assert_eq!((upd.enabled, upd.event_types.clone()), (false, Some(vec![EventType::InvoiceCreated])));
    assert_eq!(upd.url, e.url);
    let rotated = w.billing.webhooks().rotate_secret(&w.admin, e.id).unwrap();
    assert_ne!(rotated.secret_key, e.secret_key);
    // Branch isolation: another branch does not see it.
    let b2 = w.new_branch("Second");
    let other = w.in_branch(b2.id);
    expect_code(w.billing.webhooks().get(&other, e.id), Code::NOT_FOUND);
    assert!(w.billing.webhooks().list(&other, 1, 10).unwrap().items.is_empty());
    w.billing.webhooks().delete(&w.admin, e.id).unwrap();
    expect_code(w.billing.webhooks().get(&w.admin, e.id), Code::NOT_FOUND);
    assert_eq!(w.read(|tx| tx.webhook_endpoint(e.id)).unwrap().deleted_at, Some(w.now()));
}

pub fn events_enqueue_fanout_only_for_branches_with_endpoints<H: Harness>() {
    let w = World::new(H::store());
    let ev = event_in(&w.admin, EventType::PaymentSucceeded, w.now());
    record(&w, &ev);
    assert_eq!(w.read(|tx| tx.work(WorkId(ev.id.0))), None, "no endpoint, no fan-out work");
    endpoint(&w, &w.admin, json!({"url": "https://example.com/h"}));
    let ev2 = event_in(&w.admin, EventType::PaymentFailed, w.now());
    record(&w, &ev2);
    let fan = w.read(|tx| tx.work(WorkId(ev2.id.0))).expect("fan-out item written with the event");
    assert_eq!(
        (fan.kind.as_str(), fan.due_at, fan.org_id, fan.leased_until),
        (FANOUT_KIND, ev2.created_at, ev2.org_id, None)
    );
    // Rolled back with its transaction.
    let ev3 = event_in(&w.admin, EventType::PaymentFailed, w.now());
    let _ = w.billing.engine().store.write(|tx| {
        crate::event::record(tx, &ev3)?;
        Err::<(), _>(crate::error::Error::code(Code::NOT_FOUND))
    });
    assert_eq!(w.read(|tx| tx.work(WorkId(ev3.id.0))), None);
    // Only endpoints that would receive it count: enabled, and subscribed to the event's type.
    let other = w.new_branch("Quiet");
    let there = w.in_branch(other.id);
    let invoices_only = endpoint(&w, &there, json!({"url": "https://example.com/i", "event_types": ["INVOICE_CREATED"]}));
    endpoint(&w, &there, json!({"url": "https://example.com/off", "enabled": false}));
    let unwanted = event_in(&there, EventType::PaymentFailed, w.now());
    record(&w, &unwanted);
    assert_eq!(w.read(|tx| tx.work(WorkId(unwanted.id.0))), None, "nobody there subscribes to it");
    let wanted = event_in(&there, EventType::InvoiceCreated, w.now());
    record(&w, &wanted);
    assert!(w.read(|tx| tx.work(WorkId(wanted.id.0))).is_some());
    w.billing.webhooks().delete(&there, invoices_only.id).unwrap();
    let after = event_in(&there, EventType::InvoiceCreated, w.now());
    record(&w, &after);
    assert_eq!(w.read(|tx| tx.work(WorkId(after.id.0))), None, "a deleted endpoint receives nothing");
}

pub fn delivery_round_trip_unique_and_filters<H: Harness>() {
    let w = World::new(H::store());
    let e = endpoint(&w, &w.admin, json!({"url": "https://example.com/h"}));
    let mk = |t: EventType, at, status| Delivery {
        id: uuid::Uuid::now_v7(),
        org_id: w.boot.org.id,
        branch_id: w.boot.branch.id,
        endpoint_id: e.id,
        event_id: EventId::new(),
        event_type: t,
        status,
        next_attempt_at: Some(at),
        attempts: vec![],
        created_at: at,
        updated_at: at,
    };
    let d1 = mk(EventType::PaymentSucceeded, start(), DeliveryStatus::Pending);
    let d2 = mk(EventType::InvoiceCreated, start() + Duration::hours(1), DeliveryStatus::Failed);
    w.write(|tx| tx.insert_webhook_delivery(&d1));
    w.write(|tx| tx.insert_webhook_delivery(&d2));
    let mut dup = d1.clone();
    dup.id = uuid::Uuid::now_v7();
    assert_eq!(
        expect_unique(w.try_write(|tx| tx.insert_webhook_delivery(&dup))),
        "webhook_deliveries_endpoint_event_key"
    );
    assert_eq!(w.read(|tx| tx.webhook_delivery(d1.id)), Some(d1.clone()));
    assert_eq!(deliveries(&w, e.id), vec![d2.clone(), d1.clone()], "newest first");
    let f = |status, event_type, from, to| DeliveryFilter { status, event_type, from, to };
    let ids = |f: DeliveryFilter| {
        w.read(|tx| tx.list_webhook_deliveries(e.id, &f, 1, 10))
            .items
            .into_iter()
            .map(|d| d.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(f(Some(DeliveryStatus::Failed), None, None, None)), vec![d2.id]);
    assert_eq!(ids(f(None, Some(EventType::PaymentSucceeded), None, None)), vec![d1.id]);
    assert_eq!(ids(f(None, None, Some(start() + Duration::minutes(1)), None)), vec![d2.id]);
    assert_eq!(ids(f(None, None, None, Some(start() + Duration::minutes(1)))), vec![d1.id]);
    let p = w.read(|tx| tx.list_webhook_deliveries(e.id, &DeliveryFilter::default(), 2, 1));
    assert_eq!((p.total, p.items.len(), p.items[0].id), (2, 1, d1.id));
    let mut upd = d1.clone();
    upd.status = DeliveryStatus::Delivered;
    upd.next_attempt_at = None;
    upd.attempts.push(crate::webhook::Attempt {
        number: 1,
        at: "2026-01-15T09:00:00.000000Z".into(),
        response_status: Some(200),
        response_body: Some("ok".into()),
        error: None,
        duration_ms: 4,
        manual: false,
    });
    upd.updated_at = start() + Duration::seconds(1);
    w.write(|tx| tx.update_webhook_delivery(&upd));
    assert_eq!(w.read(|tx| tx.webhook_delivery(d1.id)), Some(upd));
}

/// Sets up an endpoint and a transport; returns them.
fn wired<S: Store>(w: &World<S>, status: u16, body: Value) -> (crate::webhook::Endpoint, Arc<FakeTransport>) {
    let t = FakeTransport::new(status);
    w.billing.engine().set_webhook_transport(t.clone());
    (endpoint(w, &w.admin, body), t)
}

pub fn delivery_is_signed_with_spec_headers<H: Harness>() {
    let w = World::new(H::store());
    let (e, t) = wired(&w, 204, json!({"url": "https://example.com/h"}));
    let ev = event_in(&w.admin, EventType::PaymentSucceeded, w.now());
    record(&w, &ev);
    let r = w.billing.engine().run_due_work(None, 100).unwrap();
    assert_eq!((r.count(FANNED_OUT), r.count(DELIVERED)), (1, 1));
    let sent = t.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    let (url, headers, body) = &sent[0];
    assert_eq!(url, &e.url);
    assert_eq!(body, &serde_json::to_vec(&ev.payload).unwrap(), "the payload as compact JSON");
    let h = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_else(|| panic!("no {k}"));
    assert_eq!(h("Content-Type"), "application/json");
    assert_eq!(h("User-Agent"), crate::webhook::USER_AGENT);
    assert_eq!(h("X-Webhook-Event"), "PAYMENT_SUCCEEDED");
    assert_eq!(h("X-Webhook-Entity-Type"), "PAYMENT");
    assert_eq!(h("X-Webhook-Entity-ID"), ev.entity_id.to_string());
    let ts: i64 = h("X-Webhook-Timestamp").parse().unwrap();
    assert_eq!(ts, w.now().timestamp(), "UNIX seconds of the server clock");
    assert_eq!(verify_at(Some(&h("X-Webhook-Signature")), body, &e.secret_key, 300, ts), Ok(ts));
    let d = deliveries(&w, e.id);
    assert_eq!(h("X-Webhook-Delivery-ID"), d[0].id.to_string());
    assert_eq!((d[0].status, d[0].attempts.len(), d[0].next_attempt_at), (DeliveryStatus::Delivered, 1, None));
    assert_eq!(d[0].attempts[0].response_status, Some(204));
    assert!(w.read(|tx| tx.work(WorkId(d[0].id))).is_none(), "nothing left to do");
    assert_eq!(w.billing.engine().run_due_work(None, 100).unwrap().claimed, 0);
}

pub fn retry_schedule_runs_on_the_sandbox_clock<H: Harness>() {
    let w = World::new(H::store());
    let (e, t) = wired(&w, 500, json!({"url": "https://example.com/h"}));
    let ev = event_in(&w.admin, EventType::InvoiceCreated, w.now());
    record(&w, &ev);
    // The advance runs the work that is due (here: fan-out and the first attempt).
    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::zero())).unwrap();
    assert_eq!(t.count(), 1);
    for (i, minutes) in [5i64, 30, 120, 360, 720].into_iter().enumerate() {
        let d = &deliveries(&w, e.id)[0];
        assert_eq!(d.status, DeliveryStatus::Retrying);
        let last_at = crate::clock::parse_datetime(&d.attempts.last().unwrap().at).unwrap();
        assert_eq!(
            d.next_attempt_at,
            Some(last_at + Duration::minutes(minutes)),
            "retry {} after {minutes} minutes",
            i + 1
        );
        // One second early: nothing.
        w.billing
            .sandbox()
            .advance(&w.fresh_admin(), Advance::By(Duration::minutes(minutes) - Duration::seconds(1)))
            .unwrap();
        assert_eq!(t.count(), i + 1);
        w.billing.sandbox().advance(&w.fresh_admin(), Advance::By(Duration::seconds(1))).unwrap();
        assert_eq!(t.count(), i + 2, "attempt {} at +{minutes} minutes", i + 2);
    }
    let d = &deliveries(&w, e.id)[0];
    assert_eq!((d.status, d.attempts.len(), d.next_attempt_at), (DeliveryStatus::Failed, 6, None));
    assert!(d
        .attempts
        .iter()
        .all(|a| a.response_status == Some(500) && a.response_body.as_deref() == Some("answer 500")));
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::By(Duration::days(30))).unwrap();
    assert_eq!(t.count(), 6, "failed is final");
    // A manual retry sends it again, as a new attempt.
    t.set(200);
    let v = serde_json::to_value(w.billing.webhooks().retry_delivery(&w.fresh_admin(), d.id).unwrap().view()).unwrap();
    assert_eq!((v["status"].as_str(), v["attempt_count"].as_u64()), (Some("delivered"), Some(7)));
    assert_eq!(v["attempts"][6]["manual"], json!(true));
    assert_eq!(t.count(), 7);
}

pub fn success_on_a_later_attempt<H: Harness>() {
    let w = World::new(H::store());
    let (e, t) = wired(&w, 503, json!({"url": "https://example.com/h"}));
    record(&w, &event_in(&w.admin, EventType::PaymentSucceeded, w.now()));
    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::zero())).unwrap();
    t.set(200);
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::By(Duration::minutes(5))).unwrap();
    let d = &deliveries(&w, e.id)[0];
    assert_eq!((d.status, d.attempts.len()), (DeliveryStatus::Delivered, 2));
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::By(Duration::days(1))).unwrap();
    assert_eq!(t.count(), 2);
}

pub fn subscriptions_disabled_deleted_and_branches<H: Harness>() {
    let w = World::new(H::store());
    let t = FakeTransport::new(200);
    w.billing.engine().set_webhook_transport(t.clone());
    let payments = endpoint(
        &w,
        &w.admin,
        json!({"url": "https://example.com/payments", "event_types": ["PAYMENT_SUCCEEDED"]}),
    );
    let everything = endpoint(&w, &w.admin, json!({"url": "https://example.com/all"}));
    let disabled = endpoint(&w, &w.admin, json!({"url": "https://example.com/off", "enabled": false}));
    let deleted = endpoint(&w, &w.admin, json!({"url": "https://example.com/gone"}));
    w.billing.webhooks().delete(&w.admin, deleted.id).unwrap();
    let b2 = w.new_branch("Second");
    let second = w.in_branch(b2.id);
    let theirs = endpoint(&w, &second, json!({"url": "https://example.com/second"}));
    record(&w, &event_in(&w.admin, EventType::PaymentSucceeded, w.now()));
    record(&w, &event_in(&w.admin, EventType::InvoiceCreated, w.now()));
    w.billing.engine().run_due_work(None, 100).unwrap();
    let urls: Vec<String> = t.sent.lock().unwrap().iter().map(|s| s.0.clone()).collect();
    let count = |u: &str| urls.iter().filter(|x| x.as_str() == u).count();
    assert_eq!((count(&payments.url), count(&everything.url)), (1, 2));
    assert_eq!((count(&disabled.url), count(&deleted.url), count(&theirs.url)), (0, 0, 0));
    // Disabled after the fan-out: the pending delivery is not sent.
    record(&w, &event_in(&second, EventType::PaymentFailed, w.now()));
    w.billing
        .webhooks()
        .update(&second, theirs.id, EndpointFields::parse(&json!({"enabled": true}), false).unwrap())
        .unwrap();
    let claimed = w.billing.engine().claim_due_work(None, &[FANOUT_KIND], Duration::seconds(30), 10).unwrap();
    let mut r = crate::work::WorkReport::default();
    w.billing.engine().run_work(&claimed, &mut r);
    assert_eq!(r.errors, 0);
    w.billing.webhooks().delete(&second, theirs.id).unwrap();
    w.billing.engine().run_due_work(None, 100).unwrap();
    assert_eq!(count(&theirs.url), 0);
    assert_eq!(t.sent.lock().unwrap().iter().filter(|s| s.0 == theirs.url).count(), 0);
    let d = deliveries(&w, theirs.id);
    assert_eq!((d.len(), d[0].status, d[0].attempts.len()), (1, DeliveryStatus::Failed, 0));
}

pub fn work_due_times_of_free_and_held_items<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let other = w.other_org("Other", false).org.id;
    let now = w.now();
    let times = |kinds: &[&str], at| w.read(|tx| tx.work_due_times(org, kinds, at));
    let both = |free, held| DueTimes {
        next_free: free,
        first_held: held,
    };
    assert_eq!(times(&[KIND], now), both(None, None), "no work");
    let held = item(org, now - Duration::minutes(1));
    let soon = item(org, now + Duration::minutes(5));
    let later = item(org, now + Duration::hours(3));
    let theirs = item(other, now - Duration::hours(1));
    let other_kind = DueWork::new(WorkId::new(), org, "other.kind", now - Duration::hours(2), json!({}));
    for x in [&held, &soon, &later, &theirs, &other_kind] {
        w.write(|tx| tx.insert_work(x));
    }
    assert_eq!(times(&[KIND], now), both(Some(held.due_at), None), "due or not, earliest first");
    assert_eq!(times(&[], now), both(None, None));
    let lease = now + Duration::seconds(60);
    assert!(w.write(|tx| tx.claim_work(held.id, now, lease)).is_some());
    assert_eq!(times(&[KIND], now), both(Some(soon.due_at), Some(held.due_at)), "a held item is in flight");
    assert_eq!(times(&[KIND], lease), both(Some(held.due_at), None), "a lease that ran out holds nothing");
    assert_eq!(
        times(&[KIND, "other.kind"], now),
        both(Some(other_kind.due_at), Some(held.due_at)),
        "every kind asked for"
    );
    assert!(w.write(|tx| tx.complete_work(soon.id, None)));
    assert!(w.write(|tx| tx.complete_work(held.id, Some(lease))));
    assert_eq!(times(&[KIND], now), both(Some(later.due_at), None));
    assert_eq!(
        w.read(|tx| tx.work_due_times(other, &[KIND], now)),
        both(Some(theirs.due_at), None),
        "per organization"
    );
}

/// One advance of a day runs the whole retry schedule, each attempt at its own time.
pub fn one_long_advance_replays_the_retry_schedule<H: Harness>() {
    let w = World::new(H::store());
    let (e, t) = wired(&w, 500, json!({"url": "https://example.com/h"}));
    let start_at = w.billing.engine().now(&w.admin);
    record(&w, &event_in(&w.admin, EventType::PaymentFailed, w.now()));
    let reached = w.billing.sandbox().advance(&w.admin, Advance::By(Duration::days(1))).unwrap();
    assert_eq!(reached, start_at + Duration::days(1));
    assert_eq!(w.billing.sandbox().clock(&w.fresh_admin()).unwrap(), reached);
    assert_eq!(t.count(), 6);
    let d = &deliveries(&w, e.id)[0];
    assert_eq!((d.status, d.next_attempt_at), (DeliveryStatus::Failed, None));
    let offsets: Vec<i64> = d
        .attempts
        .iter()
        .map(|a| (crate::clock::parse_datetime(&a.at).unwrap() - start_at).num_minutes())
        .collect();
    assert_eq!(offsets, vec![0, 5, 35, 155, 515, 1235], "attempts at +5, +30, +120, +360, +720 minutes");
    let failed = d.id;
    // A success part-way stops the schedule there.
    t.set(500);
    let e2 = endpoint(&w, &w.admin, json!({"url": "https://example.com/second"}));
    record(&w, &event_in(&w.admin, EventType::PaymentFailed, w.now()));
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::By(Duration::minutes(6))).unwrap();
    let d2 = &deliveries(&w, e2.id)[0];
    assert_eq!((d2.status, d2.attempts.len()), (DeliveryStatus::Retrying, 2), "+0 and +5 within six minutes");
    t.set(200);
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::By(Duration::days(2))).unwrap();
    let d2 = &deliveries(&w, e2.id)[0];
    assert_eq!((d2.status, d2.attempts.len()), (DeliveryStatus::Delivered, 3));
    let first = deliveries(&w, e.id).into_iter().find(|x| x.id == failed).unwrap();
    assert_eq!(
        (first.status, first.attempts.len()),
        (DeliveryStatus::Failed, 6),
        "a failed delivery stays failed"
    );
}

/// A clock advance reports its progress, stop by stop (here at every stop), and once at the
/// end.
pub fn advances_report_progress<H: Harness>() {
    let w = World::new(H::store());
    let (_, t) = wired(&w, 500, json!({"url": "https://example.com/h"}));
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    w.billing.engine().set_advance_progress(
        std::time::Duration::ZERO,
        Arc::new(move |p: &crate::sandbox::AdvanceProgress| sink.lock().unwrap().push(p.clone())),
    );
    record(&w, &event_in(&w.admin, EventType::PaymentFailed, w.now()));
    let target = w.billing.sandbox().advance(&w.admin, Advance::By(Duration::days(1))).unwrap();
    let reports = reports.lock().unwrap().clone();
    assert_eq!(t.count(), 6);
    assert_eq!(
        reports.iter().map(|r| r.stops).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5, 5],
        "one per stop, then the end"
    );
    assert!(reports.windows(2).all(|p| p[0].at <= p[1].at && p[0].items <= p[1].items));
    let last = reports.last().unwrap();
    assert!(last.done && !reports[..reports.len() - 1].iter().any(|r| r.done));
    assert_eq!((last.at, last.target, last.org), (target, target, w.boot.org.id));
    assert!(last.items >= 6, "at least the six attempts: {}", last.items);
}

/// Branch users may read endpoints and the delivery log but not change them or send again.
pub fn branch_users_cannot_manage_webhooks<H: Harness>() {
    let w = World::new(H::store());
    let (e, t) = wired(&w, 500, json!({"url": "https://example.com/h"}));
    record(&w, &event_in(&w.admin, EventType::PaymentFailed, w.now()));
    w.billing.engine().run_due_work(None, 100).unwrap();
    let d = deliveries(&w, e.id)[0].clone();
    let branch = w.boot.branch.id;
    let user = w.auth(&w.bearer(&w.user(crate::org::Role::BranchUser, &[branch])), None);
    let branch_admin = w.auth(&w.bearer(&w.user(crate::org::Role::BranchAdmin, &[branch])), None);
    let fields = || EndpointFields::parse(&json!({"url": "https://example.com/x"}), true).unwrap();
    expect_code(w.billing.webhooks().create(&user, fields()), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.webhooks().update(&user, e.id, fields()), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.webhooks().rotate_secret(&user, e.id), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.webhooks().delete(&user, e.id), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.webhooks().retry_delivery(&user, d.id), Code::PERMISSION_FORBIDDEN);
    assert_eq!(t.count(), 1, "nothing sent by the refused retry");
    let stored = w.read(|tx| tx.webhook_endpoint(e.id)).unwrap();
    assert_eq!(stored, e, "the endpoint is unchanged");
    assert_eq!(w.billing.webhooks().list(&user, 1, 10).unwrap().items.len(), 1, "branch users read");
    assert_eq!(w.billing.webhooks().get(&user, e.id).unwrap().id, e.id);
    assert!(w.billing.webhooks().get_delivery(&user, d.id).is_ok());
    // A branch admin manages its branch's endpoints.
    let rotated = w.billing.webhooks().rotate_secret(&branch_admin, e.id).unwrap();
    assert_ne!(rotated.secret_key, e.secret_key);
    w.billing.webhooks().create(&branch_admin, fields()).unwrap();
}

/// Fan-out items claimed together are fanned out in one transaction; an item whose lease was
/// lost meanwhile is left to its new holder, and the rest go on.
pub fn fan_out_batch_skips_lost_leases<H: Harness>() {
    let w = World::new(H::store());
    let t = FakeTransport::new(200);
    w.billing.engine().set_webhook_transport(t.clone());
    let e = endpoint(&w, &w.admin, json!({"url": "https://example.com/h"}));
    let events: Vec<Event> = (0..3).map(|_| event_in(&w.admin, EventType::PaymentSucceeded, w.now())).collect();
    for ev in &events {
        record(&w, ev);
    }
    let now = w.now();
    let claimed = w.write(|tx| tx.claim_due_work(None, &[FANOUT_KIND], now, now + Duration::seconds(60), 10));
    assert_eq!(claimed.len(), 3);
    // The lease on the second item runs out and another process claims it.
    let later = now + Duration::seconds(61);
    let lost = claimed[1].id;
    let retaken = w.write(|tx| tx.claim_work(lost, later, later + Duration::seconds(60))).expect("claimable");
    let mut report = crate::work::WorkReport::default();
    let mut mixed = claimed.clone();
    mixed.push(DueWork::new(WorkId::new(), w.boot.org.id, KIND, now, json!({})));
    // A claim's fan-outs make one job for one runner; an item of a kind without a batched
    // handler makes a job of its own.
    let jobs = w.billing.engine().work_jobs(mixed.clone());
    assert_eq!(jobs.iter().map(|j| j.len()).collect::<Vec<_>>(), vec![3, 1]);
    assert!(jobs[0].iter().all(|i| i.kind == FANOUT_KIND) && jobs[1][0].kind == KIND);
    w.billing.engine().run_work(&mixed, &mut report);
    assert_eq!(report.count(FANNED_OUT), 2);
    assert_eq!(report.errors, 0, "a lost lease is not an error");
    let by_event: BTreeSet<EventId> = deliveries(&w, e.id).iter().map(|d| d.event_id).collect();
    assert_eq!(by_event, BTreeSet::from([events[0].id, events[2].id]));
    assert_eq!(w.read(|tx| tx.work(lost)), Some(retaken.clone()), "the new holder keeps the lost item");
    for done in [claimed[0].id, claimed[2].id] {
        assert_eq!(w.read(|tx| tx.work(done)), None, "completed with the batch");
    }
    assert_eq!(t.count(), 0, "fan-out sends nothing itself");
}

/// A receiver that answers only once `wanted` attempts are in flight together (or after a few
/// seconds), and remembers the most it saw at once.
struct Rendezvous {
    wanted: usize,
    state: Mutex<(usize, usize)>,
    changed: std::sync::Condvar,
}

impl WebhookTransport for Rendezvous {
    fn post(&self, _url: &str, _headers: &[(String, String)], _body: &[u8], _timeout: std::time::Duration) -> Outcome {
        let mut st = self.state.lock().unwrap();
        st.0 += 1;
        st.1 = st.1.max(st.0);
        self.changed.notify_all();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while st.1 < self.wanted && std::time::Instant::now() < deadline {
            st = self.changed.wait_timeout(st, std::time::Duration::from_millis(50)).unwrap().0;
        }
        st.0 -= 1;
        Outcome {
            status: Some(500),
            body: String::new(),
            error: None,
            duration: std::time::Duration::from_millis(1),
        }
    }
}

/// The deliveries due at one stop of a clock advance are attempted side by side, so two
/// receivers that hang cost the advance one time-out per stop, not two.
pub fn deliveries_of_one_stop_run_side_by_side<H: Harness>() {
    let w = World::new(H::store());
    let t = Arc::new(Rendezvous {
        wanted: 2,
        state: Mutex::new((0, 0)),
        changed: std::sync::Condvar::new(),
    });
    w.billing.engine().set_webhook_transport(t.clone());
    endpoint(&w, &w.admin, json!({"url": "https://one.example.com/h"}));
    endpoint(&w, &w.admin, json!({"url": "https://two.example.com/h"}));
    record(&w, &event_in(&w.admin, EventType::PaymentFailed, w.now()));
    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::minutes(1))).unwrap();
    assert_eq!(t.state.lock().unwrap().1, 2, "both receivers were called at once");
}

/// Endpoints may point only to public addresses, in any spelling, at creation and on change;
/// an endpoint stored while private addresses were allowed is not sent to once they are not.
/// A refused request writes nothing.
pub fn webhook_destinations_must_be_public<H: Harness>() {
    let w = World::new(H::store());
    let t = FakeTransport::new(200);
    w.billing.engine().set_webhook_transport(t.clone());
    let ok = endpoint(&w, &w.admin, json!({"url": "https://example.com/h"}));
    for url in [
        "http://127.0.0.1:8080/h",
        "http://localhost/h",
        "http://2130706433/h",
        "http://0x7f.1/h",
        "http://[::ffff:10.0.0.1]/h",
        "http://169.254.169.254/latest",
    ] {
        let fields = EndpointFields::parse(&json!({ "url": url }), true).unwrap();
        let err = w.billing.webhooks().create(&w.admin, fields.clone());
        match err {
            Err(crate::error::Error::Validation(d)) => {
                assert_eq!(serde_json::to_value(&d[0].loc).unwrap(), json!(["body", "url"]), "{url}");
                assert!(d[0].msg.contains("public addresses"), "{url}: {}", d[0].msg);
                assert!(
                    d[0].msg.contains("--webhook-allow-private"),
                    "the refusal names the development flag: {}",
                    d[0].msg
                );
            }
            other => panic!("{url}: expected a 422, got {other:?}"),
        }
        let change = EndpointFields::parse(&json!({ "url": url }), false).unwrap();
        expect_invalid(w.billing.webhooks().update(&w.admin, ok.id, change), "url");
    }
    let listed = w.billing.webhooks().list(&w.admin, 1, 10).unwrap().items;
    assert_eq!(listed, vec![ok.clone()], "nothing was created or changed");

    // Allowed (development): a local endpoint is accepted ...
    w.billing.engine().set_allow_private_webhooks(true);
    let local = endpoint(&w, &w.admin, json!({"url": "http://127.0.0.1:9/h"}));
    // ... and once disallowed again, its deliveries are not sent but logged as refused.
    w.billing.engine().set_allow_private_webhooks(false);
    w.billing
        .webhooks()
        .update(&w.admin, ok.id, EndpointFields::parse(&json!({"enabled": false}), false).unwrap())
        .unwrap();
    record(&w, &event_in(&w.admin, EventType::PaymentSucceeded, w.now()));
    let r = w.billing.engine().run_due_work(None, 100).unwrap();
    assert_eq!((r.count(DELIVERED), t.count()), (0, 0), "nothing sent");
    let d = deliveries(&w, local.id);
    assert_eq!(d.len(), 1);
    let a = &d[0].attempts[0];
    assert_eq!(a.response_status, None);
    assert!(a.error.as_deref().is_some_and(|e| e.contains("public addresses")), "{a:?}");

    // A redirect's body is not kept (it can carry what an internal service at its target
    // said); a 4xx or 5xx answer's is.
    w.billing.webhooks().delete(&w.admin, local.id).unwrap();
    for (status, kept) in [(302, false), (503, true)] {
        t.set(status);
        let e = endpoint(&w, &w.admin, json!({"url": format!("https://example.com/{status}")}));
        record(&w, &event_in(&w.admin, EventType::PaymentSucceeded, w.now()));
        w.billing.engine().run_due_work(None, 100).unwrap();
        let a = deliveries(&w, e.id)[0].attempts[0].clone();
        assert_eq!(a.response_status, Some(status));
        assert_eq!(a.response_body.is_some(), kept, "{a:?}");
        w.billing.webhooks().delete(&w.admin, e.id).unwrap();
    }
}
