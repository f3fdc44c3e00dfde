//! Trial cases: TRIALING until `period_start` with no invoice, then cycle 1's invoice charged to
//! the card (ACTIVE) and the renewals after it on `period_start`'s calendar; without a card
//! TRIAL_PENDING, the failed charge retried then INACTIVE, or paid by hand (ACTIVE); without
//! auto-renewal TRIAL_PENDING until paid; a zero total ACTIVE at the trial's end; cancel of a
//! trial (TRIALING, TRIAL_PENDING) CANCELED at once; and the refusals (a `period_start` not in
//! the future, too far ahead, a trial frozen or uncanceled) writing nothing.

use super::invoices::{consumer, coupon};
use super::subscription_freezes::{get, to};
use super::subscriptions::{invoices_of, list_json, monthly, sub_body, sub_events, subscription_json, try_create};
use super::{expect_code, expect_invalid, ts, Harness, World};
use crate::error::Code;
use crate::event::EventType;
use crate::ids::{ConsumerId, ProductId};
use crate::invoice::InvoiceStatus;
use crate::payment::{MarkPaid, PaymentMethod, PaymentStatus};
use crate::sandbox::Advance;
use crate::store::Store;
use crate::subscription::*;
use chrono::Duration;
use serde_json::{json, Value};

fn trial_body(c: ConsumerId, p: ProductId, period_start: &str) -> Value {
    let mut body = sub_body(c, &[(p, 1)], period_start);
    body["trial"] = json!(true);
    body
}

fn everything<S: Store>(w: &World<S>) -> String {
    let s = &w.fresh_admin();
    let req = parse_subscription_list(&crate::list::QueryParams::parse("limit=100")).unwrap();
    let subs = list_json(&w.billing, s, &req).unwrap().items;
    let events = w.read(|tx| tx.list_events(s.org_id()));
    let work = w.read(|tx| tx.work_queue_depths(ts("2000-01-01T00:00:00Z")));
    format!("{subs:?}{events:?}{work:?}")
}

/// A trial with a card on file: created TRIALING in cycle 0 from now to `period_start`, no
/// invoice (SUBSCRIPTION_CREATED only), `trial_end` and `trial_period_days` shown. At
/// `period_start`: cycle 1's invoice, charged to the card (INVOICE_CREATED, PAYMENT_SUCCEEDED,
/// INVOICE_COMPLETED), the subscription ACTIVE (SUBSCRIPTION_ACTIVATED); a month later cycle 2.
pub fn trial_then_the_first_paid_cycle<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    w.billing.payments().save_card(s, c.id, "4111111111111111", 12, 2035, true).unwrap();
    // From Jan 15 09:00 to Jan 29 21:00: 14.5 days, shown as 15.
    let body = trial_body(c.id, monthly(&w, s, "100.00").id, "2026-01-29T21:00:00Z");
    let sub = try_create(&w, s, &body).unwrap();
    assert_eq!((sub.status, sub.current_cycle_number), (SubscriptionStatus::Trialing, 0));
    assert_eq!(
        (sub.current_period_start, sub.current_period_end),
        (ts("2026-01-15T09:00:00Z"), ts("2026-01-29T21:00:00Z"))
    );
    assert_eq!((sub.latest_invoice_id, sub.started_at), (None, None));
    assert!(invoices_of(&w, sub.id).is_empty());
    assert_eq!(sub_events(&w, sub.id), vec![EventType::SubscriptionCreated]);
    assert_eq!(get(&w, sub.id), sub);
    let v = subscription_json(&w.billing, s, sub.id).unwrap();
    assert_eq!(v["status"], "TRIALING");
    assert_eq!(v["trial_end"], "2026-01-29T21:00:00.000000Z");
    assert_eq!(v["trial_period_days"], 15);
    assert_eq!(v["remaining_days"], 15);
    assert_eq!(v["latest_invoice"], Value::Null);
    assert_eq!(v["latest_freeze"], Value::Null);

    to(&w, "2026-01-29T20:59:59Z");
    assert_eq!(get(&w, sub.id).status, SubscriptionStatus::Trialing);
    to(&w, "2026-01-29T21:00:00Z");
    let got = get(&w, sub.id);
    assert_eq!((got.status, got.current_cycle_number), (SubscriptionStatus::Active, 1));
    assert_eq!(
        (got.current_period_start, got.current_period_end),
        (ts("2026-01-29T21:00:00Z"), ts("2026-02-28T21:00:00Z"))
    );
    assert_eq!(got.started_at, Some(ts("2026-01-29T21:00:00Z")));
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.len(), 1);
    let (n, inv) = &invs[0];
    assert_eq!((*n, inv.status, inv.scheduled_on), (1, InvoiceStatus::Completed, ts("2026-01-29T21:00:00Z")));
    assert_eq!(inv.total_amount, sub.amount);
    let pay = w.billing.invoices().get(s, inv.id).unwrap().payments[0].id;
    let seq: Vec<EventType> = w
        .read(|tx| tx.list_events(s.org_id()))
        .into_iter()
        .filter(|e| e.entity_id == inv.id.0 || e.entity_id == pay.0)
        .map(|e| e.event_type)
        .collect();
    assert_eq!(seq, vec![EventType::InvoiceCreated, EventType::PaymentSucceeded, EventType::InvoiceCompleted]);
    assert_eq!(sub_events(&w, sub.id), vec![EventType::SubscriptionCreated, EventType::SubscriptionActivated]);
    let v = subscription_json(&w.billing, &w.fresh_admin(), sub.id).unwrap();
    assert_eq!(
        (v["trial_end"].as_str(), v["trial_period_days"].as_i64()),
        (Some("2026-01-29T21:00:00.000000Z"), Some(15))
    );
    // Renewals go on from period_start's calendar.
    to(&w, "2026-03-29T21:00:00Z");
    let starts: Vec<String> = invoices_of(&w, sub.id)
        .iter()
        .map(|(_, i)| i.scheduled_on.format("%Y-%m-%d").to_string())
        .collect();
    assert_eq!(starts, ["2026-01-29", "2026-02-28", "2026-03-29"]);
}

