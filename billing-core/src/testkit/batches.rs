//! The batch calls of the due-work queue and the webhook deliveries (many items in one call:
//! one statement on PostgreSQL), and the engine's batched fan-out and recording of attempts:
//! each item of a batch keeps the guarantee it has alone (its lease is checked; a lost lease
//! writes nothing and does not take the others down).

use super::webhooks::{event_in, record, FakeTransport};
use super::{expect_unique, Harness, World};
use crate::event::EventType;
use crate::ids::{EventId, WorkId};
use crate::webhook::batches::{Made, Mode};
use crate::webhook::{Attempt, Delivery, DeliveryStatus, EndpointFields, Outcome, DELIVERY_KIND, FANNED_OUT, FANOUT_KIND};
use crate::work::{DueWork, Reschedule};
use chrono::Duration;
use serde_json::json;
use std::collections::BTreeSet;

const KIND: &str = "test.kind";

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// `insert_work_if_absent` inserts a new item and leaves an existing one as it is (its payload,
/// due time and lease), answering which it did.
pub fn insert_work_if_absent_keeps_the_existing_item<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let now = w.now();
    let first = DueWork::new(WorkId::new(), org, KIND, now, json!({"n": 1}));
    assert!(w.write(|tx| tx.insert_work_if_absent(&first)));
    assert_eq!(w.read(|tx| tx.work(first.id)).as_ref(), Some(&first));
    let lease = now + Duration::seconds(60);
    let claimed = w.write(|tx| tx.claim_due_work(Some(org), &[KIND], now, lease, 10));
    assert_eq!(claimed.len(), 1);
    let again = DueWork::new(first.id, org, KIND, now + Duration::hours(1), json!({"n": 2}));
    assert!(!w.write(|tx| tx.insert_work_if_absent(&again)), "the id exists: nothing inserted");
    let kept = w.read(|tx| tx.work(first.id)).unwrap();
    assert_eq!((kept.due_at, kept.payload, kept.leased_until), (now, json!({"n": 1}), Some(lease)));
    // Another id is inserted beside it.
    let other = DueWork::new(WorkId::new(), org, KIND, now, json!({}));
    assert!(w.write(|tx| tx.insert_work_if_absent(&other)));
    assert!(w.read(|tx| tx.work(other.id)).is_some());
}

/// `insert_works`, `complete_works` and `reschedule_works` act on each item as the one-item
/// calls do: only items still held with the lease given are completed or rescheduled, one id
/// given with an old and a current lease counts once (the current one), and a duplicate in an
/// insert refuses the whole batch.
pub fn batch_work_calls_check_each_lease<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let now = w.now();
    let items: Vec<DueWork> = (0..4)
        .map(|i| DueWork::new(WorkId::new(), org, KIND, now - Duration::seconds(10 - i), json!({"n": i})))
        .collect();
    w.write(|tx| tx.insert_works(&items));
    w.write(|tx| tx.insert_works(&[]));
    for x in &items {
        assert_eq!(w.read(|tx| tx.work(x.id)).as_ref(), Some(x));
    }
    // A batch holding an existing id is refused as a whole: its new item is not kept either.
    let fresh = DueWork::new(WorkId::new(), org, KIND, now, json!({}));
    expect_unique(w.try_write(|tx| tx.insert_works(&[fresh.clone(), items[0].clone()])));
    assert_eq!(w.read(|tx| tx.work(fresh.id)), None, "nothing of the refused batch is kept");

    let lease = now + Duration::seconds(60);
    let claimed = w.write(|tx| tx.claim_due_work(Some(org), &[KIND], now, lease, 10));
    assert_eq!(claimed.len(), 4);
    let [a, b, c, d] = [items[0].id, items[1].id, items[2].id, items[3].id];
    // `c`'s lease runs out and another claimer takes it.
    let later = now + Duration::seconds(61);
    let lease2 = later + Duration::seconds(60);
    assert!(w.write(|tx| tx.claim_work(c, later, lease2)).is_some());

    let none: Vec<(WorkId, Option<crate::clock::Timestamp>)> = vec![];
    assert_eq!(w.write(|tx| tx.complete_works(&[])), none);
    let done = w.write(|tx| tx.complete_works(&[(a, Some(lease)), (c, Some(lease)), (WorkId::new(), Some(lease))]));
    assert_eq!(done, vec![(a, Some(lease))], "only the held item");
    assert_eq!(w.read(|tx| tx.work(a)), None);
    assert_eq!(w.read(|tx| tx.work(c)).and_then(|x| x.leased_until), Some(lease2), "the new holder keeps c");

    let due_b = now + Duration::hours(1);
    let due_c = now + Duration::hours(2);
    let moved = w.write(|tx| {
        tx.reschedule_works(&[
            Reschedule {
                id: b,
                lease: Some(lease),
                due_at: due_b,
            },
            Reschedule {
                id: c,
                lease: Some(lease),
                due_at: due_c,
            },
        ])
    });
    assert_eq!(moved, vec![(b, Some(lease))]);
    let b_now = w.read(|tx| tx.work(b)).unwrap();
    assert_eq!((b_now.due_at, b_now.leased_until, b_now.payload), (due_b, None, json!({})));
    let c_now = w.read(|tx| tx.work(c)).unwrap();
    assert_eq!((c_now.due_at, c_now.leased_until), (items[2].due_at, Some(lease2)), "c is untouched");
    assert_eq!(w.write(|tx| tx.reschedule_works(&[])), none);

    // One id with the lost and the current lease: only the current one completes it.
    let done = w.write(|tx| tx.complete_works(&[(c, Some(lease)), (c, Some(lease2)), (d, Some(lease))]));
    assert_eq!(sorted(done), sorted(vec![(c, Some(lease2)), (d, Some(lease))]));
    assert_eq!((w.read(|tx| tx.work(c)), w.read(|tx| tx.work(d))), (None, None));
    // An unleased item completes with the lease `None`, as with `complete_work`.
    assert_eq!(w.write(|tx| tx.complete_works(&[(b, None)])), vec![(b, None)]);
    assert_eq!(w.read(|tx| tx.work(b)), None);
}

