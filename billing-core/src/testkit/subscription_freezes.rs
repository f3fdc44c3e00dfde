//! Freeze cases: a freeze on the sandbox clock (FROZEN while in force, ACTIVE after, the period
//! extended by the frozen time and the cycles re-anchored at the moved end, no invoice issued
//! during it), a period end inside a freeze (and exactly at its start) billed at the moved end,
//! update and delete of freezes in each state with their events, cancellation ending the
//! freezes, the transitions done once when several runners race, the list's paging and sorting,
//! and every refusal (statuses, past or inverted dates, overlaps, unknown ids, another branch)
//! writing nothing.

use super::invoices::consumer;
use super::subscriptions::{create, invoices_of, monthly, sub_body, sub_events, subscription_json};
use super::{expect_code, expect_invalid, ts, Harness, World};
use crate::clock::Timestamp;
use crate::error::Code;
use crate::event::EventType;
use crate::ids::{FreezeId, InvoiceId, SubscriptionId};
use crate::invoice::InvoiceStatus;
use crate::list::{ListQuery, QueryParams};
use crate::payment::{MarkPaid, PaymentMethod};
use crate::sandbox::Advance;
use crate::store::Store;
use crate::subscription::freeze::{parse_freeze_list, FREEZE_END_KIND, FREEZE_START_KIND};
use crate::subscription::*;
use chrono::Duration;
use serde_json::{json, Value};

fn pay<S: Store>(w: &World<S>, inv: InvoiceId) {
    let s = &w.fresh_admin();
    let (_, pays) = w.billing.invoices().get(s, inv).unwrap().into_parts();
    let req = MarkPaid {
        method: PaymentMethod::Cash,
        note: None,
    };
    w.billing.payments().mark_paid(s, pays[0].id, req).unwrap();
}

/// An ACTIVE monthly subscription (its first invoice paid) from `period_start`.
fn active<S: Store>(w: &World<S>, period_start: &str, card: bool) -> Subscription {
    let s = &w.admin;
    let c = consumer(w, s, false);
    if card {
        w.billing.payments().save_card(s, c.id, "4111111111111111", 12, 2035, true).unwrap();
    }
    let gym = monthly(w, s, "100.00");
    let sub = create(w, s, sub_body(c.id, &[(gym.id, 1)], period_start));
    pay(w, sub.latest_invoice_id.unwrap());
    w.billing.subscriptions().get(s, sub.id).unwrap().subscription
}

fn req(start: &str, end: Option<&str>) -> FreezeRequest {
    FreezeRequest {
        start: ts(start),
        end: end.map(ts),
        notes: None,
    }
}

fn org_now<S: Store>(w: &World<S>) -> Timestamp {
    w.fresh_admin().org.now(w.billing.engine().clock())
}

pub(crate) fn to<S: Store>(w: &World<S>, at: &str) {
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(ts(at))).unwrap();
}

pub(crate) fn get<S: Store>(w: &World<S>, id: SubscriptionId) -> Subscription {
    w.billing.subscriptions().get(&w.fresh_admin(), id).unwrap().subscription
}

fn starts<S: Store>(w: &World<S>, id: SubscriptionId) -> Vec<String> {
    invoices_of(w, id).iter().map(|(_, i)| i.scheduled_on.format("%Y-%m-%d").to_string()).collect()
}

/// The freeze-related events of a subscription, in order.
fn freeze_events<S: Store>(w: &World<S>, id: SubscriptionId) -> Vec<EventType> {
    use EventType::*;
    sub_events(w, id)
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                SubscriptionFrozen | SubscriptionFreezeNow | SubscriptionUnfreezeNow | SubscriptionUnfreezeFuture | SubscriptionFreezeCancel
            )
        })
        .collect()
}

fn listed<S: Store>(w: &World<S>, id: SubscriptionId, query: &str) -> Vec<Freeze> {
    let q = parse_freeze_list(&QueryParams::parse(query)).unwrap();
    w.billing.freezes().list(&w.fresh_admin(), id, &q).unwrap().items
}

/// Everything a refused freeze operation could have written.
fn everything<S: Store>(w: &World<S>, subs: &[SubscriptionId]) -> String {
    let s = &w.fresh_admin();
    let mut out = String::new();
    for id in subs {
        let sub = w.billing.subscriptions().get(s, *id).unwrap().subscription;
        let freezes = w.read(|tx| tx.subscription_freezes(*id));
        out.push_str(&format!("{sub:?}{freezes:?}"));
    }
    let events = w.read(|tx| tx.list_events(s.org_id()));
    let work = w.read(|tx| tx.work_queue_depths(ts("2000-01-01T00:00:00Z")));
    format!("{out}{events:?}{work:?}")
}