/// The trial ends without a way to collect: no card (TRIAL_PENDING, the charge fails and is
/// retried; after the last retry INACTIVE with SUBSCRIPTION_INACTIVATED), or paid by hand while
/// TRIAL_PENDING (ACTIVE); without auto-renewal TRIAL_PENDING with no charge until it is paid.
/// A trial whose total is zero is ACTIVE at its end (its invoice settled at once).
pub fn trial_pending_until_paid<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00").id;
    let lapse = try_create(&w, s, &trial_body(c.id, gym, "2026-02-01T00:00:00Z")).unwrap();
    let paid = try_create(&w, s, &trial_body(c.id, gym, "2026-02-01T00:00:00Z")).unwrap();
    let mut manual = trial_body(c.id, gym, "2026-02-01T00:00:00Z");
    manual["override_payment_methods"] = json!({"subscription_auto_renewal": false});
    let manual = try_create(&w, s, &manual).unwrap();
    let mut free = trial_body(c.id, monthly(&w, s, "50.00").id, "2026-02-01T00:00:00Z");
    let all_off = coupon(&w, s, json!({"name": "ALL", "discount_value": 100, "is_percentage": true}));
    free["coupons"] = json!([all_off.id]);
    let free = try_create(&w, s, &free).unwrap();
    assert_eq!(free.amount.minor_units(), 0);

    to(&w, "2026-02-01T00:00:01Z");
    for id in [lapse.id, paid.id, manual.id] {
        let got = get(&w, id);
        assert_eq!((got.status, got.current_cycle_number), (SubscriptionStatus::TrialPending, 1), "{id}");
        assert_eq!(invoices_of(&w, id).len(), 1);
        assert!(!got.latest_invoice_paid);
    }
    let failed = |id| sub_events(&w, id).iter().filter(|e| **e == EventType::SubscriptionCycleRenewalFailed).count();
    assert_eq!((failed(lapse.id), failed(manual.id)), (1, 0));
    let payload = w
        .read(|tx| tx.list_events(s.org_id()))
        .into_iter()
        .find(|e| e.entity_id == lapse.id.0 && e.event_type == EventType::SubscriptionCycleRenewalFailed)
        .unwrap()
        .payload;
    assert_eq!(payload["status"], "TRIAL_PENDING");
    let got = get(&w, free.id);
    assert_eq!((got.status, got.latest_invoice_paid), (SubscriptionStatus::Active, true));
    assert_eq!(invoices_of(&w, free.id)[0].1.status, InvoiceStatus::Completed);

    // Paid by hand while TRIAL_PENDING: ACTIVE.
    for id in [paid.id, manual.id] {
        let inv = get(&w, id).latest_invoice_id.unwrap();
        let (_, pays) = w.billing.invoices().get(&w.fresh_admin(), inv).unwrap().into_parts();
        let req = MarkPaid {
            method: PaymentMethod::Cash,
            note: None,
        };
        w.billing.payments().mark_paid(&w.fresh_admin(), pays[0].id, req).unwrap();
        assert_eq!(get(&w, id).status, SubscriptionStatus::Active);
        assert_eq!(sub_events(&w, id).last(), Some(&EventType::SubscriptionActivated));
    }
    // Never paid: retried 1, 3 and 7 days on, then INACTIVE.
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::By(Duration::days(8))).unwrap();
    assert_eq!(failed(lapse.id), 4);
    let got = get(&w, lapse.id);
    assert_eq!(got.status, SubscriptionStatus::Inactive);
    assert_eq!(sub_events(&w, lapse.id).last(), Some(&EventType::SubscriptionInactivated));
    let (_, pays) = w.billing.invoices().get(&w.fresh_admin(), got.latest_invoice_id.unwrap()).unwrap().into_parts();
    assert_eq!(pays[0].status, PaymentStatus::Pending);
}