fn attempt(n: u32, status: u16) -> Attempt {
    Attempt {
        number: n,
        at: "2026-01-15T09:00:00.000000Z".into(),
        response_status: Some(status),
        response_body: Some(format!("answer {n}")),
        error: None,
        duration_ms: 5,
        manual: false,
    }
}

/// `events_by_ids`, `insert_webhook_deliveries`, `webhook_delivery_contexts` and
/// `update_webhook_deliveries` read and write each item as the one-item calls do.
pub fn batch_delivery_calls_match_the_single_ones<H: Harness>() {
    let w = World::new(H::store());
    let e = w
        .billing
        .webhooks()
        .create(&w.admin, EndpointFields::parse(&json!({"url": "https://example.com/h"}), true).unwrap())
        .unwrap();
    let events: Vec<_> = (0..3).map(|_| event_in(&w.admin, EventType::PaymentSucceeded, w.now())).collect();
    for ev in &events {
        w.write(|tx| tx.insert_event(ev));
    }
    let missing = EventId::new();
    let found = w.read(|tx| tx.events_by_ids(&[events[2].id, missing, events[0].id]));
    let ids: BTreeSet<EventId> = found.iter().map(|e| e.id).collect();
    assert_eq!(ids, BTreeSet::from([events[0].id, events[2].id]), "the existing ones");
    for ev in &found {
        assert_eq!(Some(ev), events.iter().find(|x| x.id == ev.id), "read back whole");
    }
    assert!(w.read(|tx| tx.events_by_ids(&[])).is_empty());

    let now = w.now();
    let mk = |ev: &crate::event::Event| Delivery {
        id: uuid::Uuid::now_v7(),
        org_id: w.boot.org.id,
        branch_id: w.boot.branch.id,
        endpoint_id: e.id,
        event_id: ev.id,
        event_type: ev.event_type,
        status: DeliveryStatus::Pending,
        next_attempt_at: Some(now),
        attempts: vec![],
        created_at: now,
        updated_at: now,
    };
    let ds: Vec<Delivery> = events[..2].iter().map(mk).collect();
    w.write(|tx| tx.insert_webhook_deliveries(&ds));
    w.write(|tx| tx.insert_webhook_deliveries(&[]));
    // A second delivery of one event to one endpoint refuses the batch, which keeps nothing.
    let third = mk(&events[2]);
    let mut dup = ds[0].clone();
    dup.id = uuid::Uuid::now_v7();
    assert_eq!(
        expect_unique(w.try_write(|tx| tx.insert_webhook_deliveries(&[third.clone(), dup.clone()]))),
        "webhook_deliveries_endpoint_event_key"
    );
    assert_eq!(w.read(|tx| tx.webhook_delivery(third.id)), None);

    let contexts = w.read(|tx| tx.webhook_delivery_contexts(&[ds[1].id, uuid::Uuid::now_v7(), ds[0].id]));
    assert_eq!(contexts.len(), 2);
    for (d, endpoint, event) in &contexts {
        let single = w.read(|tx| tx.webhook_delivery_context(d.id)).unwrap();
        assert_eq!((d, endpoint, event), (&single.0, &single.1, &single.2));
        assert_eq!(endpoint.as_ref().map(|x| x.id), Some(e.id));
        assert_eq!(event.as_ref().map(|x| x.id), Some(d.event_id));
    }
    assert!(w.read(|tx| tx.webhook_delivery_contexts(&[])).is_empty());

    // Each delivery gets its own new state; a delivery not in the batch is unchanged.
    let mut u0 = ds[0].clone();
    u0.status = DeliveryStatus::Delivered;
    u0.next_attempt_at = None;
    u0.attempts = vec![attempt(1, 200)];
    u0.updated_at = now + Duration::seconds(1);
    let other = mk(&events[2]);
    w.write(|tx| tx.insert_webhook_delivery(&other));
    let mut u1 = ds[1].clone();
    u1.status = DeliveryStatus::Retrying;
    u1.next_attempt_at = Some(now + Duration::minutes(5));
    u1.attempts = vec![attempt(1, 500)];
    u1.updated_at = now + Duration::seconds(2);
    w.write(|tx| tx.update_webhook_deliveries(&[u0.clone(), u1.clone()]));
    w.write(|tx| tx.update_webhook_deliveries(&[]));
    assert_eq!(w.read(|tx| tx.webhook_delivery(u0.id)), Some(u0));
    assert_eq!(w.read(|tx| tx.webhook_delivery(u1.id)), Some(u1));
    assert_eq!(w.read(|tx| tx.webhook_delivery(other.id)), Some(other));
}