/// A freeze on the sandbox clock. A monthly subscription anchored on Jan 31, ACTIVE with a card:
/// a freeze from Feb 10 to Mar 13 (31 days) is SCHEDULED (SUBSCRIPTION_FROZEN), in force at its
/// start (FROZEN, SUBSCRIPTION_FREEZE_NOW), over at its end (ACTIVE,
/// SUBSCRIPTION_UNFREEZE_NOW). Cycle 1 (Jan 31 – Feb 28) is extended by the 31 days to Mar 31,
/// and the cycles are re-anchored there: cycle 2 from Mar 31, then Apr 30, May 31, Jun 30 (the
/// 31st kept, clamped in short months). No invoice is issued during the freeze; each cycle has
/// one invoice, charged to the card. SubscriptionDetailed shows the freeze as `latest_freeze`.
pub fn freeze_extends_the_period_and_reanchors<H: Harness>() {
    let w = World::new(H::store());
    let sub = active(&w, "2026-01-31T10:00:00Z", true);
    let mut r = req("2026-02-10T10:00:00Z", Some("2026-03-13T10:00:00Z"));
    r.notes = Some(Some("Travelling".into()));
    let f = w.billing.freezes().create(&w.fresh_admin(), sub.id, r).unwrap();
    assert_eq!(
        (f.state, f.subscription_id, f.invoice_id),
        (FreezeState::Scheduled, sub.id, sub.latest_invoice_id)
    );
    assert_eq!((f.duration_days(), f.notes.as_deref()), (Some(31), Some("Travelling")));
    assert_eq!(w.read(|tx| tx.freeze(sub.branch_id, f.id)), Some(f.clone()));
    assert_eq!(get(&w, sub.id).status, SubscriptionStatus::Active);
    assert_eq!(freeze_events(&w, sub.id), vec![EventType::SubscriptionFrozen]);
    let v = subscription_json(&w.billing, &w.fresh_admin(), sub.id).unwrap();
    assert_eq!(v["latest_freeze"]["id"], json!(f.id));
    assert_eq!(v["latest_freeze"]["status"], "SCHEDULED");

    to(&w, "2026-02-10T10:00:00Z");
    let got = get(&w, sub.id);
    assert_eq!(got.status, SubscriptionStatus::Frozen);
    assert_eq!(got.current_period_end, ts("2026-02-28T10:00:00Z"), "not moved while in force");
    assert_eq!(freeze_events(&w, sub.id), vec![EventType::SubscriptionFrozen, EventType::SubscriptionFreezeNow]);
    // The period end passes inside the freeze: nothing issued.
    to(&w, "2026-03-13T09:59:59Z");
    assert_eq!(invoices_of(&w, sub.id).len(), 1);
    assert_eq!(get(&w, sub.id).status, SubscriptionStatus::Frozen);

    to(&w, "2026-03-13T10:00:00Z");
    let got = get(&w, sub.id);
    assert_eq!(got.status, SubscriptionStatus::Active);
    assert_eq!((got.current_cycle_number, got.current_period_start), (1, ts("2026-01-31T10:00:00Z")));
    assert_eq!(got.current_period_end, ts("2026-03-31T10:00:00Z"), "Feb 28 + 31 days");
    assert_eq!(
        freeze_events(&w, sub.id),
        vec![
            EventType::SubscriptionFrozen,
            EventType::SubscriptionFreezeNow,
            EventType::SubscriptionUnfreezeNow
        ]
    );
    let ended = w.read(|tx| tx.freeze(sub.branch_id, f.id)).unwrap();
    assert_eq!((ended.state, ended.end), (FreezeState::Ended, Some(ts("2026-03-13T10:00:00Z"))));

    to(&w, "2026-06-30T10:00:00Z");
    assert_eq!(starts(&w, sub.id), ["2026-01-31", "2026-03-31", "2026-04-30", "2026-05-31", "2026-06-30"]);
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    for (_, inv) in &invs {
        assert_eq!(inv.status, InvoiceStatus::Completed);
        assert!(
            inv.created_at < ts("2026-02-10T10:00:00Z") || inv.created_at >= ts("2026-03-13T10:00:00Z"),
            "no invoice is issued during the freeze: {}",
            inv.created_at
        );
    }
    let got = get(&w, sub.id);
    assert_eq!((got.current_cycle_number, got.current_period_end), (5, ts("2026-07-31T10:00:00Z")));
    let v = subscription_json(&w.billing, &w.fresh_admin(), sub.id).unwrap();
    assert_eq!(v["latest_freeze"]["status"], "ENDED");
    assert_eq!(v["latest_freeze"]["duration"], 31);
    assert_eq!(v["latest_freeze"]["freeze_end_datetime"], "2026-03-13T10:00:00.000000Z");
    assert_eq!(v["latest_freeze"]["notes"], "Travelling");
    // The webhook payloads carry the freeze.
    let frozen = w
        .read(|tx| tx.list_events(w.admin.org_id()))
        .into_iter()
        .find(|e| e.event_type == EventType::SubscriptionFreezeNow)
        .unwrap();
    assert_eq!(frozen.payload["status"], "FROZEN");
    assert_eq!(frozen.payload["data"]["freeze"]["id"], json!(f.id));
}