/// Cancel of a trial: TRIALING → CANCELED now (its end then issues nothing); TRIAL_PENDING →
/// CANCELED now, its unpaid first invoice voided with `cancel_related_invoices`. Uncancel of a
/// trial and a freeze of one are 400 INVALID_STATUS. A `period_start` not after now, or more
/// than 3650 days ahead, is a 422 at `period_start`; a refused trial writes nothing.
pub fn trial_cancel_and_refusals<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "10.00").id;
    let before = everything(&w);
    expect_invalid(try_create(&w, s, &trial_body(c.id, gym, "2026-01-15T09:00:00Z")), "period_start");
    expect_invalid(try_create(&w, s, &trial_body(c.id, gym, "2026-01-01T00:00:00Z")), "period_start");
    expect_invalid(try_create(&w, s, &trial_body(c.id, gym, "2036-02-01T00:00:00Z")), "period_start");
    assert_eq!(everything(&w), before);

    let trialing = try_create(&w, s, &trial_body(c.id, gym, "2026-02-01T00:00:00Z")).unwrap();
    let pending = try_create(&w, s, &trial_body(c.id, gym, "2026-01-20T00:00:00Z")).unwrap();
    let before = everything(&w);
    expect_code(w.billing.subscriptions().uncancel(s, trialing.id), Code::INVALID_STATUS);
    let f = FreezeRequest {
        start: ts("2026-01-16T00:00:00Z"),
        end: None,
        notes: None,
    };
    expect_code(w.billing.freezes().create(s, trialing.id, f), Code::INVALID_STATUS);
    assert_eq!(everything(&w), before);

    let got = w
        .billing
        .subscriptions()
        .cancel(s, trialing.id, SubscriptionCancel::default())
        .unwrap()
        .subscription;
    assert_eq!((got.status, got.ended_at), (SubscriptionStatus::Canceled, Some(ts("2026-01-15T09:00:00Z"))));
    to(&w, "2026-01-20T00:00:01Z");
    assert_eq!(get(&w, pending.id).status, SubscriptionStatus::TrialPending);
    let got = w
        .billing
        .subscriptions()
        .cancel(&w.fresh_admin(), pending.id, SubscriptionCancel { cancel_related_invoices: true })
        .map(|d| d.subscription)
        .unwrap();
    assert_eq!(got.status, SubscriptionStatus::Canceled);
    let (inv, pays) = w.billing.invoices().get(&w.fresh_admin(), got.latest_invoice_id.unwrap()).unwrap().into_parts();
    assert_eq!((inv.status, pays[0].status), (InvoiceStatus::Canceled, PaymentStatus::Canceled));
    to(&w, "2026-03-01T00:00:00Z");
    assert!(invoices_of(&w, trialing.id).is_empty(), "a canceled trial issues nothing");
    assert_eq!(invoices_of(&w, pending.id).len(), 1);
    assert_eq!(
        sub_events(&w, trialing.id),
        vec![EventType::SubscriptionCreated, EventType::SubscriptionCanceled]
    );
    assert_eq!(get(&w, pending.id).status, SubscriptionStatus::Canceled);
}