/// The fan-out of a batch of events makes one delivery per subscribed endpoint and event, in
/// one transaction, with a work item each.
pub fn batched_fan_out_makes_each_delivery_once<H: Harness>() {
    let w = World::new(H::store());
    let fields = |v| EndpointFields::parse(&v, true).unwrap();
    let all = w
        .billing
        .webhooks()
        .create(&w.admin, fields(json!({"url": "https://a.example.com/h"})))
        .unwrap();
    let failed_only = w
        .billing
        .webhooks()
        .create(&w.admin, fields(json!({"url": "https://b.example.com/h", "event_types": ["PAYMENT_FAILED"]})))
        .unwrap();
    let evs = [
        event_in(&w.admin, EventType::PaymentSucceeded, w.now()),
        event_in(&w.admin, EventType::PaymentFailed, w.now()),
        event_in(&w.admin, EventType::PaymentSucceeded, w.now()),
    ];
    for ev in &evs {
        record(&w, ev);
    }
    let now = w.now();
    let claimed = w.write(|tx| tx.claim_due_work(None, &[FANOUT_KIND], now, now + Duration::seconds(60), 10));
    assert_eq!(claimed.len(), 3);
    let mut report = crate::work::WorkReport::default();
    w.billing.engine().run_work(&claimed, &mut report);
    assert_eq!((report.count(FANNED_OUT), report.errors), (4, 0));
    let made = |endpoint| {
        w.read(|tx| tx.list_webhook_deliveries(endpoint, &Default::default(), 1, 100))
            .items
            .into_iter()
            .map(|d| d.event_id)
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(made(all.id), evs.iter().map(|e| e.id).collect());
    assert_eq!(made(failed_only.id), BTreeSet::from([evs[1].id]));
    let queued = w.write(|tx| tx.claim_due_work(None, &[DELIVERY_KIND], now, now + Duration::seconds(60), 10));
    assert_eq!(queued.len(), 4, "a work item per delivery");
    assert!(claimed.iter().all(|c| w.read(|tx| tx.work(c.id)).is_none()), "the fan-outs are done");
}

/// A batch of recorded attempts keeps each one whose lease held (delivered, or rescheduled for
/// a retry) and writes nothing for one whose lease was lost, which answers `LeaseLost`.
pub fn recorded_batches_keep_only_held_leases<H: Harness>() {
    let w = World::new(H::store());
    w.billing.engine().set_webhook_transport(FakeTransport::new(200));
    let e = w
        .billing
        .webhooks()
        .create(&w.admin, EndpointFields::parse(&json!({"url": "https://example.com/h"}), true).unwrap())
        .unwrap();
    for _ in 0..4 {
        record(&w, &event_in(&w.admin, EventType::PaymentSucceeded, w.now()));
    }
    let now = w.now();
    let fanned = w.write(|tx| tx.claim_due_work(None, &[FANOUT_KIND], now, now + Duration::seconds(60), 10));
    let mut report = crate::work::WorkReport::default();
    w.billing.engine().run_work(&fanned, &mut report);
    assert_eq!(report.count(FANNED_OUT), 4);
    let lease = now + Duration::seconds(60);
    let items = w.write(|tx| tx.claim_due_work(None, &[DELIVERY_KIND], now, lease, 10));
    assert_eq!(items.len(), 4);
    // The third item's lease runs out and another claimer takes it.
    let later = now + Duration::seconds(61);
    let retaken = w.write(|tx| tx.claim_work(items[2].id, later, later + Duration::seconds(60))).unwrap();
    let delivery = |id: WorkId| w.read(|tx| tx.webhook_delivery(id.0)).unwrap();
    let outcome = |status| Outcome {
        status: Some(status),
        body: "ok".into(),
        error: None,
        duration: std::time::Duration::from_millis(2),
    };
    let made = |item: &DueWork, status| Made {
        item: item.clone(),
        delivery: delivery(item.id),
        outcome: outcome(status),
        mode: Mode::Scheduled,
        started: now,
        ended: now + Duration::seconds(1),
    };
    let batch = vec![
        made(&items[0], 200),
        made(&items[1], 503),
        made(&items[2], 200),
        // The same item under its new lease, in the same batch: this one is kept.
        made(&retaken, 200),
        made(&items[3], 200),
    ];
    let answers = w.billing.engine().record_attempts(&batch);
    let lost = |r: &crate::error::Result<Option<bool>>| matches!(r, Err(crate::error::Error::Store(crate::error::StoreError::LeaseLost(_))));
    assert!(matches!(answers[0], Ok(Some(true))), "{:?}", answers[0]);
    assert!(matches!(answers[1], Ok(Some(false))), "{:?}", answers[1]);
    assert!(lost(&answers[2]), "{:?}", answers[2]);
    assert!(matches!(answers[3], Ok(Some(true))), "{:?}", answers[3]);
    assert!(matches!(answers[4], Ok(Some(true))), "{:?}", answers[4]);

    let d0 = delivery(items[0].id);
    assert_eq!((d0.status, d0.attempts.len(), d0.next_attempt_at), (DeliveryStatus::Delivered, 1, None));
    assert_eq!(w.read(|tx| tx.work(items[0].id)), None);
    let d1 = delivery(items[1].id);
    let retry_at = now + Duration::minutes(5);
    assert_eq!(
        (d1.status, d1.attempts.len(), d1.next_attempt_at),
        (DeliveryStatus::Retrying, 1, Some(retry_at))
    );
    assert_eq!(d1.attempts[0].response_status, Some(503));
    let w1 = w.read(|tx| tx.work(items[1].id)).unwrap();
    assert_eq!((w1.due_at, w1.leased_until), (retry_at, None), "rescheduled, lease released");
    let d2 = delivery(items[2].id);
    assert_eq!((d2.status, d2.attempts.len()), (DeliveryStatus::Delivered, 1), "one attempt kept, not two");
    assert_eq!(w.read(|tx| tx.work(items[2].id)), None);
    assert_eq!(delivery(items[3].id).status, DeliveryStatus::Delivered);

    // A batch in which every lease was lost writes nothing.
    let stale = made(&items[1], 200);
    assert!(lost(&w.billing.engine().record_attempts(std::slice::from_ref(&stale))[0]));
    assert_eq!(delivery(items[1].id), d1, "unchanged");
    let deliveries = w.read(|tx| tx.list_webhook_deliveries(e.id, &Default::default(), 1, 10)).items;
    assert_eq!(deliveries.iter().map(|d| d.attempts.len()).sum::<usize>(), 4);
}