/// A period end inside a freeze is billed when the freeze ends, at the moved end: a monthly
/// subscription from Jan 15 frozen Feb 10 – Mar 10 issues nothing on Feb 15; its period ends
/// Mar 15 (28 days later) and cycle 2 is billed then, cycle 3 on Apr 15. A freeze starting
/// exactly at the period end (the renewal and the freeze's start due at the same instant)
/// holds that renewal too: frozen Feb 15 – Feb 22, cycle 2 starts Feb 22.
pub fn a_period_end_inside_a_freeze_waits_for_its_end<H: Harness>() {
    let w = World::new(H::store());
    let a = active(&w, "2026-01-15T09:00:00Z", true);
    let b = active(&w, "2026-01-15T09:00:00Z", true);
    let s = &w.fresh_admin();
    w.billing
        .freezes()
        .create(s, a.id, req("2026-02-10T09:00:00Z", Some("2026-03-10T09:00:00Z")))
        .unwrap();
    w.billing
        .freezes()
        .create(s, b.id, req("2026-02-15T09:00:00Z", Some("2026-02-22T09:00:00Z")))
        .unwrap();
    to(&w, "2026-02-16T00:00:00Z");
    assert_eq!(invoices_of(&w, a.id).len(), 1);
    assert_eq!(invoices_of(&w, b.id).len(), 1, "the boundary at the freeze's start is held");
    assert_eq!(get(&w, a.id).status, SubscriptionStatus::Frozen);
    assert_eq!(get(&w, b.id).status, SubscriptionStatus::Frozen);
    to(&w, "2026-02-22T09:00:00Z");
    let got = get(&w, b.id);
    assert_eq!((got.status, got.current_cycle_number), (SubscriptionStatus::Active, 2));
    assert_eq!(
        (got.current_period_start, got.current_period_end),
        (ts("2026-02-22T09:00:00Z"), ts("2026-03-22T09:00:00Z"))
    );
    assert_eq!(starts(&w, b.id), ["2026-01-15", "2026-02-22"]);
    to(&w, "2026-03-10T09:00:00Z");
    let got = get(&w, a.id);
    assert_eq!((got.status, got.current_cycle_number), (SubscriptionStatus::Active, 1));
    assert_eq!(got.current_period_end, ts("2026-03-15T09:00:00Z"));
    assert_eq!(invoices_of(&w, a.id).len(), 1);
    to(&w, "2026-04-15T09:00:00Z");
    assert_eq!(starts(&w, a.id), ["2026-01-15", "2026-03-15", "2026-04-15"]);
    assert!(invoices_of(&w, a.id).iter().all(|(_, i)| i.status == InvoiceStatus::Completed));
    assert_eq!(starts(&w, b.id), ["2026-01-15", "2026-02-22", "2026-03-22"]);
}

/// Update and delete, in each state. Not started: new dates (SUBSCRIPTION_FROZEN; the old
/// start passes without effect), delete drops it (SUBSCRIPTION_FREEZE_CANCEL, no longer
/// listed). In force: a later end (SUBSCRIPTION_UNFREEZE_FUTURE), no end (SUBSCRIPTION_FROZEN;
/// it stays FROZEN past the old end), an end now (SUBSCRIPTION_UNFREEZE_NOW, the period
/// extended by the time frozen); a delete ends it now the same way and it stays listed as
/// ENDED. A different start of a freeze in force is a 422; an ended freeze cannot be updated or
/// deleted (400 INVALID_STATUS); none of the refusals writes anything.
pub fn update_and_delete_freezes<H: Harness>() {
    let w = World::new(H::store());
    let sub = active(&w, "2026-01-15T09:00:00Z", true);
    let s = &w.fresh_admin();
    // Not started: moved, then deleted.
    let f = w
        .billing
        .freezes()
        .create(s, sub.id, req("2026-01-20T09:00:00Z", Some("2026-01-25T09:00:00Z")))
        .unwrap();
    let moved = w
        .billing
        .freezes()
        .update(s, sub.id, f.id, req("2026-01-22T09:00:00Z", Some("2026-01-27T09:00:00Z")))
        .unwrap();
    assert_eq!(
        (moved.start, moved.end, moved.state),
        (ts("2026-01-22T09:00:00Z"), Some(ts("2026-01-27T09:00:00Z")), FreezeState::Scheduled)
    );
    to(&w, "2026-01-21T09:00:00Z");
    assert_eq!(get(&w, sub.id).status, SubscriptionStatus::Active, "the old start has no effect");
    w.billing.freezes().delete(&w.fresh_admin(), sub.id, f.id).unwrap();
    assert!(listed(&w, sub.id, "").is_empty());
    to(&w, "2026-01-28T09:00:00Z");
    assert_eq!(get(&w, sub.id).status, SubscriptionStatus::Active);
    assert_eq!(get(&w, sub.id).current_period_end, ts("2026-02-15T09:00:00Z"), "a dropped freeze moves nothing");
    assert_eq!(
        freeze_events(&w, sub.id),
        vec![
            EventType::SubscriptionFrozen,
            EventType::SubscriptionFrozen,
            EventType::SubscriptionFreezeCancel
        ]
    );
    let s = &w.fresh_admin();
    expect_code(w.billing.freezes().delete(s, sub.id, f.id), Code::NOT_FOUND);

    // In force: its end moved later, removed, then set to now.
    let g = w
        .billing
        .freezes()
        .create(s, sub.id, req("2026-01-29T09:00:00Z", Some("2026-01-31T09:00:00Z")))
        .unwrap();
    to(&w, "2026-01-30T09:00:00Z");
    let s = &w.fresh_admin();
    let later = w
        .billing
        .freezes()
        .update(s, sub.id, g.id, req("2026-01-29T09:00:00Z", Some("2026-02-05T09:00:00Z")))
        .unwrap();
    assert_eq!((later.state, later.end), (FreezeState::InForce, Some(ts("2026-02-05T09:00:00Z"))));
    let open = w.billing.freezes().update(s, sub.id, g.id, req("2026-01-29T09:00:00Z", None)).unwrap();
    assert_eq!(open.end, None);
    assert_eq!(open.duration_days(), None);
    // A different start, or an end in the past: 422, nothing written.
    let before = everything(&w, &[sub.id]);
    expect_invalid(
        w.billing.freezes().update(s, sub.id, g.id, req("2026-01-28T09:00:00Z", None)),
        "freeze_start_datetime",
    );
    expect_invalid(
        w.billing
            .freezes()
            .update(s, sub.id, g.id, req("2026-01-29T09:00:00Z", Some("2026-01-29T10:00:00Z"))),
        "freeze_end_datetime",
    );
    assert_eq!(everything(&w, &[sub.id]), before);
    to(&w, "2026-02-07T09:00:00Z");
    assert_eq!(get(&w, sub.id).status, SubscriptionStatus::Frozen, "no end: still frozen past the old end");
    assert_eq!(invoices_of(&w, sub.id).len(), 1);
    let s = &w.fresh_admin();
    let now = org_now(&w);
    let ended = w
        .billing
        .freezes()
        .update(
            s,
            sub.id,
            g.id,
            FreezeRequest {
                start: ts("2026-01-29T09:00:00Z"),
                end: Some(now),
                notes: Some(Some("back".into())),
            },
        )
        .unwrap();
    assert_eq!((ended.state, ended.end, ended.notes.as_deref()), (FreezeState::Ended, Some(now), Some("back")));
    let got = get(&w, sub.id);
    assert_eq!(got.status, SubscriptionStatus::Active);
    // Frozen Jan 29 09:00 → Feb 7 09:00: 9 days.
    assert_eq!(got.current_period_end, ts("2026-02-24T09:00:00Z"));
    assert_eq!(
        freeze_events(&w, sub.id)[3..],
        [
            EventType::SubscriptionFrozen,
            EventType::SubscriptionFreezeNow,
            EventType::SubscriptionUnfreezeFuture,
            EventType::SubscriptionFrozen,
            EventType::SubscriptionUnfreezeNow
        ]
    );
    let before = everything(&w, &[sub.id]);
    expect_code(
        w.billing.freezes().update(s, sub.id, g.id, req("2026-02-10T09:00:00Z", None)),
        Code::INVALID_STATUS,
    );
    expect_code(w.billing.freezes().delete(s, sub.id, g.id), Code::INVALID_STATUS);
    assert_eq!(everything(&w, &[sub.id]), before);

    // Delete of a freeze in force: it ends now, stays listed as ENDED.
    let h = w
        .billing
        .freezes()
        .create(s, sub.id, req("2026-02-10T09:00:00Z", Some("2026-03-10T09:00:00Z")))
        .unwrap();
    to(&w, "2026-02-13T09:00:00Z");
    w.billing.freezes().delete(&w.fresh_admin(), sub.id, h.id).unwrap();
    let got = get(&w, sub.id);
    assert_eq!(got.status, SubscriptionStatus::Active);
    assert_eq!(got.current_period_end, ts("2026-02-27T09:00:00Z"), "Feb 24 + the 3 days frozen");
    assert_eq!(sub_events(&w, sub.id).last(), Some(&EventType::SubscriptionUnfreezeNow));
    let all = listed(&w, sub.id, "sort_field=freeze_start_datetime&sort_direction=asc");
    assert_eq!(
        all.iter().map(|f| (f.id, f.state)).collect::<Vec<_>>(),
        vec![(g.id, FreezeState::Ended), (h.id, FreezeState::Ended)]
    );
    assert_eq!(all[1].end, Some(ts("2026-02-13T09:00:00Z")));
    // Renewal resumes at the moved end, the cycles re-anchored there.
    to(&w, "2026-03-27T09:00:00Z");
    assert_eq!(starts(&w, sub.id), ["2026-01-15", "2026-02-27", "2026-03-27"]);
}

