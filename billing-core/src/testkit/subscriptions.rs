//! Subscription cases: creation (the first cycle's invoice, priced as invoices are), the rules
//! of its products, the round trip of every stored field, one invoice per cycle as a unique
//! key, activation by paying the first invoice, cancel and uncancel, renewals on the sandbox
//! clock (a year of monthly cycles with their charges, `until_cycle_number`, a scheduled
//! cancellation, declined charges retried then INACTIVE), renewals run twice or concurrently
//! issuing once, and the list filters. Every refusal is checked to write nothing.

use super::invoices::{consumer, coupon, create as create_invoice, invoice_body, product};
use super::{expect_code, expect_invalid, expect_unique, money, ts, Harness, World};
use crate::auth::Scope;
use crate::error::{Code, Error, Result};
use crate::event::EventType;
use crate::ids::{ConsumerId, InvoiceId, ProductId, SubscriptionId, WorkId};
use crate::invoice::{Invoice, InvoiceStatus};
use crate::list::QueryParams;
use crate::money::Currency;
use crate::payment::{MarkPaid, PaymentMethod, PaymentStatus};
use crate::sandbox::Advance;
use crate::store::Store;
use crate::subscription::view::ViewContext;
use crate::subscription::*;
use crate::work::DueWork;
use chrono::Duration;
use serde_json::{json, Value};

pub fn sub_body(c: ConsumerId, items: &[(ProductId, u32)], period_start: &str) -> Value {
    json!({
        "organization_consumer_id": c,
        "items": items.iter().map(|(p, q)| json!({"product_id": p, "quantity": q})).collect::<Vec<_>>(),
        "period_start": period_start,
        "currency": "SAR",
    })
}

/// SubscriptionDetailed of a subscription, as the API answers it.
pub fn subscription_json<S: Store>(b: &crate::billing::Billing<S>, s: &Scope, id: SubscriptionId) -> Result<Value> {
    let d = b.subscriptions().get(s, id)?;
    let cx = ViewContext {
        settings: &s.org.settings,
        branch_name: &s.branch.name,
        public_url: b.engine().public_url(),
    };
    Ok(serde_json::to_value(d.response(cx)).expect("serializable"))
}

/// A page of SubscriptionDetailed, as the API answers it.
pub fn list_json<S: Store>(b: &crate::billing::Billing<S>, s: &Scope, req: &SubscriptionListRequest) -> Result<crate::list::Page<Value>> {
    let page = b.subscriptions().list(s, req)?;
    let cx = ViewContext {
        settings: &s.org.settings,
        branch_name: &s.branch.name,
        public_url: b.engine().public_url(),
    };
    Ok(crate::list::Page {
        items: page.items.iter().map(|d| serde_json::to_value(d.response(cx)).expect("serializable")).collect(),
        total: page.total,
        page: page.page,
        limit: page.limit,
    })
}

pub fn try_create<S: Store>(w: &World<S>, s: &Scope, v: &Value) -> Result<Subscription> {
    w.billing
        .subscriptions()
        .create(s, SubscriptionCreate::parse(v, Currency::SAR)?)
        .map(|d| d.subscription)
}

pub fn create<S: Store>(w: &World<S>, s: &Scope, v: Value) -> Subscription {
    try_create(w, s, &v).unwrap_or_else(|e| panic!("create subscription {v}: {e:?}"))
}

pub(crate) fn monthly<S: Store>(w: &World<S>, s: &Scope, price: &str) -> crate::product::Product {
    product(w, s, price, json!({"type": "RECURRING", "recurring_interval": "MONTH"}))
}

pub(crate) fn sub_events<S: Store>(w: &World<S>, id: SubscriptionId) -> Vec<EventType> {
    w.read(|tx| tx.list_events(w.admin.org_id()))
        .into_iter()
        .filter(|e| e.entity_id == id.0)
        .map(|e| e.event_type)
        .collect()
}

pub(super) fn everything<S: Store>(w: &World<S>) -> String {
    let s = &w.admin;
    let req = parse_subscription_list(&QueryParams::parse("limit=100&sort_direction=asc")).unwrap();
    let subs = list_json(&w.billing, s, &req).unwrap().items;
    let invoices = w
        .billing
        .invoices()
        .list(s, &crate::invoice::parse_invoice_list(&QueryParams::parse("limit=100")).unwrap())
        .unwrap()
        .items;
    let events = w.read(|tx| tx.list_events(s.org_id()));
    format!("{subs:?}{invoices:?}{events:?}")
}

pub(super) fn pay_first<S: Store>(w: &World<S>, s: &Scope, inv: InvoiceId) {
    let (_, pays) = w.billing.invoices().get(s, inv).unwrap().into_parts();
    let req = MarkPaid {
        method: PaymentMethod::Cash,
        note: None,
    };
    w.billing.payments().mark_paid(s, pays[0].id, req).unwrap();
}

pub(crate) fn invoices_of<S: Store>(w: &World<S>, id: SubscriptionId) -> Vec<(u32, Invoice)> {
    w.billing.subscriptions().invoices(&w.fresh_admin(), id).unwrap()
}

pub(super) fn advance<S: Store>(w: &World<S>, by: Duration) {
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::By(by)).unwrap();
}

/// Creation: INACTIVE, cycle 1 from `period_start`, the first invoice issued now with the
/// amounts an invoice of the same lines has (the one pricing module), `subscription_id` set,
/// due at the period start; SUBSCRIPTION_CREATED and INVOICE_CREATED. Paying the invoice
/// (mark-paid) makes it ACTIVE (SUBSCRIPTION_ACTIVATED) and its latest invoice paid.
pub fn create_issues_the_first_invoice<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "115.00");
    let towel = monthly(&w, s, "20.00");
    let ten = coupon(&w, s, json!({"name": "TEN", "discount_value": 10, "is_percentage": true}));
    let five = coupon(&w, s, json!({"name": "FIVE", "discount_value": "5", "currency": "SAR"}));
    let mut body = sub_body(c.id, &[(gym.id, 2), (towel.id, 1)], "2026-01-31T10:00:00Z");
    body["items"][0]["coupons"] = json!([ten.id]);
    body["coupons"] = json!([five.id]);
    body["description"] = json!("Gym for two");
    let sub = create(&w, s, body);
    // The same lines as an invoice (one-off pricing is the same module).
    let mut ib = invoice_body(c.id, &[(gym.id, 2), (towel.id, 1)], &[five.id]);
    ib["items"][0]["coupons"] = json!([ten.id]);
    let twin = create_invoice(&w, s, ib);
    assert_eq!(sub.status, SubscriptionStatus::Inactive);
    assert_eq!(
        (sub.current_cycle_number, sub.recurring_interval, sub.recurring_interval_count),
        (1, crate::product::RecurringInterval::Month, 1)
    );
    assert_eq!(
        (sub.current_period_start, sub.current_period_end),
        (ts("2026-01-31T10:00:00Z"), ts("2026-02-28T10:00:00Z"))
    );
    assert_eq!(
        (sub.original_amount, sub.item_level_discounted_amount, sub.total_vat_amount, sub.amount),
        (
            twin.original_amount,
            twin.item_level_discounted_amount,
            twin.total_vat_amount,
            twin.total_amount
        )
    );
    assert_eq!(sub.amount, money("222.00", Currency::SAR));
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.len(), 1);
    let (n, inv) = &invs[0];
    assert_eq!(*n, 1);
    assert_eq!(inv.subscription_id, Some(sub.id.0));
    assert_eq!(Some(inv.id), sub.latest_invoice_id);
    assert_eq!(
        (inv.total_amount, inv.status, inv.scheduled_on),
        (sub.amount, InvoiceStatus::Created, sub.current_period_start)
    );
    assert_eq!(inv.items.len(), 2);
    assert!(!inv.payment_methods.installment, "recurring products are never paid in installments");
    assert!(!sub.latest_invoice_paid);
    assert_eq!(sub_events(&w, sub.id), vec![EventType::SubscriptionCreated]);
    let created = w.read(|tx| tx.list_events(s.org_id())).into_iter().find(|e| e.entity_id == inv.id.0).unwrap();
    assert_eq!(created.event_type, EventType::InvoiceCreated);
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!(got, sub);

    pay_first(&w, s, inv.id);
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!(got.status, SubscriptionStatus::Active);
    assert!(got.latest_invoice_paid);
    assert_eq!(got.started_at, Some(w.fresh_admin().org.now(w.billing.engine().clock())));
    assert_eq!(sub_events(&w, sub.id), vec![EventType::SubscriptionCreated, EventType::SubscriptionActivated]);
    let v = subscription_json(&w.billing, s, sub.id).unwrap();
    assert_eq!(v["status"], "ACTIVE");
    assert_eq!(v["amount"], "222.00");
    assert_eq!(v["latest_invoice"]["id"], json!(inv.id));
    assert_eq!(v["items"][0]["product"]["id"], json!(gym.id));
    assert_eq!(v["organization_consumer"]["id"], json!(c.id));
}