/// Refusals, each writing nothing: a subscription that is not ACTIVE or FROZEN (INACTIVE,
/// CANCELED: 400 INVALID_STATUS); a start in the past beyond the grace, more than 3650 days
/// ahead, an end at or before the start, or more than 3650 days after it (422 at the field); an
/// overlap with another freeze, an open-ended one among them (400 FREEZE_OVERLAP); unknown
/// subscription or freeze, or another subscription's freeze, or another branch (404). A start
/// within the grace means now (in force at once); freezes that touch do not overlap.
pub fn freeze_refusals_write_nothing<H: Harness>() {
    let w = World::new(H::store());
    let sub = active(&w, "2026-01-15T09:00:00Z", false);
    let other = active(&w, "2026-01-15T09:00:00Z", false);
    let s = &w.fresh_admin();
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "10.00");
    let inactive = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-02-01T00:00:00Z"));
    let canceled = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-02-01T00:00:00Z"));
    w.billing.subscriptions().cancel(s, canceled.id, SubscriptionCancel::default()).unwrap();
    let f = w
        .billing
        .freezes()
        .create(s, sub.id, req("2026-02-01T00:00:00Z", Some("2026-02-10T00:00:00Z")))
        .unwrap();
    let ids = [sub.id, other.id, inactive.id, canceled.id];
    let before = everything(&w, &ids);
    let later = Some("2026-03-01T00:00:00Z");
    expect_code(
        w.billing.freezes().create(s, inactive.id, req("2026-02-20T00:00:00Z", later)),
        Code::INVALID_STATUS,
    );
    expect_code(
        w.billing.freezes().create(s, canceled.id, req("2026-02-20T00:00:00Z", later)),
        Code::INVALID_STATUS,
    );
    expect_invalid(
        w.billing.freezes().create(s, sub.id, req("2026-01-15T08:54:00Z", later)),
        "freeze_start_datetime",
    );
    expect_invalid(
        w.billing.freezes().create(s, sub.id, req("2036-02-01T00:00:00Z", None)),
        "freeze_start_datetime",
    );
    expect_invalid(
        w.billing.freezes().create(s, sub.id, req("2026-03-01T00:00:00Z", Some("2036-03-01T00:00:00Z"))),
        "freeze_end_datetime",
    );
    // Within the grace the start is now, so an end a minute ago is before it.
    expect_invalid(
        w.billing.freezes().create(s, sub.id, req("2026-01-15T08:58:00Z", Some("2026-01-15T08:59:00Z"))),
        "freeze_end_datetime",
    );
    for (a, b) in [
        ("2026-01-25T00:00:00Z", Some("2026-02-01T00:00:01Z")),
        ("2026-02-05T00:00:00Z", Some("2026-02-06T00:00:00Z")),
        ("2026-01-25T00:00:00Z", Some("2026-03-01T00:00:00Z")),
        ("2026-01-25T00:00:00Z", None),
    ] {
        expect_code(w.billing.freezes().create(s, sub.id, req(a, b)), Code::FREEZE_OVERLAP);
    }
    expect_code(
        w.billing.freezes().create(s, SubscriptionId::new(), req("2026-02-20T00:00:00Z", later)),
        Code::NOT_FOUND,
    );
    expect_code(
        w.billing.freezes().update(s, sub.id, FreezeId::new(), req("2026-02-20T00:00:00Z", later)),
        Code::NOT_FOUND,
    );
    expect_code(
        w.billing.freezes().update(s, other.id, f.id, req("2026-02-20T00:00:00Z", later)),
        Code::NOT_FOUND,
    );
    expect_code(w.billing.freezes().delete(s, other.id, f.id), Code::NOT_FOUND);
    expect_code(
        w.billing.freezes().list(s, SubscriptionId::new(), &ListQuery::new(FreezeSort::CreatedAt)),
        Code::NOT_FOUND,
    );
    // Another branch sees neither the subscription nor its freezes.
    let b = w.in_branch(w.new_branch("Other").id);
    expect_code(w.billing.freezes().create(&b, sub.id, req("2026-02-20T00:00:00Z", later)), Code::NOT_FOUND);
    expect_code(w.billing.freezes().delete(&b, sub.id, f.id), Code::NOT_FOUND);
    expect_code(w.billing.freezes().list(&b, sub.id, &ListQuery::new(FreezeSort::CreatedAt)), Code::NOT_FOUND);
    assert_eq!(everything(&w, &ids), before);
    // Moving the freeze onto another one overlaps too.
    let g = w
        .billing
        .freezes()
        .create(s, sub.id, req("2026-02-10T00:00:00Z", Some("2026-02-12T00:00:00Z")))
        .unwrap();
    let before_g = everything(&w, &ids);
    expect_code(
        w.billing
            .freezes()
            .update(s, sub.id, g.id, req("2026-02-09T00:00:00Z", Some("2026-02-12T00:00:00Z"))),
        Code::FREEZE_OVERLAP,
    );
    expect_code(
        w.billing.freezes().update(s, sub.id, f.id, req("2026-02-01T00:00:00Z", None)),
        Code::FREEZE_OVERLAP,
    );
    assert_eq!(everything(&w, &ids), before_g);
    w.billing.freezes().delete(s, sub.id, g.id).unwrap();
    // A start within the grace is now: in force at once.
    let now = org_now(&w);
    let h = w
        .billing
        .freezes()
        .create(
            &w.fresh_admin(),
            other.id,
            FreezeRequest {
                start: now - Duration::minutes(4),
                end: Some(now + Duration::days(1)),
                notes: None,
            },
        )
        .unwrap();
    assert_eq!((h.state, h.start), (FreezeState::InForce, now));
    assert_eq!(get(&w, other.id).status, SubscriptionStatus::Frozen);
    assert_eq!(
        freeze_events(&w, other.id),
        vec![EventType::SubscriptionFrozen, EventType::SubscriptionFreezeNow]
    );
    // A FROZEN subscription takes a later freeze that does not overlap.
    w.billing
        .freezes()
        .create(&w.fresh_admin(), other.id, req("2026-01-17T09:00:00Z", Some("2026-01-18T09:00:00Z")))
        .unwrap();
}

/// Cancel of a FROZEN subscription: CANCELED now; the freeze in force ends then (ENDED, without
/// moving anything) and a freeze not started is dropped; no freeze event follows and nothing is
/// issued. A scheduled cancellation of an ACTIVE subscription takes effect at the period end
/// moved by a freeze.
pub fn cancel_ends_the_freezes<H: Harness>() {
    let w = World::new(H::store());
    let sub = active(&w, "2026-01-15T09:00:00Z", false);
    let s = &w.fresh_admin();
    let f = w
        .billing
        .freezes()
        .create(s, sub.id, req("2026-01-20T09:00:00Z", Some("2026-01-30T09:00:00Z")))
        .unwrap();
    let g = w.billing.freezes().create(s, sub.id, req("2026-03-01T09:00:00Z", None)).unwrap();
    to(&w, "2026-01-21T09:00:00Z");
    let got = w
        .billing
        .subscriptions()
        .cancel(&w.fresh_admin(), sub.id, SubscriptionCancel::default())
        .unwrap()
        .subscription;
    assert_eq!(got.status, SubscriptionStatus::Canceled);
    let all = listed(&w, sub.id, "sort_direction=asc");
    assert_eq!(all.len(), 1, "the freeze not started is dropped");
    assert_eq!(
        (all[0].id, all[0].state, all[0].end),
        (f.id, FreezeState::Ended, Some(ts("2026-01-21T09:00:00Z")))
    );
    assert_eq!(
        w.read(|tx| tx.freeze(sub.branch_id, g.id)).unwrap().deleted_at,
        Some(ts("2026-01-21T09:00:00Z"))
    );
    let events = sub_events(&w, sub.id).len();
    to(&w, "2026-04-01T00:00:00Z");
    assert_eq!(sub_events(&w, sub.id).len(), events);
    assert_eq!(invoices_of(&w, sub.id).len(), 1);
    assert_eq!(get(&w, sub.id).status, SubscriptionStatus::Canceled);

    // Canceled at the period end, frozen 5 days before it: it ends 5 days later.
    let other = active(&w, "2026-04-01T00:00:00Z", false);
    let s = &w.fresh_admin();
    w.billing.subscriptions().cancel(s, other.id, SubscriptionCancel::default()).unwrap();
    w.billing
        .freezes()
        .create(s, other.id, req("2026-04-10T00:00:00Z", Some("2026-04-15T00:00:00Z")))
        .unwrap();
    to(&w, "2026-05-05T00:00:00Z");
    assert_eq!(get(&w, other.id).status, SubscriptionStatus::Active);
    to(&w, "2026-05-06T00:00:00Z");
    let got = get(&w, other.id);
    assert_eq!((got.status, got.ended_at), (SubscriptionStatus::Canceled, Some(ts("2026-05-06T00:00:00Z"))));
    assert_eq!(invoices_of(&w, other.id).len(), 1);
}