/// Refused creations write nothing: a one-time product (422 at its item), products of
/// different intervals (422 at `items`), an unknown consumer or product (404), a price missing
/// in the currency (422).
pub fn create_refusals_write_nothing<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let yearly = product(&w, s, "900.00", json!({"type": "RECURRING", "recurring_interval": "YEAR"}));
    let quarterly = product(
        &w,
        s,
        "300.00",
        json!({"type": "RECURRING", "recurring_interval": "MONTH", "recurring_interval_count": 3}),
    );
    let one_off = product(&w, s, "10.00", json!({}));
    let before = everything(&w);
    let at = "2026-02-01T00:00:00Z";
    let r = try_create(&w, s, &sub_body(c.id, &[(gym.id, 1), (one_off.id, 1)], at));
    match r {
        Err(Error::Validation(d)) => assert_eq!(serde_json::to_value(&d[0].loc).unwrap(), json!(["body", "items", 1, "product_id"])),
        other => panic!("{other:?}"),
    }
    expect_invalid(try_create(&w, s, &sub_body(c.id, &[(gym.id, 1), (yearly.id, 1)], at)), "items");
    expect_invalid(try_create(&w, s, &sub_body(c.id, &[(gym.id, 1), (quarterly.id, 1)], at)), "items");
    expect_code(try_create(&w, s, &sub_body(ConsumerId::new(), &[(gym.id, 1)], at)), Code::NOT_FOUND);
    expect_code(try_create(&w, s, &sub_body(c.id, &[(ProductId::new(), 1)], at)), Code::NOT_FOUND);
    let mut usd = sub_body(c.id, &[(gym.id, 1)], at);
    usd["currency"] = json!("USD");
    assert!(matches!(try_create(&w, s, &usd), Err(Error::Validation(_))));
    assert_eq!(everything(&w), before);
    // Another branch does not see the consumer.
    let b = w.new_branch("Other");
    let other = w.in_branch(b.id);
    expect_code(try_create(&w, &other, &sub_body(c.id, &[(gym.id, 1)], at)), Code::NOT_FOUND);
}

/// Every stored field round-trips, items in order; an update replaces them.
pub fn subscription_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "99.99");
    let towel = monthly(&w, s, "1.01");
    let mut body = sub_body(c.id, &[(gym.id, 3), (towel.id, 1)], "2026-03-31T23:59:59.123456Z");
    body["until_cycle_number"] = json!(12);
    body["notify_consumer"] = json!(false);
    body["exclude_coupons_if_installments"] = json!(true);
    body["override_payment_methods"] = json!({"visa": false, "bank_transfer": true, "subscription_auto_renewal": false});
    let mut sub = create(&w, s, body);
    let got = w.read(|tx| tx.subscription(s.branch_id(), sub.id)).unwrap();
    assert_eq!(got, sub);
    assert_eq!(got.payment_methods.visa, Some(false));
    assert_eq!(got.payment_methods.mastercard, None);
    assert!(!got.payment_methods.auto_renewal());
    assert_eq!(
        (got.until_cycle_number, got.notify_consumer, got.exclude_coupons_if_installments),
        (Some(12), false, true)
    );
    sub.items.reverse();
    sub.status = SubscriptionStatus::Canceled;
    sub.cancel_at_period_end = true;
    sub.started_at = Some(ts("2026-04-01T00:00:00.000001Z"));
    sub.ended_at = Some(ts("2026-05-01T00:00:00Z"));
    sub.renewal_failures = 2;
    sub.anchor_cycle = 4;
    sub.period_anchor = ts("2026-06-30T23:59:59.123456Z");
    sub.latest_invoice_paid = true;
    sub.updated_at = Some(ts("2026-05-01T00:00:00Z"));
    w.write(|tx| tx.update_subscription(&sub));
    assert_eq!(w.read(|tx| tx.subscription(s.branch_id(), sub.id)).unwrap(), sub);
    // The row alone: its fields are written, the stored items stay (whatever `items` holds).
    let mut row = sub.clone();
    row.status = SubscriptionStatus::Active;
    row.renewal_failures = 3;
    row.latest_invoice_paid = false;
    row.current_cycle_number += 1;
    row.updated_at = Some(ts("2026-05-02T00:00:00Z"));
    row.items.truncate(1);
    w.write(|tx| tx.update_subscription_row(&row));
    let got = w.read(|tx| tx.subscription(s.branch_id(), sub.id)).unwrap();
    assert_eq!(
        got,
        Subscription {
            items: sub.items.clone(),
            ..row.clone()
        }
    );
    w.write(|tx| tx.update_subscription_row(&sub));
    assert_eq!(w.read(|tx| tx.subscription(s.branch_id(), sub.id)).unwrap(), sub);
    // Read as a row: every field but the items (which a store may leave out).
    let row = w.read(|tx| tx.subscription_row(s.branch_id(), sub.id)).unwrap();
    assert_eq!(Subscription { items: vec![], ..row.clone() }, Subscription { items: vec![], ..sub.clone() });
    assert!(row.items.is_empty() || row.items == sub.items);
    // Another branch does not see it.
    let b = w.new_branch("Other");
    assert_eq!(w.read(|tx| tx.subscription(b.id, sub.id)), None);
    assert_eq!(w.read(|tx| tx.subscription_row(b.id, sub.id)), None);
}

/// One invoice per subscription and cycle is a unique key of the store: a second row for the
/// same cycle is refused (`subscription_cycles_key`), whatever the invoice.
pub fn one_invoice_per_cycle_is_a_unique_key<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    let first = sub.latest_invoice_id.unwrap();
    let other = create_invoice(&w, s, invoice_body(c.id, &[(gym.id, 1)], &[]));
    let name = expect_unique(w.try_write(|tx| tx.insert_subscription_cycle(sub.id, 1, other.id)));
    assert_eq!(name, "subscription_cycles_key");
    w.write(|tx| tx.insert_subscription_cycle(sub.id, 2, other.id));
    assert_eq!(w.read(|tx| tx.subscription_cycles(sub.id)), vec![(1, first), (2, other.id)]);
}

/// A monthly subscription anchored on January 31 with a card on file, paid for its first
/// cycle, over a year of the sandbox clock: exactly 13 invoices, one per cycle, with the
/// clamped periods (Feb 28, Mar 31, …), each renewal charged to the card (INVOICE_CREATED,
/// PAYMENT_SUCCEEDED, INVOICE_COMPLETED with `subscription_id`), the subscription ACTIVE in
/// cycle 13.
pub fn a_year_of_monthly_renewals<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    w.billing.payments().save_card(s, c.id, "4111111111111111", 12, 2035, true).unwrap();
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-31T10:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    // To Jan 31 2027 10:00 (cycle 13 starts there), from Jan 15 09:00.
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(ts("2027-01-31T10:00:00Z"))).unwrap();
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.iter().map(|(n, _)| *n).collect::<Vec<_>>(), (1..=13).collect::<Vec<_>>());
    let starts: Vec<String> = invs.iter().map(|(_, i)| i.scheduled_on.format("%Y-%m-%d").to_string()).collect();
    assert_eq!(
        starts,
        [
            "2026-01-31",
            "2026-02-28",
            "2026-03-31",
            "2026-04-30",
            "2026-05-31",
            "2026-06-30",
            "2026-07-31",
            "2026-08-31",
            "2026-09-30",
            "2026-10-31",
            "2026-11-30",
            "2026-12-31",
            "2027-01-31"
        ]
    );
    for (_, inv) in &invs {
        assert_eq!(inv.status, InvoiceStatus::Completed, "{inv:?}");
        assert_eq!(inv.subscription_id, Some(sub.id.0));
        assert_eq!(inv.total_amount, sub.amount);
        let (_, pays) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
        assert_eq!(pays.len(), 1);
        assert_eq!(pays[0].status, PaymentStatus::Succeeded);
    }
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!((got.status, got.current_cycle_number), (SubscriptionStatus::Active, 13));
    assert_eq!(
        (got.current_period_start, got.current_period_end),
        (ts("2027-01-31T10:00:00Z"), ts("2027-02-28T10:00:00Z"))
    );
    assert!(got.latest_invoice_paid);
    // The renewal of cycle 2: INVOICE_CREATED, PAYMENT_SUCCEEDED, INVOICE_COMPLETED in order.
    let second = invs[1].1.id;
    let pay = w.billing.invoices().get(s, second).unwrap().payments[0].id;
    let seq: Vec<EventType> = w
        .read(|tx| tx.list_events(s.org_id()))
        .into_iter()
        .filter(|e| e.entity_id == second.0 || e.entity_id == pay.0)
        .map(|e| e.event_type)
        .collect();
    assert_eq!(seq, vec![EventType::InvoiceCreated, EventType::PaymentSucceeded, EventType::InvoiceCompleted]);
    assert!(!sub_events(&w, sub.id).contains(&EventType::SubscriptionCycleRenewalFailed));
    // Nothing more is due before cycle 14.
    advance(&w, Duration::days(27));
    assert_eq!(invoices_of(&w, sub.id).len(), 13);
}

/// A renewal run twice (a second item for the same cycle, run concurrently with the first from
/// two threads) issues one invoice for the cycle; the cycle after it is queued once.
pub fn renewal_run_twice_issues_once<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let mut body = sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z");
    body["override_payment_methods"] = json!({"subscription_auto_renewal": false});
    let sub = create(&w, s, body);
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    // Extra items for cycle 2, as a crashed or concurrent scheduler might leave them.
    for _ in 0..4 {
        let payload = json!({"branch_id": sub.branch_id, "subscription_id": sub.id, "cycle": 2});
        w.write(|tx| tx.insert_work(&DueWork::new(WorkId::new(), sub.org_id, RENEWAL_KIND, sub.current_period_end, payload.clone())));
    }
    // Make them due without running anything: move the organization's clock by hand.
    let mut org = w.read(|tx| tx.org(s.org_id())).unwrap();
    org.clock_offset_us = Duration::days(32).num_microseconds().unwrap();
    w.write(|tx| tx.update_org(&org));
    let runs: Vec<_> = std::thread::scope(|t| {
        let hs: Vec<_> = (0..3)
            .map(|_| t.spawn(|| w.billing.engine().run_due_work(Some(s.org_id()), 100).unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let renewed: usize = runs.iter().map(|r| r.count("subscription.renewed")).sum();
    assert_eq!(renewed, 1, "{runs:?}");
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![1, 2]);
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!(got.current_cycle_number, 2);
    // Without auto-renewal the invoice waits to be paid.
    assert_eq!(invs[1].1.status, InvoiceStatus::Created);
    assert!(!got.latest_invoice_paid);
    // Everything left is the one renewal into cycle 3.
    let left = w.write(|tx| tx.claim_due_work(Some(s.org_id()), &[RENEWAL_KIND], ts("2100-01-01T00:00:00Z"), ts("2100-01-01T00:01:00Z"), 100));
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].payload["cycle"], 3);
}

/// Cancel and uncancel. ACTIVE: stays ACTIVE with `cancel_at_period_end`
/// (SUBSCRIPTION_CANCEL_AT_PERIOD_END once), uncancel withdraws it (no event), a second
/// uncancel is a no-op; canceled again, it ends at the period end (CANCELED,
/// SUBSCRIPTION_CANCELED) and issues nothing after. INACTIVE: CANCELED at once, with its unpaid
/// invoice voided when asked. Uncancel of a subscription that is not ACTIVE, and cancel of a
/// CANCELED one: 400 INVALID_STATUS, nothing written.
pub fn cancel_and_uncancel<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    // A consumer with a subscription that is not canceled is kept.
    expect_code(w.billing.consumers().delete(s, c.id), Code::CONSUMER_HAS_ONGOING_SUBSCRIPTIONS);
    let keep = SubscriptionCancel::default();
    let got = w.billing.subscriptions().cancel(s, sub.id, keep).unwrap().subscription;
    assert_eq!(
        (got.status, got.cancel_at_period_end, got.cancel_at_cycle_number()),
        (SubscriptionStatus::Active, true, Some(1))
    );
    w.billing.subscriptions().cancel(s, sub.id, keep).unwrap();
    w.billing.subscriptions().uncancel(s, sub.id).unwrap();
    assert!(!w.billing.subscriptions().get(s, sub.id).unwrap().subscription.cancel_at_period_end);
    w.billing.subscriptions().uncancel(s, sub.id).unwrap();
    assert_eq!(
        sub_events(&w, sub.id),
        vec![
            EventType::SubscriptionCreated,
            EventType::SubscriptionActivated,
            EventType::SubscriptionCancelAtPeriodEnd
        ]
    );
    w.billing.subscriptions().cancel(s, sub.id, keep).unwrap();
    advance(&w, Duration::days(40));
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!(got.status, SubscriptionStatus::Canceled);
    assert_eq!(got.ended_at, Some(sub.current_period_end));
    assert_eq!(invoices_of(&w, sub.id).len(), 1, "nothing is issued after the end");
    assert_eq!(sub_events(&w, sub.id).last(), Some(&EventType::SubscriptionCanceled));
    let s = &w.fresh_admin();
    let before = everything(&w);
    expect_code(w.billing.subscriptions().uncancel(s, sub.id), Code::INVALID_STATUS);
    expect_code(w.billing.subscriptions().cancel(s, sub.id, keep).map(|d| d.subscription), Code::INVALID_STATUS);
    assert_eq!(everything(&w), before);

    // INACTIVE: canceled now, the unpaid invoice voided with it.
    let other = create(&w, s, sub_body(c.id, &[(gym.id, 2)], "2026-03-01T00:00:00Z"));
    let got = w
        .billing
        .subscriptions()
        .cancel(s, other.id, SubscriptionCancel { cancel_related_invoices: true })
        .map(|d| d.subscription)
        .unwrap();
    assert_eq!(got.status, SubscriptionStatus::Canceled);
    assert_eq!(got.ended_at, Some(s.org.now(w.billing.engine().clock())));
    let (inv, pays) = w.billing.invoices().get(s, other.latest_invoice_id.unwrap()).unwrap().into_parts();
    assert_eq!((inv.status, pays[0].status), (InvoiceStatus::Canceled, PaymentStatus::Canceled));
    assert_eq!(sub_events(&w, other.id), vec![EventType::SubscriptionCreated, EventType::SubscriptionCanceled]);
    expect_code(w.billing.subscriptions().get(s, SubscriptionId::new()).map(|d| d.subscription), Code::NOT_FOUND);
    expect_code(w.billing.subscriptions().uncancel(s, SubscriptionId::new()), Code::NOT_FOUND);
}

/// `until_cycle_number` ends the subscription after its last cycle (CANCELED at that cycle's
/// end), with exactly that many invoices.
pub fn until_cycle_number_ends_it<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let weekly = product(&w, s, "10.00", json!({"type": "RECURRING", "recurring_interval": "WEEK"}));
    w.billing.payments().save_card(s, c.id, "5421080101000000", 12, 2035, true).unwrap();
    let mut body = sub_body(c.id, &[(weekly.id, 1)], "2026-01-15T09:00:00Z");
    body["until_cycle_number"] = json!(3);
    let sub = create(&w, s, body);
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    advance(&w, Duration::weeks(10));
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.len(), 3);
    assert!(invs.iter().all(|(_, i)| i.status == InvoiceStatus::Completed));
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!((got.status, got.current_cycle_number), (SubscriptionStatus::Canceled, 3));
    assert_eq!(got.ended_at, Some(ts("2026-02-05T09:00:00Z")));
}