/// The start and end of a freeze are done once: three runners racing over the due items make
/// one SUBSCRIPTION_FREEZE_NOW and one SUBSCRIPTION_UNFREEZE_NOW, and move the period once.
/// Operations apply transitions already due before they act (a GET-free catch-up): an update
/// after the start is due but before it ran sees the freeze in force.
pub fn freeze_transitions_run_once<H: Harness>() {
    let w = World::new(H::store());
    let sub = active(&w, "2026-01-15T09:00:00Z", false);
    let s = &w.fresh_admin();
    w.billing
        .freezes()
        .create(s, sub.id, req("2026-01-20T09:00:00Z", Some("2026-01-25T09:00:00Z")))
        .unwrap();
    // Make both due without running anything: move the organization's clock by hand.
    let mut org = w.read(|tx| tx.org(s.org_id())).unwrap();
    org.clock_offset_us = Duration::days(12).num_microseconds().unwrap();
    w.write(|tx| tx.update_org(&org));
    std::thread::scope(|t| {
        let hs: Vec<_> = (0..3)
            .map(|_| t.spawn(|| w.billing.engine().run_due_work(Some(s.org_id()), 100).unwrap()))
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    assert_eq!(
        freeze_events(&w, sub.id),
        vec![
            EventType::SubscriptionFrozen,
            EventType::SubscriptionFreezeNow,
            EventType::SubscriptionUnfreezeNow
        ]
    );
    let got = get(&w, sub.id);
    assert_eq!((got.status, got.current_period_end), (SubscriptionStatus::Active, ts("2026-02-20T09:00:00Z")));
    let left = w.write(|tx| {
        tx.claim_due_work(
            Some(s.org_id()),
            &[FREEZE_START_KIND, FREEZE_END_KIND],
            ts("2100-01-01T00:00:00Z"),
            ts("2100-01-01T00:01:00Z"),
            100,
        )
    });
    assert!(left.is_empty(), "{left:?}");

    // Catch-up: the start is due (the clock moved by hand), no runner ran it; the update sees
    // the freeze in force, so its start cannot change.
    let s = &w.fresh_admin();
    let f = w
        .billing
        .freezes()
        .create(s, sub.id, req("2026-01-28T09:00:00Z", Some("2026-01-29T09:00:00Z")))
        .unwrap();
    let mut org = w.read(|tx| tx.org(s.org_id())).unwrap();
    org.clock_offset_us = Duration::days(13).num_microseconds().unwrap();
    w.write(|tx| tx.update_org(&org));
    let s = &w.fresh_admin();
    expect_invalid(
        w.billing.freezes().update(s, sub.id, f.id, req("2026-01-28T10:00:00Z", None)),
        "freeze_start_datetime",
    );
    let got = w
        .billing
        .freezes()
        .update(s, sub.id, f.id, req("2026-01-28T09:00:00Z", Some("2026-01-30T09:00:00Z")))
        .unwrap();
    assert_eq!(got.state, FreezeState::InForce);
    assert_eq!(get(&w, sub.id).status, SubscriptionStatus::Frozen);
}

/// The list: default `created_at` descending, sorting by the freeze's dates, paging; a bad
/// sort field is a 422.
pub fn freeze_list_pages_and_sorts<H: Harness>() {
    let w = World::new(H::store());
    let sub = active(&w, "2026-01-15T09:00:00Z", false);
    let mut made = vec![];
    for (a, b) in [
        ("2026-03-01T00:00:00Z", Some("2026-03-02T00:00:00Z")),
        ("2026-02-01T00:00:00Z", Some("2026-02-05T00:00:00Z")),
        ("2026-04-01T00:00:00Z", None),
    ] {
        made.push(w.billing.freezes().create(&w.fresh_admin(), sub.id, req(a, b)).unwrap().id);
        w.tick(1);
    }
    let ids = |q: &str| listed(&w, sub.id, q).iter().map(|f| f.id).collect::<Vec<_>>();
    assert_eq!(ids(""), vec![made[2], made[1], made[0]]);
    assert_eq!(ids("sort_field=freeze_start_datetime&sort_direction=asc"), vec![made[1], made[0], made[2]]);
    // A missing end sorts first ascending, last descending.
    assert_eq!(ids("sort_field=freeze_end_datetime&sort_direction=asc"), vec![made[2], made[1], made[0]]);
    assert_eq!(ids("sort_field=freeze_end_datetime"), vec![made[0], made[1], made[2]]);
    assert_eq!(ids("limit=2&page=2"), vec![made[0]]);
    let q = parse_freeze_list(&QueryParams::parse("limit=2")).unwrap();
    let page = w.billing.freezes().list(&w.fresh_admin(), sub.id, &q).unwrap();
    assert_eq!((page.total, page.items.len()), (3, 2));
    assert!(parse_freeze_list(&QueryParams::parse("sort_field=notes")).is_err());
    let v: Value = serde_json::to_value(listed(&w, sub.id, "")[0].view()).unwrap();
    for k in [
        "created_at",
        "updated_at",
        "id",
        "freeze_start_datetime",
        "freeze_end_datetime",
        "notes",
        "subscription_id",
        "invoice_id",
        "duration",
    ] {
        assert!(v.get(k).is_some(), "FreezeSubscriptionBase lacks {k}: {v}");
    }
}

/// Every stored field of a freeze and a trial round-trips; an update replaces the freeze's
/// fields; deleted freezes are not among a subscription's.
pub fn freeze_and_trial_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let sub = active(&w, "2026-01-15T09:00:00Z", false);
    let mut f = Freeze {
        id: FreezeId::new(),
        org_id: sub.org_id,
        branch_id: sub.branch_id,
        subscription_id: sub.id,
        start: ts("2026-02-01T00:00:00.000001Z"),
        end: None,
        notes: Some("ملاحظة".into()),
        invoice_id: sub.latest_invoice_id,
        state: FreezeState::Scheduled,
        deleted_at: None,
        created_at: ts("2026-01-15T09:00:00Z"),
        updated_at: None,
    };
    w.write(|tx| tx.insert_freeze(&f));
    assert_eq!(w.read(|tx| tx.freeze(sub.branch_id, f.id)), Some(f.clone()));
    f.end = Some(ts("2026-02-03T00:00:00Z"));
    f.state = FreezeState::Ended;
    f.notes = None;
    f.invoice_id = None;
    f.updated_at = Some(ts("2026-02-03T00:00:00Z"));
    w.write(|tx| tx.update_freeze(&f));
    assert_eq!(w.read(|tx| tx.subscription_freezes(sub.id)), vec![f.clone()]);
    f.deleted_at = Some(ts("2026-02-04T00:00:00Z"));
    w.write(|tx| tx.update_freeze(&f));
    assert_eq!(w.read(|tx| tx.freeze(sub.branch_id, f.id)), Some(f.clone()));
    assert!(w.read(|tx| tx.subscription_freezes(sub.id)).is_empty());
    let other = w.new_branch("Other");
    assert_eq!(w.read(|tx| tx.freeze(other.id, f.id)), None);
    let t = Trial {
        subscription_id: sub.id,
        start: ts("2026-01-15T09:00:00.123456Z"),
        end: ts("2026-02-15T09:00:00Z"),
    };
    w.write(|tx| tx.insert_trial(&t));
    assert_eq!(w.read(|tx| tx.subscription_trial(sub.id)), Some(t));
    assert_eq!(w.read(|tx| tx.subscription_trial(SubscriptionId::new())), None);
    // The anchor's cycle round-trips with the subscription.
    let mut s2 = get(&w, sub.id);
    s2.anchor_cycle = 7;
    s2.period_anchor = ts("2026-07-01T00:00:00Z");
    w.write(|tx| tx.update_subscription(&s2));
    assert_eq!(get(&w, sub.id), s2);
}

/// A freeze and the next invoice prepared ahead (a lead time of 5 days). A monthly subscription
/// from Jan 31 has cycle 2's invoice prepared on Feb 23 for Feb 28; a freeze from Feb 25 to
/// Mar 4 (7 days) moves the period end to Mar 7, so that invoice is voided when the freeze is
/// made, and cycle 2's invoice is prepared again for Mar 7 once the freeze is over. Another
/// subscription, frozen the same way before its preparation time, is not prepared for the old
/// end at all. Each cycle has one live invoice, due at its (moved) start, charged once.
pub fn freeze_moves_a_prepared_invoice<H: Harness>() {
    let w = World::new(H::store());
    w.billing
        .org()
        .update_settings(
            &w.admin,
            &crate::org::settings::SettingsPatch::parse(&json!({"subscription_invoice_lead_days": 5})).unwrap(),
        )
        .unwrap();
    let early = active(&w, "2026-01-31T10:00:00Z", true);
    let late = active(&w, "2026-01-31T10:00:00Z", true);
    let (freeze_start, freeze_end) = ("2026-02-25T10:00:00Z", "2026-03-04T10:00:00Z");
    // Frozen before its preparation time: nothing is prepared for Feb 28.
    w.billing
        .freezes()
        .create(&w.fresh_admin(), early.id, req(freeze_start, Some(freeze_end)))
        .unwrap();
    to(&w, "2026-02-24T10:00:00Z");
    assert_eq!(starts(&w, early.id), ["2026-01-31"]);
    let prepared = invoices_of(&w, late.id);
    assert_eq!(starts(&w, late.id), ["2026-01-31", "2026-02-28"], "prepared 5 days ahead");
    let stale = prepared[1].1.id;
    // Frozen after: the invoice prepared for Feb 28 is voided, its cycle freed.
    w.billing
        .freezes()
        .create(&w.fresh_admin(), late.id, req(freeze_start, Some(freeze_end)))
        .unwrap();
    assert_eq!(starts(&w, late.id), ["2026-01-31"]);
    let (voided, _) = w.billing.invoices().get(&w.fresh_admin(), stale).unwrap().into_parts();
    assert_eq!(voided.status, InvoiceStatus::Canceled);
    // The freeze over, cycle 2 starts on Mar 7, its invoice prepared for it and charged then.
    to(&w, "2026-03-05T10:00:00Z");
    for id in [early.id, late.id] {
        assert_eq!(get(&w, id).current_period_end, ts("2026-03-07T10:00:00Z"));
        assert_eq!(starts(&w, id), ["2026-01-31", "2026-03-07"], "prepared again for the moved end");
    }
    to(&w, "2026-03-08T10:00:00Z");
    for id in [early.id, late.id] {
        let invs = invoices_of(&w, id);
        assert_eq!(invs.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(invs[1].1.status, InvoiceStatus::Completed);
        assert_eq!(get(&w, id).current_cycle_number, 2);
    }
}

/// A freeze scheduled while ACTIVE comes into force while the subscription is INACTIVE (a
/// declined renewal, retries over); paying the overdue invoice then activates it into the
/// freeze: FROZEN (SUBSCRIPTION_ACTIVATED, then SUBSCRIPTION_FREEZE_NOW), not ACTIVE with a
/// period that would end inside the freeze and never renew. Deleting the freeze makes it ACTIVE
/// and it renews at the period end moved by the frozen time.
pub fn paying_into_a_freeze_in_force_is_frozen<H: Harness>() {
    let w = World::new(H::store());
    let patch = crate::org::settings::SettingsPatch::parse(&json!({"subscription_renewal_retry_days": [1]})).unwrap();
    w.billing.org().update_settings(&w.admin, &patch).unwrap();
    // No card: the renewal on Feb 15 fails, the retry on Feb 16 too: INACTIVE.
    let sub = active(&w, "2026-01-15T09:00:00Z", false);
    let f = w.billing.freezes().create(&w.fresh_admin(), sub.id, req("2026-02-20T09:00:00Z", None)).unwrap();
    to(&w, "2026-02-21T09:00:00Z");
    let got = get(&w, sub.id);
    assert_eq!((got.status, got.current_cycle_number), (SubscriptionStatus::Inactive, 2));
    pay(&w, got.latest_invoice_id.unwrap());
    let got = get(&w, sub.id);
    assert_eq!(got.status, SubscriptionStatus::Frozen, "paid while a freeze is in force");
    let evs = freeze_events(&w, sub.id);
    assert_eq!(evs.last(), Some(&EventType::SubscriptionFreezeNow), "{evs:?}");
    let all = sub_events(&w, sub.id);
    assert_eq!(&all[all.len() - 2..], &[EventType::SubscriptionActivated, EventType::SubscriptionFreezeNow]);
    // Nothing renews inside the freeze, however long.
    to(&w, "2026-04-01T09:00:00Z");
    assert_eq!((get(&w, sub.id).status, invoices_of(&w, sub.id).len()), (SubscriptionStatus::Frozen, 2));
    w.billing.freezes().delete(&w.fresh_admin(), sub.id, f.id).unwrap();
    let got = get(&w, sub.id);
    // Frozen from Feb 20 to Apr 1 (40 days): the period ending Mar 15 ends Apr 24.
    assert_eq!((got.status, got.current_period_end), (SubscriptionStatus::Active, ts("2026-04-24T09:00:00Z")));
    to(&w, "2026-04-24T09:00:01Z");
    let got = get(&w, sub.id);
    assert_eq!((got.current_cycle_number, invoices_of(&w, sub.id).len()), (3, 3));
}

/// A freeze starting exactly at the period end holds the renewal there (the boundary is inside
/// it), so it moves the period end as one starting earlier does: no next-cycle invoice is
/// prepared for the old end while it is scheduled, and one already prepared is voided when it is
/// made. Its end prepares the invoice for the moved end.
pub fn freeze_starting_at_the_period_end_moves_it<H: Harness>() {
    let w = World::new(H::store());
    let patch = crate::org::settings::SettingsPatch::parse(&json!({"subscription_invoice_lead_days": 3})).unwrap();
    w.billing.org().update_settings(&w.admin, &patch).unwrap();
    let early = active(&w, "2026-01-15T09:00:00Z", true);
    let late = active(&w, "2026-01-15T09:00:00Z", true);
    // Made before the preparation time (Feb 12): nothing is prepared for Feb 15.
    w.billing
        .freezes()
        .create(&w.fresh_admin(), early.id, req("2026-02-15T09:00:00Z", Some("2026-03-01T09:00:00Z")))
        .unwrap();
    to(&w, "2026-02-13T00:00:00Z");
    assert_eq!(invoices_of(&w, early.id).len(), 1, "no invoice prepared for a period end inside a freeze");
    // Made after it: the invoice prepared for Feb 15 is voided.
    let prepared = invoices_of(&w, late.id);
    assert_eq!(prepared.len(), 2);
    w.billing
        .freezes()
        .create(&w.fresh_admin(), late.id, req("2026-02-15T09:00:00Z", Some("2026-03-01T09:00:00Z")))
        .unwrap();
    assert_eq!(invoices_of(&w, late.id).len(), 1);
    let s = &w.fresh_admin();
    assert_eq!(w.billing.invoices().get(s, prepared[1].1.id).unwrap().invoice.status, InvoiceStatus::Canceled);
    // Frozen 14 days, from the period end: the renewal happens at the moved end, Mar 1, and
    // cycle 2 is billed from there.
    to(&w, "2026-02-28T00:00:00Z");
    assert_eq!((invoices_of(&w, early.id).len(), invoices_of(&w, late.id).len()), (1, 1));
    to(&w, "2026-03-01T09:00:01Z");
    for id in [early.id, late.id] {
        let got = get(&w, id);
        assert_eq!(
            (got.status, got.current_cycle_number, got.current_period_start),
            (SubscriptionStatus::Active, 2, ts("2026-03-01T09:00:00Z"))
        );
        let invs = invoices_of(&w, id);
        assert_eq!(invs.len(), 2, "{invs:?}");
        assert_eq!(invs[1].1.scheduled_on, ts("2026-03-01T09:00:00Z"));
    }
}