/// A declined renewal charge: SUBSCRIPTION_CYCLE_RENEWAL_FAILED, retried 1, 3 and 7 days after
/// the first attempt (each a PAYMENT_FAILED and another RENEWAL_FAILED), then INACTIVE with
/// SUBSCRIPTION_INACTIVATED; an inactive subscription issues no more invoices until its overdue
/// invoice is paid, which makes it ACTIVE again. No card at all fails the same way.
pub fn declined_renewals_are_retried_then_inactivate<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    w.billing.payments().save_card(s, c.id, "4123120001090000", 12, 2035, true).unwrap();
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    // Cycle 2 starts Feb 15 09:00; its first charge is declined.
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(ts("2026-02-15T09:00:01Z"))).unwrap();
    let failed = |w: &World<_>| {
        sub_events(w, sub.id)
            .iter()
            .filter(|e| **e == EventType::SubscriptionCycleRenewalFailed)
            .count()
    };
    assert_eq!(failed(&w), 1);
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!((got.status, got.renewal_failures, got.current_cycle_number), (SubscriptionStatus::Active, 1, 2));
    let second = got.latest_invoice_id.unwrap();
    advance(&w, Duration::days(1));
    assert_eq!(failed(&w), 2);
    advance(&w, Duration::days(2));
    assert_eq!(failed(&w), 3);
    assert_eq!(
        w.billing.subscriptions().get(s, sub.id).unwrap().subscription.status,
        SubscriptionStatus::Active
    );
    advance(&w, Duration::days(4));
    assert_eq!(failed(&w), 4);
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!(got.status, SubscriptionStatus::Inactive);
    assert_eq!(sub_events(&w, sub.id).last(), Some(&EventType::SubscriptionInactivated));
    let (_, pays) = w.billing.invoices().get(s, second).unwrap().into_parts();
    assert_eq!(pays[0].status, PaymentStatus::Failed);
    // Inactive: the next period end issues nothing.
    advance(&w, Duration::days(40));
    assert_eq!(invoices_of(&w, sub.id).len(), 2);
    // Paying the overdue invoice by hand makes it ACTIVE again, and renewals resume.
    let s = &w.fresh_admin();
    let req = MarkPaid {
        method: PaymentMethod::BankTransfer,
        note: None,
    };
    w.billing.payments().mark_paid(s, pays[0].id, req).unwrap();
    assert_eq!(
        w.billing.subscriptions().get(s, sub.id).unwrap().subscription.status,
        SubscriptionStatus::Active
    );
    advance(&w, Duration::hours(1));
    assert_eq!(invoices_of(&w, sub.id).len(), 3);

    // No card: the same failure, without a charge.
    let c2 = consumer(&w, s, false);
    let other = create(&w, s, sub_body(c2.id, &[(gym.id, 1)], "2026-04-01T00:00:00Z"));
    pay_first(&w, s, other.latest_invoice_id.unwrap());
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(ts("2026-05-01T00:00:01Z"))).unwrap();
    assert_eq!(
        sub_events(&w, other.id)
            .iter()
            .filter(|e| **e == EventType::SubscriptionCycleRenewalFailed)
            .count(),
        1
    );
    let (_, pays) = w
        .billing
        .invoices()
        .get(s, w.billing.subscriptions().get(s, other.id).unwrap().subscription.latest_invoice_id.unwrap())
        .unwrap()
        .into_parts();
    assert_eq!(pays[0].status, PaymentStatus::Pending);
}

/// The list filters: statuses, latest_invoice_is_paid, consumer, created-at and period ranges,
/// price bounds, product ids, currencies, search over description and product names, paging
/// and sorting.
pub fn list_filters_and_sorts<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c1 = consumer(&w, s, false);
    let c2 = consumer(&w, s, false);
    let gym = product(&w, s, "100.00", json!({"type": "RECURRING", "recurring_interval": "MONTH", "name": "Gym Gold"}));
    let pool = product(&w, s, "50.00", json!({"type": "RECURRING", "recurring_interval": "MONTH", "name": "Pool"}));
    let mut a = sub_body(c1.id, &[(gym.id, 1)], "2026-01-01T00:00:00Z");
    a["description"] = json!("Alpha");
    let a = create(&w, s, a);
    w.tick(10);
    let mut b = sub_body(c2.id, &[(pool.id, 1)], "2026-02-01T00:00:00Z");
    b["description"] = json!("Beta");
    let b = create(&w, s, b);
    w.tick(10);
    let mut cc = sub_body(c2.id, &[(pool.id, 3), (gym.id, 1)], "2026-03-01T00:00:00Z");
    cc["description"] = json!("Gamma");
    let cc = create(&w, s, cc);
    pay_first(&w, s, a.latest_invoice_id.unwrap());
    let names = |query: &str| -> Vec<String> {
        let req = parse_subscription_list(&QueryParams::parse(query)).unwrap_or_else(|e| panic!("{query}: {e:?}"));
        let page = list_json(&w.billing, &w.admin, &req).unwrap();
        page.items.iter().map(|v| v["description"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(""), ["Gamma", "Beta", "Alpha"]);
    assert_eq!(names("sort_direction=asc"), ["Alpha", "Beta", "Gamma"]);
    assert_eq!(names("statuses=ACTIVE"), ["Alpha"]);
    assert_eq!(names("statuses=INACTIVE&statuses=CANCELED"), ["Gamma", "Beta"]);
    assert_eq!(names("latest_invoice_is_paid=true"), ["Alpha"]);
    assert_eq!(names("latest_invoice_is_paid=false"), ["Gamma", "Beta"]);
    assert_eq!(names(&format!("organization_consumer_id={}", c2.id)), ["Gamma", "Beta"]);
    assert_eq!(names(&format!("product_ids={}", gym.id)), ["Gamma", "Alpha"]);
    assert_eq!(names(&format!("product_ids={}&product_ids={}", gym.id, pool.id)), ["Gamma", "Beta", "Alpha"]);
    assert_eq!(names("from_price=100&to_price=115"), ["Alpha"]);
    assert_eq!(names("from_price=250"), ["Gamma"]);
    assert_eq!(names("currencies=SAR,USD"), ["Gamma", "Beta", "Alpha"]);
    assert_eq!(names("currencies=USD"), Vec::<String>::new());
    assert_eq!(names("search_term=gold"), ["Gamma", "Alpha"]);
    assert_eq!(names("search_term=BET"), ["Beta"]);
    assert_eq!(names("current_period_start_from_date=2026-02-01T00:00:00Z"), ["Gamma", "Beta"]);
    assert_eq!(names("current_period_start_to_date=2026-02-01T00:00:00Z"), ["Beta", "Alpha"]);
    assert_eq!(names("current_period_end_from_date=2026-04-01T00:00:00Z"), ["Gamma"]);
    assert_eq!(names("current_period_end_to_date=2026-02-01T00:00:00Z"), ["Alpha"]);
    let created_b = crate::clock::format_rfc3339(&b.created_at);
    assert_eq!(names(&format!("from_date={created_b}")), ["Gamma", "Beta"]);
    assert_eq!(names(&format!("to_date={created_b}")), ["Beta", "Alpha"]);
    assert_eq!(names("sort_field=amount&sort_direction=asc"), ["Beta", "Alpha", "Gamma"]);
    assert_eq!(names("sort_field=current_period_end"), ["Gamma", "Beta", "Alpha"]);
    assert_eq!(names("limit=2&page=2"), ["Alpha"]);
    let req = parse_subscription_list(&QueryParams::parse("limit=2")).unwrap();
    let page = list_json(&w.billing, s, &req).unwrap();
    assert_eq!((page.total, page.items.len()), (3, 2));
    assert!(parse_subscription_list(&QueryParams::parse("statuses=NOPE")).is_err());
    assert!(parse_subscription_list(&QueryParams::parse("sort_field=nope")).is_err());
    let _ = cc;
    // Another branch sees none of them.
    let other = w.in_branch(w.new_branch("Other").id);
    let req = parse_subscription_list(&QueryParams::parse("")).unwrap();
    assert!(list_json(&w.billing, &other, &req).unwrap().items.is_empty());
}

/// A page's views read ahead ([`crate::store::Tx::prefetch_subscription_views`]) answer what
/// reading each alone answers: trials, freezes, scheduled plan changes, consumers (one shared
/// by two subscriptions) and the latest invoices' payments; and the list shows each
/// subscription as getting it does.
pub fn prefetched_list_views_read_as_alone<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let gym = monthly(&w, s, "100.00");
    let (c1, c2) = (consumer(&w, s, false), consumer(&w, s, false));
    let a = create(&w, s, sub_body(c1.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    let b = create(&w, s, sub_body(c1.id, &[(gym.id, 2)], "2026-01-15T09:00:00Z"));
    let c = create(&w, s, sub_body(c2.id, &[(gym.id, 3)], "2026-01-15T09:00:00Z"));
    pay_first(&w, s, a.latest_invoice_id.unwrap());
    let now = w.now();
    w.write(|tx| {
        tx.insert_trial(&Trial {
            subscription_id: b.id,
            start: now,
            end: now + Duration::days(7),
        })?;
        tx.insert_freeze(&Freeze {
            id: crate::ids::FreezeId::new(),
            org_id: a.org_id,
            branch_id: a.branch_id,
            subscription_id: a.id,
            start: now + Duration::days(40),
            end: Some(now + Duration::days(50)),
            notes: Some("away".into()),
            invoice_id: a.latest_invoice_id,
            state: FreezeState::Scheduled,
            deleted_at: None,
            created_at: now,
            updated_at: None,
        })
    });
    w.billing
        .subscriptions()
        .update(
            s,
            c.id,
            &SubscriptionUpdate::parse(&json!({"items": [{"product_id": gym.id, "quantity": 4}], "coupons": []})).unwrap(),
        )
        .unwrap();
    let subs: Vec<Subscription> = [a.id, b.id, c.id]
        .iter()
        .map(|id| w.read(|tx| tx.subscription(s.branch.id, *id)).unwrap())
        .collect();
    let views = |tx: &mut dyn crate::Tx| -> crate::error::StoreResult<String> {
        let mut out = String::new();
        for x in &subs {
            let payments = match x.latest_invoice_id {
                Some(i) => tx.invoice_payments(i)?,
                None => vec![],
            };
            out += &format!(
                "{:?}{:?}{:?}{:?}{:?}\n",
                tx.subscription_trial(x.id)?,
                tx.subscription_freezes(x.id)?,
                tx.scheduled_plan_change(x.id)?,
                tx.consumer(x.branch_id, x.consumer_id)?,
                payments
            );
        }
        Ok(out)
    };
    let alone = w.read(views);
    assert!(
        alone.contains("away") && alone.contains("status: Scheduled") && alone.contains(&b.id.to_string()),
        "{alone}"
    );
    let ahead = w.read(|tx| {
        tx.prefetch_subscription_views(&subs)?;
        views(tx)
    });
    assert_eq!(ahead, alone);
    let req = parse_subscription_list(&QueryParams::parse("limit=100")).unwrap();
    let listed = list_json(&w.billing, s, &req).unwrap().items;
    assert_eq!(listed.len(), 3);
    for v in &listed {
        let id: SubscriptionId = v["id"].as_str().unwrap().parse().unwrap();
        assert_eq!(*v, subscription_json(&w.billing, s, id).unwrap());
    }
    assert_eq!(listed.iter().filter(|v| v["trial_period_days"] == json!(7)).count(), 1);
    assert_eq!(listed.iter().filter(|v| v["latest_freeze"]["notes"] == json!("away")).count(), 1);
    assert_eq!(listed.iter().filter(|v| v["pending_change"].is_object()).count(), 1);
}

/// The renewals of one claim run together (one `Store::write_each`): each is renewed once, and
/// one whose lease was lost (another process holds the item now) changes nothing while the
/// others are renewed regardless; it is renewed when it is claimed again.
pub fn renewals_of_one_claim_run_together<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let gym = monthly(&w, s, "100.00");
    let mut subs = Vec::new();
    for _ in 0..4 {
        let c = consumer(&w, s, false);
        let mut body = sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z");
        body["override_payment_methods"] = json!({"subscription_auto_renewal": false});
        let sub = create(&w, s, body);
        pay_first(&w, s, sub.latest_invoice_id.unwrap());
        subs.push(sub);
    }
    // Make them due without running anything: move the organization's clock by hand.
    let mut org = w.read(|tx| tx.org(s.org_id())).unwrap();
    org.clock_offset_us = Duration::days(32).num_microseconds().unwrap();
    w.write(|tx| tx.update_org(&org));
    let now = w.billing.engine().clock().now();
    let mut items = w.write(|tx| tx.claim_due_work(Some(s.org_id()), &[RENEWAL_KIND], now, now + Duration::seconds(60), 100));
    assert_eq!(items.len(), 4);
    let held = items[2].leased_until;
    // Item 2 runs with a lease it no longer holds.
    items[2].leased_until = Some(now + Duration::seconds(30));
    let lost: SubscriptionId = serde_json::from_value(items[2].payload["subscription_id"].clone()).unwrap();
    let mut report = crate::work::WorkReport::default();
    w.billing.engine().run_work(&items, &mut report);
    assert_eq!((report.count("subscription.renewed"), report.errors), (3, 0), "{report:?}");
    for sub in &subs {
        let cycles: Vec<u32> = invoices_of(&w, sub.id).iter().map(|(n, _)| *n).collect();
        let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
        if sub.id == lost {
            assert_eq!((cycles, got.current_cycle_number), (vec![1], 1), "the lost item changed nothing");
        } else {
            assert_eq!((cycles, got.current_cycle_number), (vec![1, 2], 2));
        }
    }
    let created = |w: &World<H::S>| {
        w.read(|tx| tx.list_events(s.org_id()))
            .iter()
            .filter(|e| e.event_type == EventType::InvoiceCreated)
            .count()
    };
    assert_eq!(created(&w), 4 + 3);
    // The lost item is still queued under the lease it was claimed with.
    assert_eq!(w.read(|tx| tx.work(items[2].id)).unwrap().leased_until, held);
    // Claimed again once that lease ends, it renews its subscription, once.
    let later = now + Duration::seconds(61);
    let again = w.write(|tx| tx.claim_due_work(Some(s.org_id()), &[RENEWAL_KIND], later, later + Duration::seconds(60), 100));
    assert_eq!(again.iter().map(|i| i.id).collect::<Vec<_>>(), vec![items[2].id]);
    let mut report = crate::work::WorkReport::default();
    w.billing.engine().run_work(&again, &mut report);
    assert_eq!(report.count("subscription.renewed"), 1);
    assert_eq!(invoices_of(&w, lost).len(), 2);
    assert_eq!(created(&w), 4 + 4);
}

/// `SubscriptionTx::mark_latest_invoice_paid` marks the latest invoice paid only when the
/// invoice is the latest, not marked yet, the status is one of those named and the branch is
/// the subscription's; it changes nothing else, and answers whether it wrote.
pub fn marking_the_latest_invoice_paid_changes_only_that<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "115.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-31T10:00:00Z"));
    let (branch, latest) = (sub.branch_id, sub.latest_invoice_id.expect("the first invoice"));
    assert_eq!(sub.status, SubscriptionStatus::Inactive);
    let stored = || w.read(|tx| tx.subscription(branch, sub.id)).expect("the subscription");
    let before = stored();
    assert!(!before.latest_invoice_paid);
    let at = ts("2026-02-01T00:00:00Z");
    let mark = |branch, id, invoice, statuses: &[SubscriptionStatus], at| w.write(|tx| tx.mark_latest_invoice_paid(branch, id, invoice, statuses, at));
    // Refused: a status not named, another invoice, another branch, no such subscription, no
    // status at all.
    assert!(!mark(branch, sub.id, latest, &[SubscriptionStatus::Active, SubscriptionStatus::Frozen], at));
    assert!(!mark(branch, sub.id, InvoiceId::new(), &[SubscriptionStatus::Inactive], at));
    assert!(!mark(crate::ids::BranchId::new(), sub.id, latest, &[SubscriptionStatus::Inactive], at));
    assert!(!mark(branch, SubscriptionId::new(), latest, &[SubscriptionStatus::Inactive], at));
    assert!(!mark(branch, sub.id, latest, &[], at));
    assert_eq!(stored(), before, "a refusal writes nothing");
    // Marked: those two fields and nothing else (the items stay).
    assert!(mark(branch, sub.id, latest, &[SubscriptionStatus::Active, SubscriptionStatus::Inactive], at));
    let mut expected = before.clone();
    expected.latest_invoice_paid = true;
    expected.updated_at = Some(at);
    assert_eq!(stored(), expected);
    assert!(!expected.items.is_empty());
    // Marked already: nothing more (not even the time).
    assert!(!mark(branch, sub.id, latest, &[SubscriptionStatus::Inactive], at + Duration::days(1)));
    assert_eq!(stored(), expected);
}

/// The invoices, lines, payments and cycles the items of a `write_each` write are there for the
/// items after them, as if each were written at once, even where a store sends them together at
/// the end of the batch (PostgreSQL's first pass): a later item reads an invoice with its lines,
/// its payments and its cycle, and changes its payment; a second invoice for a cycle an earlier
/// item of the batch issued is refused (`subscription_cycles_key`) and keeps nothing, while the
/// others commit.
pub fn a_batch_reads_what_it_issued_and_issues_one_per_cycle<H: Harness>() {
    use crate::ids::{InvoiceItemId, PaymentId};
    let w = World::new(H::store());
    let s = &w.admin;
    let (org, branch) = (s.org_id(), s.branch.id);
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    let first = sub.latest_invoice_id.unwrap();
    let tmpl = create_invoice(&w, s, invoice_body(c.id, &[(gym.id, 1)], &[]));
    let (_, tmpl_pays) = w.billing.invoices().get(s, tmpl.id).unwrap().into_parts();
    let fresh = |tx: &mut dyn crate::Tx| -> Result<(Invoice, crate::payment::Payment)> {
        let mut inv = tmpl.clone();
        inv.id = InvoiceId::new();
        inv.org_invoice_number = tx.next_invoice_number(org)?;
        for it in &mut inv.items {
            it.id = InvoiceItemId::new();
        }
        let mut pay = tmpl_pays[0].clone();
        pay.id = PaymentId::new();
        pay.invoice_id = inv.id;
        Ok((inv, pay))
    };
    type Seen = (usize, Vec<(crate::ids::PaymentId, Option<PaymentMethod>)>, Option<InvoiceId>);
    // One batch: each cycle gets a new invoice with its payment, except 0, which reads and
    // changes the first item's. Answers what each item read, and what each issued.
    let batch = |cycles: &[u32]| {
        let issued: std::cell::RefCell<Vec<(Invoice, crate::payment::Payment)>> = Default::default();
        let keys: Vec<usize> = (0..cycles.len()).collect();
        let results = w.billing.engine().store.write_each(&keys, |tx, k| -> Result<Seen> {
            if *k == 0 {
                // The store may run the batch more than once: the last run is the one kept.
                issued.borrow_mut().clear();
            }
            let (inv, cycle) = if cycles[*k] == 0 {
                let (inv, mut pay) = issued.borrow()[0].clone();
                pay.method = Some(PaymentMethod::Cash);
                tx.update_payment(&pay)?;
                issued.borrow_mut().push((inv.clone(), pay));
                (inv, cycles[0])
            } else {
                let (inv, pay) = fresh(tx)?;
                tx.insert_invoice(&inv)?;
                tx.insert_payment(&pay)?;
                issued.borrow_mut().push((inv.clone(), pay));
                tx.insert_subscription_cycle(sub.id, cycles[*k], inv.id)?;
                (inv, cycles[*k])
            };
            // Item 0 reads nothing (so what it wrote may still wait when item 1 changes its
            // payment); then each read comes first in turn, with nothing sent before it.
            let payments_of = |tx: &mut dyn crate::Tx| -> Result<Vec<_>> { Ok(tx.invoice_payments(inv.id)?.into_iter().map(|p| (p.id, p.method)).collect()) };
            let (lines, pays, cyc) = match k {
                0 => return Ok((0, vec![], None)),
                1 => {
                    let pays = payments_of(tx)?;
                    (
                        tx.invoice(branch, inv.id)?.map(|x| x.items.len()),
                        pays,
                        tx.subscription_cycle_invoice(sub.id, cycle)?,
                    )
                }
                2 => {
                    let cyc = tx.subscription_cycle_invoice(sub.id, cycle)?;
                    let pays = payments_of(tx)?;
                    (tx.invoice(branch, inv.id)?.map(|x| x.items.len()), pays, cyc)
                }
                _ => {
                    let lines = tx.invoice_by_id(inv.id)?.map(|x| x.items.len());
                    let pays = payments_of(tx)?;
                    (lines, pays, tx.subscription_cycle_invoice(sub.id, cycle)?)
                }
            };
            Ok((lines.unwrap_or(0), pays, cyc))
        });
        (results, issued.into_inner())
    };
    let lines = tmpl.items.len();
    let (results, issued) = batch(&[2, 0, 3, 6]);
    let [(a, pa), (_, pa2), (c3, pc3), (c6, pc6)] = [issued[0].clone(), issued[1].clone(), issued[2].clone(), issued[3].clone()];
    assert_eq!(results[0], Ok((0, vec![], None)));
    assert_eq!(
        results[1],
        Ok((lines, vec![(pa.id, Some(PaymentMethod::Cash))], Some(a.id))),
        "a later item reads an earlier one's, changed"
    );
    assert_eq!(pa2.id, pa.id);
    assert_eq!(results[2], Ok((lines, vec![(pc3.id, pc3.method)], Some(c3.id))), "an item reads what it issued");
    assert_eq!(results[3], Ok((lines, vec![(pc6.id, pc6.method)], Some(c6.id))));
    // Cycle 4 twice in one batch: the second is refused, keeps nothing, and takes nothing down.
    let (results, issued) = batch(&[4, 4, 5]);
    assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
    assert_eq!(
        expect_unique(results[1].clone().map(drop)),
        "subscription_cycles_key",
        "a second invoice for cycle 4"
    );
    let (d4, b, d5) = (&issued[0].0, &issued[1].0, &issued[2].0);
    assert_eq!(
        w.read(|tx| tx.subscription_cycles(sub.id)),
        vec![(1, first), (2, a.id), (3, c3.id), (4, d4.id), (5, d5.id), (6, c6.id)]
    );
    assert_eq!(w.read(|tx| tx.invoice_by_id(b.id)), None, "the refused item keeps nothing");
    let kept = w.read(|tx| tx.invoice_payments(a.id));
    assert_eq!(
        kept.iter().map(|p| (p.id, p.method)).collect::<Vec<_>>(),
        vec![(pa.id, Some(PaymentMethod::Cash))]
    );
    assert_eq!(w.read(|tx| tx.invoice_by_id(a.id)).map(|x| x.items.len()), Some(lines));
}

/// `prefetch_renewals` is a hint: whatever a store read ahead, every later read in the
/// transaction answers what the database holds then, after the transaction's own writes: the
/// row (changed alone, or marked paid), a cycle recorded, a freeze, a card saved, a change of
/// the items; and a subscription of another branch is not found.
pub fn prefetched_renewal_reads_follow_the_writes<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let branch = s.branch.id;
    let gym = monthly(&w, s, "100.00");
    let (c1, c2) = (consumer(&w, s, false), consumer(&w, s, false));
    w.billing.payments().save_card(s, c1.id, "4111111111111111", 12, 2035, true).unwrap();
    let s1 = create(&w, s, sub_body(c1.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    let s2 = create(&w, s, sub_body(c2.id, &[(gym.id, 2)], "2026-01-15T09:00:00Z"));
    let s3 = create(&w, s, sub_body(consumer(&w, s, false).id, &[(gym.id, 3)], "2026-01-15T09:00:00Z"));
    let inv2 = s2.latest_invoice_id.unwrap();
    let old_token = w.read(|tx| tx.latest_active_card(c1.id)).unwrap().gateway_token;
    let ids = [s1.id, s2.id, s3.id];
    let other_branch = w.other_org("Elsewhere", false).branch.id;
    let new_card = crate::payment::TokenizedCard {
        id: uuid::Uuid::now_v7(),
        org_id: s.org_id(),
        consumer_id: c1.id,
        network: "VISA".into(),
        last_four: "4242".into(),
        expiry_month: 1,
        expiry_year: 2040,
        gateway_token: "tok-new".into(),
        is_active: true,
        consent: true,
        created_at: w.now() + Duration::days(1),
    };
    type Seen = (Option<String>, Option<InvoiceId>, bool, usize, Option<String>, usize);
    let results = w.billing.engine().store.write_each(&[0usize, 1, 2, 3], |tx, k| -> Result<Seen> {
        let seen = |tx: &mut dyn crate::Tx| -> Result<Seen> {
            let b = tx.subscription(branch, s2.id)?.expect("s2");
            let cycle = tx.subscription_cycle_invoice(s3.id, 7)?;
            let freezes = tx.subscription_freezes(s1.id)?.len();
            let card = tx.latest_active_card(c1.id)?.map(|c| c.gateway_token);
            let a = tx.subscription(branch, s1.id)?.expect("s1");
            Ok((a.description, cycle, b.latest_invoice_paid, freezes, card, a.items.len()))
        };
        match k {
            0 => {
                tx.prefetch_renewals(&ids)?;
                assert_eq!(tx.subscription(other_branch, s1.id)?, None, "another branch's");
                // One row changed alone, the other marked paid; a cycle recorded.
                let mut row = tx.subscription_row(branch, s1.id)?.expect("s1");
                row.description = Some("changed".into());
                tx.update_subscription_row(&row)?;
                assert!(tx.mark_latest_invoice_paid(branch, s2.id, inv2, &[SubscriptionStatus::Inactive], w.now())?);
                tx.insert_subscription_cycle(s3.id, 7, inv2)?;
                seen(tx)
            }
            1 => {
                tx.prefetch_renewals(&ids)?;
                // A freeze and a card saved, the items changed.
                let f = crate::subscription::Freeze {
                    id: crate::ids::FreezeId::new(),
                    org_id: s.org_id(),
                    branch_id: branch,
                    subscription_id: s1.id,
                    start: w.now() + Duration::days(3),
                    end: None,
                    notes: None,
                    invoice_id: None,
                    state: crate::subscription::FreezeState::Scheduled,
                    deleted_at: None,
                    created_at: w.now(),
                    updated_at: None,
                };
                tx.insert_freeze(&f)?;
                tx.insert_card(&new_card)?;
                let mut one = tx.subscription(branch, s1.id)?.expect("s1");
                let mut extra = one.items[0].clone();
                extra.id = crate::ids::SubscriptionItemId::new();
                extra.line.id = crate::ids::InvoiceItemId(extra.id.0);
                one.items.push(extra);
                tx.update_subscription(&one)?;
                seen(tx)
            }
            _ => {
                tx.prefetch_renewals(&ids)?;
                seen(tx)
            }
        }
    });
    let want0: Seen = (Some("changed".into()), Some(inv2), true, 0, Some(old_token), 1);
    assert_eq!(results[0], Ok(want0.clone()));
    let want1: Seen = (want0.0.clone(), want0.1, true, 1, Some("tok-new".into()), 2);
    assert_eq!(results[1], Ok(want1.clone()));
    assert_eq!(results[2], Ok(want1.clone()), "read ahead after the writes");
    assert_eq!(results[3], Ok(want1));
}

/// A new world with a monthly product of 100.00, a consumer, and an invoice of the one for the
/// other.
/// A batch item's update of a row that is not there: refused as `NotFound`.
fn assert_not_found<T: std::fmt::Debug>(r: &Result<T>) {
    assert!(matches!(r, Err(Error::Store(crate::error::StoreError::NotFound(_)))), "{r:?}");
}

fn an_invoice_of_a_monthly_product<H: Harness>() -> (World<H::S>, crate::product::Product, crate::consumer::Consumer, Invoice) {
    let w = World::new(H::store());
    let s = &w.admin;
    let gym = monthly(&w, s, "100.00");
    let c = consumer(&w, s, false);
    let a = create_invoice(&w, s, invoice_body(c.id, &[(gym.id, 1)], &[]));
    (w, gym, c, a)
}

/// `prefetch_invoices` is a hint: whatever a store read ahead, every later read in the
/// transaction answers what the database holds then, after the transaction's own writes: an
/// invoice's row changed, a payment changed, a consumer changed; and an invoice of another branch
/// is not found.
pub fn prefetched_outcome_reads_follow_the_writes<H: Harness>() {
    let (w, gym, c, a) = an_invoice_of_a_monthly_product::<H>();
    let s = &w.admin;
    let branch = s.branch.id;
    let b = create_invoice(&w, s, invoice_body(c.id, &[(gym.id, 2)], &[]));
    let (_, b_pays) = w.billing.invoices().get(s, b.id).unwrap().into_parts();
    let c = w.read(|tx| tx.consumer(branch, c.id)).unwrap();
    let other_branch = w.other_org("Elsewhere", false).branch.id;
    let ids = [a.id, b.id];
    type Seen = (Option<String>, Option<PaymentMethod>, String);
    let results = w.billing.engine().store.write_each(&[0usize, 1, 2], |tx, k| -> Result<Seen> {
        tx.prefetch_invoices(&ids)?;
        if *k == 0 {
            assert_eq!(tx.invoice(other_branch, a.id)?, None, "another branch's");
            // Written from copies read before the batch, so that what was read ahead is what
            // the reads below would answer unless it is forgotten.
            let mut row = a.clone();
            row.description = Some("changed".into());
            tx.update_invoice_row(&row)?;
            let mut pay = b_pays[0].clone();
            pay.method = Some(PaymentMethod::Cash);
            tx.update_payment(&pay)?;
        }
        if *k == 1 {
            let mut who = c.clone();
            who.name = "Renamed".into();
            tx.update_consumer(&who)?;
        }
        let inv = tx.invoice(branch, a.id)?.expect("a");
        let method = tx.invoice_payments(b.id)?.first().and_then(|p| p.method);
        let name = tx.consumer(branch, inv.consumer_id)?.expect("c").name;
        Ok((inv.description, method, name))
    });
    let before = c.name.clone();
    assert_eq!(results[0], Ok((Some("changed".into()), Some(PaymentMethod::Cash), before)));
    assert_eq!(results[1], Ok((Some("changed".into()), Some(PaymentMethod::Cash), "Renamed".into())));
    assert_eq!(
        results[2],
        Ok((Some("changed".into()), Some(PaymentMethod::Cash), "Renamed".into())),
        "read ahead after the writes"
    );
}

/// A batch's updates of invoices and payments (which a store may send late, together: an
/// outcome batch writes both per renewal) are what each item would have written alone: each
/// item reads the rows as the items before it left them, no closure of a batch whose items all
/// succeed runs twice, the rows are stored as written, and an update of a payment that does not
/// exist fails that item alone.
pub fn a_batch_updates_invoices_and_payments_as_each_would<H: Harness>() {
    let (w, _, _, a) = an_invoice_of_a_monthly_product::<H>();
    let s = &w.admin;
    let branch = s.branch.id;
    let (_, a_pays) = w.billing.invoices().get(s, a.id).unwrap().into_parts();
    let (d0, n0) = (a.description.clone().unwrap_or_default(), a_pays[0].note.clone().unwrap_or_default());
    let mut calls = 0;
    let results = w
        .billing
        .engine()
        .store
        .write_each(&[0usize, 1, 2], |tx, k| -> Result<(Option<String>, Option<String>)> {
            calls += 1;
            // The payments first (reading the invoice could send the payments' updates along),
            // but in the last item, the invoice first.
            let (mut pay, mut inv) = match k {
                2 => {
                    let inv = tx.invoice(branch, a.id)?.expect("a");
                    (tx.invoice_payments(a.id)?.remove(0), inv)
                }
                _ => {
                    let pay = tx.invoice_payments(a.id)?.remove(0);
                    (pay, tx.invoice(branch, a.id)?.expect("a"))
                }
            };
            inv.description = Some(format!("{}{k}", inv.description.unwrap_or_default()));
            pay.note = Some(format!("{}{k}", pay.note.unwrap_or_default()));
            tx.update_invoice_row(&inv)?;
            // Twice: a row written again before anything is sent.
            tx.update_payment(&pay)?;
            tx.update_payment(&pay)?;
            Ok((inv.description, pay.note))
        });
    let both = |tail: &str| Ok((Some(format!("{d0}{tail}")), Some(format!("{n0}{tail}"))));
    assert_eq!(results, vec![both("0"), both("01"), both("012")], "each item reads the one before it");
    assert_eq!(calls, 3, "no item ran twice");
    let (stored, pays) = w.billing.invoices().get(s, a.id).unwrap().into_parts();
    assert_eq!((stored.description, pays[0].note.clone()), (Some(format!("{d0}012")), Some(format!("{n0}012"))));
    assert_eq!(pays.len(), a_pays.len(), "no payment added");

    let mut ghost = a_pays[0].clone();
    ghost.id = crate::ids::PaymentId::new();
    let mut ghost_invoice = a.clone();
    ghost_invoice.id = crate::ids::InvoiceId::new();
    let results = w.billing.engine().store.write_each(&[0usize, 1, 2], |tx, k| -> Result<()> {
        match k {
            0 => Ok(tx.update_payment(&ghost)?),
            2 => Ok(tx.update_invoice_row(&ghost_invoice)?),
            _ => {
                let mut inv = tx.invoice(branch, a.id)?.expect("a");
                inv.description = Some("kept".into());
                Ok(tx.update_invoice_row(&inv)?)
            }
        }
    });
    assert_not_found(&results[0]);
    assert_eq!(results[1], Ok(()));
    assert_not_found(&results[2]);
    assert_eq!(w.read(|tx| tx.payment(branch, ghost.id)), None, "the missing payment is not made");
    assert_eq!(w.read(|tx| tx.invoice(branch, ghost_invoice.id)), None, "nor the missing invoice");
    assert_eq!(w.billing.invoices().get(s, a.id).unwrap().invoice.description.as_deref(), Some("kept"));
}

/// A subscription's row updated by an item of a `write_each` is what the items after it read
/// and mark, even where a store sends the updates together at the end of the batch
/// (PostgreSQL's first pass); a subscription that is not there fails its item alone.
pub fn a_batch_updates_subscriptions_as_each_would<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "115.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-31T10:00:00Z"));
    let (branch, latest) = (sub.branch_id, sub.latest_invoice_id.expect("the first invoice"));
    let d0 = sub.description.clone().unwrap_or_default();
    let at = ts("2026-02-01T00:00:00Z");
    let mut calls = 0;
    let results = w.billing.engine().store.write_each(&[0usize, 1, 2], |tx, k| -> Result<(Option<String>, bool)> {
        calls += 1;
        if *k == 2 {
            // The last item marks the invoice paid before it reads anything: only if it sees
            // the status the first item set.
            let marked = tx.mark_latest_invoice_paid(branch, sub.id, latest, &[SubscriptionStatus::Active], at)?;
            let row = tx.subscription(branch, sub.id)?.expect("the subscription");
            return Ok((row.description, marked));
        }
        let mut row = tx.subscription(branch, sub.id)?.expect("the subscription");
        row.description = Some(format!("{}{k}", row.description.unwrap_or_default()));
        row.status = SubscriptionStatus::Active;
        // Twice: a row written again before anything is sent.
        tx.update_subscription_row(&row)?;
        tx.update_subscription_row(&row)?;
        Ok((row.description, row.latest_invoice_paid))
    });
    let seen = |tail: &str, paid| Ok((Some(format!("{d0}{tail}")), paid));
    assert_eq!(
        results,
        vec![seen("0", false), seen("01", false), seen("01", true)],
        "each item reads the one before it"
    );
    assert_eq!(calls, 3, "no item ran twice");
    let stored = w.read(|tx| tx.subscription(branch, sub.id)).expect("the subscription");
    assert_eq!(stored.description, Some(format!("{d0}01")));
    assert_eq!(
        (stored.status, stored.latest_invoice_paid, stored.updated_at),
        (SubscriptionStatus::Active, true, Some(at))
    );
    assert_eq!(stored.items, sub.items, "the items stay");

    let mut ghost = stored.clone();
    ghost.id = SubscriptionId::new();
    let results = w.billing.engine().store.write_each(&[0usize, 1], |tx, k| -> Result<()> {
        match k {
            0 => Ok(tx.update_subscription_row(&ghost)?),
            _ => {
                let mut row = tx.subscription(branch, sub.id)?.expect("the subscription");
                row.description = Some("kept".into());
                Ok(tx.update_subscription_row(&row)?)
            }
        }
    });
    assert_not_found(&results[0]);
    assert_eq!(results[1], Ok(()));
    assert_eq!(w.read(|tx| tx.subscription(branch, ghost.id)), None, "the missing subscription is not made");
    let stored = w.read(|tx| tx.subscription(branch, sub.id)).expect("the subscription");
    assert_eq!(stored.description.as_deref(), Some("kept"));
}

/// Marking subscriptions' latest invoices paid in a `write_each` that read its invoices ahead
/// (an outcome batch) answers and writes as each mark alone would, even where a store answers
/// from what it read ahead and sends the marks at the end (PostgreSQL's first pass): a mark
/// sees the marks and row updates of the items before it, and a refused mark writes nothing.
pub fn a_batch_marks_latest_invoices_paid_as_each_would<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let gym = monthly(&w, s, "115.00");
    let subs: Vec<Subscription> = (0..6)
        .map(|_| {
            let c = consumer(&w, s, false);
            create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-31T10:00:00Z"))
        })
        .collect();
    let (a, b, c, d, e) = (&subs[0], &subs[1], &subs[2], &subs[3], &subs[4]);
    let branch = a.branch_id;
    let latest = |x: &Subscription| x.latest_invoice_id.expect("the first invoice");
    // Marked before the batch.
    let before = ts("2026-01-31T12:00:00Z");
    assert!(w.write(|tx| tx.mark_latest_invoice_paid(branch, subs[5].id, latest(&subs[5]), &[SubscriptionStatus::Inactive], before)));
    let f = &w.read(|tx| tx.subscription(branch, subs[5].id)).expect("f");
    let invoices: Vec<InvoiceId> = subs.iter().map(latest).collect();
    let at = ts("2026-02-01T00:00:00Z");
    use SubscriptionStatus::{Active, Inactive};
    let mut calls = 0;
    let results = w.billing.engine().store.write_each(&[0usize, 1, 2, 3, 4, 5], |tx, k| -> Result<bool> {
        calls += 1;
        if *k == 0 {
            // Each run of the batch starts here.
            tx.prefetch_invoices(&invoices)?;
        }
        let mark = |tx: &mut dyn crate::store::Tx, x: &Subscription, invoice, statuses: &[SubscriptionStatus]| {
            tx.mark_latest_invoice_paid(branch, x.id, invoice, statuses, at)
        };
        Ok(match k {
            0 => mark(tx, a, latest(a), &[Inactive])?,
            // Marked already, by the item before.
            1 => mark(tx, a, latest(a), &[Inactive, Active])?,
            // The row changed first: the mark sees the new status.
            2 => {
                let mut row = tx.subscription(branch, b.id)?.expect("b");
                row.status = Active;
                tx.update_subscription_row(&row)?;
                mark(tx, b, latest(b), &[Inactive])?
            }
            3 => mark(tx, b, latest(b), &[Active])?,
            // Refused (each the first mark of its subscription): another invoice, no status,
            // another branch, marked already.
            4 => {
                mark(tx, f, latest(f), &[Inactive])?
                    || mark(tx, c, latest(a), &[Inactive])?
                    || mark(tx, d, latest(d), &[])?
                    || tx.mark_latest_invoice_paid(crate::ids::BranchId::new(), e.id, latest(e), &[Inactive], at)?
            }
            // What the marks wrote is what the next item reads.
            _ => tx.subscription(branch, a.id)?.expect("a").latest_invoice_paid,
        })
    });
    assert_eq!(results, vec![Ok(true), Ok(false), Ok(false), Ok(true), Ok(false), Ok(true)]);
    assert_eq!(calls, 6, "no item ran twice");
    let stored = |x: &Subscription| w.read(|tx| tx.subscription(branch, x.id)).expect("the subscription");
    let (sa, sb) = (stored(a), stored(b));
    assert_eq!((sa.status, sa.latest_invoice_paid, sa.updated_at), (Inactive, true, Some(at)));
    assert_eq!((sb.status, sb.latest_invoice_paid, sb.updated_at), (Active, true, Some(at)));
    for x in [c, d, e, f] {
        assert_eq!(&stored(x), x, "a refused mark writes nothing");
    }
}

/// Rows a batch read ahead and then wrote are stored as each write alone would store them, even
/// where a store sends only the columns that differ from what it read ahead (PostgreSQL's first
/// pass): a write of the row in between made another way (the whole subscription with its
/// items; its latest invoice marked paid) is overwritten like any column, and a change written
/// and then undone leaves the row as it was.
pub fn rows_read_ahead_are_written_as_each_would<H: Harness>() {
    let (w, gym, c, a) = an_invoice_of_a_monthly_product::<H>();
    let s = &w.admin;
    let subs: Vec<Subscription> = (0..3).map(|_| create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-31T10:00:00Z"))).collect();
    let ids: Vec<SubscriptionId> = subs.iter().map(|x| x.id).collect();
    let branch = s.branch.id;
    let at = ts("2026-02-01T00:00:00Z");
    let read_as: std::cell::RefCell<Vec<Option<Subscription>>> = std::cell::RefCell::new(vec![None; 3]);
    let results = w.billing.engine().store.write_each(&[0usize, 1, 2], |tx, k| -> Result<()> {
        if *k == 0 {
            tx.prefetch_renewals(&ids)?;
        }
        let sub = &subs[*k];
        let mut row = tx.subscription(branch, sub.id)?.expect("the subscription");
        read_as.borrow_mut()[*k] = Some(row.clone());
        // (The whole write last: a store may forget all it read ahead on such a write.)
        match k {
            0 => assert!(tx.mark_latest_invoice_paid(branch, sub.id, sub.latest_invoice_id.unwrap(), &[SubscriptionStatus::Inactive], at)?),
            1 => {
                let mut undone = row.clone();
                undone.description = Some("undone".into());
                tx.update_subscription_row(&undone)?;
            }
            _ => {
                let mut whole = row.clone();
                whole.description = Some("written whole".into());
                whole.renewal_failures = 3;
                tx.update_subscription(&whole)?;
            }
        }
        // The row as read, with one change.
        row.until_cycle_number = Some(9);
        tx.update_subscription_row(&row)?;
        Ok(())
    });
    assert_eq!(results, vec![Ok(()), Ok(()), Ok(())]);
    for (k, sub) in subs.iter().enumerate() {
        let stored = w.read(|tx| tx.subscription(branch, sub.id)).expect("the subscription");
        let mut want = read_as.borrow()[k].clone().expect("read");
        want.until_cycle_number = Some(9);
        assert_eq!(
            (
                &stored.description,
                stored.renewal_failures,
                stored.latest_invoice_paid,
                stored.updated_at,
                stored.until_cycle_number
            ),
            (
                &want.description,
                want.renewal_failures,
                want.latest_invoice_paid,
                want.updated_at,
                want.until_cycle_number
            ),
            "subscription {k}: the row as its last write says"
        );
        assert!(!stored.latest_invoice_paid && stored.description == sub.description);
    }

    // An outcome batch's invoice and payment, each changed, changed back, and changed again.
    let (_, pays) = w.billing.invoices().get(s, a.id).unwrap().into_parts();
    let results = w.billing.engine().store.write_each(&[0usize, 1], |tx, k| -> Result<()> {
        tx.prefetch_invoices(&[a.id])?;
        if *k == 1 {
            return Ok(());
        }
        let inv = tx.invoice(branch, a.id)?.expect("a");
        let pay = tx.invoice_payments(a.id)?.remove(0);
        for note in ["changed", "back", "again"] {
            let (mut inv, mut pay) = (inv.clone(), pay.clone());
            if note != "back" {
                inv.description = Some(note.into());
                pay.note = Some(note.into());
            }
            tx.update_invoice_row(&inv)?;
            tx.update_payment(&pay)?;
        }
        let (mut inv, mut pay) = (inv, pay);
        inv.description = a.description.clone();
        pay.note = pays[0].note.clone();
        tx.update_invoice_row(&inv)?;
        tx.update_payment(&pay)?;
        Ok(())
    });
    assert_eq!(results, vec![Ok(()), Ok(())]);
    let (stored, stored_pays) = w.billing.invoices().get(s, a.id).unwrap().into_parts();
    assert_eq!((stored.description, stored_pays[0].note.clone()), (a.description.clone(), pays[0].note.clone()));
}
