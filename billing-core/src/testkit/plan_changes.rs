//! Plan changes, the next invoice prepared ahead, and the organization's subscription
//! settings: immediate fields of an update; a plan change scheduled with its diff, amounts and
//! preview, then applied at the period end and billed exactly as previewed; replaced and
//! withdrawn changes; refusals writing nothing; an interval change re-anchoring the cycles;
//! kept products keeping their price; the lead time preparing the next invoice, prepared once
//! whatever runs it; a prepared invoice re-issued for a change, withdrawn on cancellation and
//! prepared again on uncancel; a paid prepared invoice kept; the dunning schedule of the
//! organization; the settings' validation; the store's plan-change rows and cycle re-pointing.

use super::invoices::{consumer, coupon, product};
use super::subscriptions::{advance, create, everything, invoices_of, monthly, pay_first, sub_body, sub_events, subscription_json};
use super::{expect_code, expect_invalid, expect_unique, money, ts, Harness, World};
use crate::auth::Scope;
use crate::error::{Code, Error, Result};
use crate::event::EventType;
use crate::ids::{CouponId, InvoiceId, SubscriptionId, WorkId};
use crate::invoice::{Invoice, InvoiceStatus};
use crate::money::{Currency, Money};
use crate::org::settings::SettingsPatch;
use crate::payment::PaymentStatus;
use crate::product::{parse_price_update, RecurringInterval};
use crate::sandbox::Advance;
use crate::store::Store;
use crate::subscription::plan_change::DiffKind;
use crate::subscription::*;
use crate::work::DueWork;
use chrono::Duration;
use serde_json::{json, Value};

fn sar(a: &str) -> Money {
    money(a, Currency::SAR)
}

fn update_body(items: &[(crate::ids::ProductId, u32)], coupons: &[CouponId]) -> Value {
    json!({
        "items": items.iter().map(|(p, q)| json!({"product_id": p, "quantity": q})).collect::<Vec<_>>(),
        "coupons": coupons,
    })
}

fn try_update<S: Store>(w: &World<S>, id: SubscriptionId, v: &Value) -> Result<Subscription> {
    w.billing
        .subscriptions()
        .update(&w.fresh_admin(), id, &SubscriptionUpdate::parse(v)?)
        .map(|d| d.subscription)
}

fn update<S: Store>(w: &World<S>, id: SubscriptionId, v: Value) -> Subscription {
    try_update(w, id, &v).unwrap_or_else(|e| panic!("update {v}: {e:?}"))
}

fn pending<S: Store>(w: &World<S>, id: SubscriptionId) -> Option<PlanChange> {
    w.read(|tx| tx.scheduled_plan_change(id))
}

fn history<S: Store>(w: &World<S>, id: SubscriptionId) -> Vec<PlanChangeStatus> {
    w.read(|tx| tx.plan_changes(id)).into_iter().map(|c| c.status).collect()
}

fn count<S: Store>(w: &World<S>, id: SubscriptionId, t: EventType) -> usize {
    sub_events(w, id).iter().filter(|e| **e == t).count()
}

fn set_settings<S: Store>(w: &World<S>, v: Value) {
    w.billing.org().update_settings(&w.admin, &SettingsPatch::parse(&v).unwrap()).unwrap();
}

fn to<S: Store>(w: &World<S>, at: &str) {
    w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(ts(at))).unwrap();
}

fn invoice<S: Store>(w: &World<S>, id: InvoiceId) -> Invoice {
    w.billing.invoices().get(&w.fresh_admin(), id).unwrap().invoice
}

/// Every invoice carrying the subscription (re-issued ones too), oldest first.
fn all_invoices<S: Store>(w: &World<S>, id: SubscriptionId) -> Vec<Invoice> {
    let q = crate::list::QueryParams::parse(&format!("subscription_id={id}&limit=100&sort_direction=asc"));
    let req = crate::invoice::parse_invoice_list(&q).unwrap();
    let ids: Vec<InvoiceId> = w
        .billing
        .invoices()
        .list(&w.fresh_admin(), &req)
        .unwrap()
        .items
        .iter()
        .map(|d| d.invoice.id)
        .collect();
    ids.into_iter().map(|i| invoice(w, i)).collect()
}

/// One invoice per cycle that is not canceled, and it is the cycle's row.
fn one_live_invoice_per_cycle<S: Store>(w: &World<S>, id: SubscriptionId) {
    let rows = w.read(|tx| tx.subscription_cycles(id));
    let live: Vec<Invoice> = all_invoices(w, id).into_iter().filter(|i| i.status != InvoiceStatus::Canceled).collect();
    for inv in &live {
        let same: Vec<&Invoice> = live.iter().filter(|x| x.scheduled_on == inv.scheduled_on).collect();
        assert_eq!(same.len(), 1, "two live invoices due at {}", inv.scheduled_on);
        assert!(rows.iter().any(|(_, i)| *i == inv.id), "live invoice {} is no cycle's", inv.id);
    }
}

fn kinds(c: &PlanChange) -> Vec<DiffKind> {
    c.changes.iter().map(|e| e.kind).collect()
}

fn card<S: Store>(w: &World<S>, s: &Scope, c: crate::ids::ConsumerId) {
    w.billing.payments().save_card(s, c, "4111111111111111", 12, 2035, true).unwrap();
}

/// Description, `until_cycle_number`, payment-method overrides and
/// `exclude_coupons_if_installments` apply at once (SUBSCRIPTION_PLAN_UPDATED, once per
/// update that changes something); the same plan schedules nothing; `null` clears.
pub fn immediate_fields_apply_at_once<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    let mut body = update_body(&[(gym.id, 1)], &[]);
    body["description"] = json!("Gym, upstairs");
    body["until_cycle_number"] = json!(6);
    body["override_payment_methods"] = json!({"visa": false, "subscription_auto_renewal": false});
    body["exclude_coupons_if_installments"] = json!(true);
    body["organization_consumer_id"] = json!(c.id);
    body["currency"] = json!("SAR");
    let got = update(&w, sub.id, body.clone());
    assert_eq!(got.description.as_deref(), Some("Gym, upstairs"));
    assert_eq!(got.until_cycle_number, Some(6));
    assert_eq!(got.payment_methods.visa, Some(false));
    assert!(!got.payment_methods.auto_renewal());
    assert!(got.exclude_coupons_if_installments);
    assert_eq!((got.amount, got.items.len(), got.current_cycle_number), (sub.amount, 1, 1));
    assert_eq!(w.billing.subscriptions().get(s, sub.id).unwrap().subscription, got);
    assert_eq!(pending(&w, sub.id), None);
    assert_eq!(sub_events(&w, sub.id), vec![EventType::SubscriptionCreated, EventType::SubscriptionPlanUpdated]);
    // The same again changes nothing.
    update(&w, sub.id, body);
    assert_eq!(count(&w, sub.id, EventType::SubscriptionPlanUpdated), 1);
    let mut clear = update_body(&[(gym.id, 1)], &[]);
    clear["description"] = Value::Null;
    clear["until_cycle_number"] = Value::Null;
    let got = update(&w, sub.id, clear);
    assert_eq!((got.description, got.until_cycle_number), (None, None));
    assert_eq!(count(&w, sub.id, EventType::SubscriptionPlanUpdated), 2);
    let v = subscription_json(&w.billing, s, sub.id).unwrap();
    assert_eq!(v["pending_change"], Value::Null);
    assert_eq!(v["override_payment_methods"]["subscription_auto_renewal"], false);
}

/// Items and coupons changed: a SCHEDULED change effective at the period end, with its target
/// items, diff, amounts and preview; the running cycle is unchanged. At the period end it is
/// applied first (SUBSCRIPTION_PLAN_CHANGED, before the new cycle's INVOICE_CREATED) and the
/// new cycle's invoice is the preview, to the minor unit; new coupons count a redemption.
pub fn plan_change_is_scheduled_then_billed_as_previewed<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    card(&w, s, c.id);
    let gym = monthly(&w, s, "100.00");
    let towel = product(&w, s, "20.00", json!({"type": "RECURRING", "recurring_interval": "MONTH", "name": "Towel"}));
    let ten = coupon(&w, s, json!({"name": "TEN", "discount_value": 10, "is_percentage": true}));
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    w.tick(3600);
    let got = update(&w, sub.id, update_body(&[(gym.id, 2), (towel.id, 1)], &[ten.id]));
    // The running cycle bills what it did.
    assert_eq!((got.amount, got.items.len(), got.coupon_ids.len()), (sar("100.00"), 1, 0));
    let p = pending(&w, sub.id).expect("a scheduled change");
    assert_eq!(p.status, PlanChangeStatus::Scheduled);
    assert_eq!((p.effective_cycle, p.effective_at), (2, ts("2026-02-15T09:00:00Z")));
    assert_eq!(kinds(&p), [DiffKind::QuantityIncreased, DiffKind::ProductAdded, DiffKind::CouponAdded]);
    assert_eq!(p.changes[2].product_id, None);
    assert_eq!(
        (p.current_amount, p.target.amount, p.delta_amount()),
        (sar("100.00"), sar("198.00"), sar("98.00"))
    );
    let pv = &p.preview;
    assert_eq!(
        (pv.cycle, pv.period_start, pv.period_end, pv.issue_at, pv.due_at),
        (
            2,
            ts("2026-02-15T09:00:00Z"),
            ts("2026-03-15T09:00:00Z"),
            ts("2026-02-15T09:00:00Z"),
            ts("2026-02-15T09:00:00Z")
        )
    );
    assert_eq!((pv.subtotal, pv.discount_total, pv.total_amount), (sar("220.00"), sar("22.00"), sar("198.00")));
    let v = subscription_json(&w.billing, s, sub.id).unwrap();
    let pc = &v["pending_change"];
    assert_eq!(pc["id"], json!(p.id));
    assert_eq!((pc["target_amount"].as_str(), pc["current_amount"].as_str()), (Some("198.00"), Some("100.00")));
    assert_eq!(
        (pc["delta_amount"].as_str(), pc["delta_amount_per_month"].as_str()),
        (Some("98.00"), Some("98.00"))
    );
    assert_eq!(pc["target_items"][0]["quantity"], 2);
    assert_eq!(pc["target_items"][1]["product_name"], "Towel");
    assert_eq!(pc["target_subscription_coupon_ids"], json!([ten.id]));
    assert_eq!(pc["changes"][1]["kind"], "PRODUCT_ADDED");
    assert_eq!(pc["changes"][1]["label"], "Towel added (quantity 1)");
    assert_eq!(pc["next_invoice_preview"]["total_amount"], "198.00");
    assert_eq!(pc["invoice_was_reissued"], false);
    assert_eq!(count(&w, sub.id, EventType::SubscriptionPlanChangeScheduled), 1);
    assert_eq!(w.billing.coupons().get(s, ten.id).unwrap().redemptions, 0, "redeemed when applied");

    to(&w, "2026-02-15T09:00:01Z");
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!((got.current_cycle_number, got.amount, got.items.len()), (2, sar("198.00"), 2));
    assert_eq!(got.items[0].id, sub.items[0].id, "the kept line keeps its item");
    assert!(got.items[0].updated_at.is_some());
    assert_eq!(got.coupon_ids, vec![ten.id]);
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.len(), 2);
    let second = &invs[1].1;
    assert_eq!(second.total_amount.minor_units(), pv.total_amount.minor_units());
    assert_eq!((second.total_amount, second.original_amount), (pv.total_amount, pv.subtotal));
    assert_eq!(second.scheduled_on, pv.period_start);
    assert_eq!(second.status, InvoiceStatus::Completed, "charged to the card");
    assert_eq!(pending(&w, sub.id), None);
    assert_eq!(history(&w, sub.id), vec![PlanChangeStatus::Applied]);
    assert_eq!(w.billing.coupons().get(s, ten.id).unwrap().redemptions, 1);
    // PLAN_CHANGED before the new cycle's invoice.
    let all: Vec<(EventType, uuid::Uuid)> = w
        .read(|tx| tx.list_events(s.org_id()))
        .into_iter()
        .map(|e| (e.event_type, e.entity_id))
        .collect();
    let changed = all.iter().position(|e| *e == (EventType::SubscriptionPlanChanged, sub.id.0)).unwrap();
    let created = all.iter().position(|e| *e == (EventType::InvoiceCreated, second.id.0)).unwrap();
    assert!(changed < created, "{all:?}");
    // The next cycle bills the new plan too.
    to(&w, "2026-03-15T09:00:01Z");
    assert_eq!(invoices_of(&w, sub.id)[2].1.total_amount, sar("198.00"));
}

/// A second update replaces the pending change (one SCHEDULED, the first REPLACED); the same
/// target again changes nothing; the plan in force withdraws it (CANCELED,
/// SUBSCRIPTION_PLAN_CHANGE_CANCELED); DELETE pending-change withdraws it, and is a no-op
/// without one. A withdrawn change bills nothing.
pub fn second_update_replaces_and_delete_withdraws<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    update(&w, sub.id, update_body(&[(gym.id, 2)], &[]));
    let first = pending(&w, sub.id).unwrap();
    update(&w, sub.id, update_body(&[(gym.id, 3)], &[]));
    let second = pending(&w, sub.id).unwrap();
    assert_ne!(first.id, second.id);
    assert_eq!(second.target.amount, sar("300.00"));
    assert_eq!(history(&w, sub.id), vec![PlanChangeStatus::Replaced, PlanChangeStatus::Scheduled]);
    assert_eq!(count(&w, sub.id, EventType::SubscriptionPlanChangeScheduled), 2);
    update(&w, sub.id, update_body(&[(gym.id, 3)], &[]));
    assert_eq!(pending(&w, sub.id).map(|p| p.id), Some(second.id));
    assert_eq!(count(&w, sub.id, EventType::SubscriptionPlanChangeScheduled), 2);
    // Back to the plan in force.
    update(&w, sub.id, update_body(&[(gym.id, 1)], &[]));
    assert_eq!(pending(&w, sub.id), None);
    assert_eq!(count(&w, sub.id, EventType::SubscriptionPlanChangeCanceled), 1);
    // DELETE without a change: nothing.
    let before = everything(&w);
    w.billing.subscriptions().cancel_pending_change(s, sub.id).unwrap();
    assert_eq!(everything(&w), before);
    update(&w, sub.id, update_body(&[(gym.id, 2)], &[]));
    w.billing.subscriptions().cancel_pending_change(s, sub.id).unwrap();
    assert_eq!(pending(&w, sub.id), None);
    assert_eq!(
        history(&w, sub.id),
        vec![PlanChangeStatus::Replaced, PlanChangeStatus::Canceled, PlanChangeStatus::Canceled]
    );
    assert_eq!(sub_events(&w, sub.id).last(), Some(&EventType::SubscriptionPlanChangeCanceled));
    expect_code(w.billing.subscriptions().cancel_pending_change(s, SubscriptionId::new()), Code::NOT_FOUND);
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    advance(&w, Duration::days(32));
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs[1].1.total_amount, sar("100.00"));
    assert_eq!(count(&w, sub.id, EventType::SubscriptionPlanChanged), 0);
}

/// Refused updates write nothing: a CANCELED subscription (400 INVALID_STATUS), another
/// consumer or currency, a one-off product, products of different intervals, interval fields
/// that are not the products', an unknown product or coupon (404), an inactive coupon, an
/// `until_cycle_number` before the current cycle (422 at the field).
pub fn update_refusals_write_nothing<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let other = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let yearly = product(&w, s, "900.00", json!({"type": "RECURRING", "recurring_interval": "YEAR"}));
    let one_off = product(&w, s, "10.00", json!({}));
    let off = coupon(&w, s, json!({"name": "OFF", "discount_value": 10, "is_percentage": true}));
    w.billing
        .coupons()
        .update(s, off.id, crate::coupon::CouponFields::parse(&json!({"is_active": false}), false).unwrap())
        .unwrap();
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    let before = everything(&w);
    let r = try_update(&w, sub.id, &update_body(&[(gym.id, 1), (one_off.id, 1)], &[]));
    match r {
        Err(Error::Validation(d)) => assert_eq!(serde_json::to_value(&d[0].loc).unwrap(), json!(["body", "items", 1, "product_id"])),
        other => panic!("{other:?}"),
    }
    expect_invalid(try_update(&w, sub.id, &update_body(&[(gym.id, 1), (yearly.id, 1)], &[])), "items");
    let mut b = update_body(&[(gym.id, 2)], &[]);
    b["recurring_interval"] = json!("YEAR");
    expect_invalid(try_update(&w, sub.id, &b), "recurring_interval");
    let mut b = update_body(&[(gym.id, 1)], &[]);
    b["recurring_interval_count"] = json!(2);
    expect_invalid(try_update(&w, sub.id, &b), "recurring_interval_count");
    expect_code(try_update(&w, sub.id, &update_body(&[(crate::ids::ProductId::new(), 1)], &[])), Code::NOT_FOUND);
    expect_code(try_update(&w, sub.id, &update_body(&[(gym.id, 2)], &[CouponId::new()])), Code::NOT_FOUND);
    match try_update(&w, sub.id, &update_body(&[(gym.id, 2)], &[off.id])) {
        Err(Error::Validation(d)) => assert_eq!(serde_json::to_value(&d[0].loc).unwrap(), json!(["body", "coupons", 0])),
        other => panic!("{other:?}"),
    }
    let mut b = update_body(&[(gym.id, 2)], &[]);
    b["organization_consumer_id"] = json!(other.id);
    b["description"] = json!("never written");
    expect_invalid(try_update(&w, sub.id, &b), "organization_consumer_id");
    let mut b = update_body(&[(gym.id, 2)], &[]);
    b["currency"] = json!("USD");
    expect_invalid(try_update(&w, sub.id, &b), "currency");
    expect_code(try_update(&w, SubscriptionId::new(), &update_body(&[(gym.id, 2)], &[])), Code::NOT_FOUND);
    assert_eq!(everything(&w), before);
    // Another branch does not see it.
    let b = w.new_branch("Other");
    let scope = w.in_branch(b.id);
    let req = SubscriptionUpdate::parse(&update_body(&[(gym.id, 2)], &[])).unwrap();
    expect_code(w.billing.subscriptions().update(&scope, sub.id, &req).map(|d| d.subscription), Code::NOT_FOUND);
    expect_code(w.billing.subscriptions().cancel_pending_change(&scope, sub.id), Code::NOT_FOUND);

    // In cycle 2, it cannot end in cycle 1.
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    advance(&w, Duration::days(32));
    let before = everything(&w);
    let mut b = update_body(&[(gym.id, 1)], &[]);
    b["until_cycle_number"] = json!(1);
    expect_invalid(try_update(&w, sub.id, &b), "until_cycle_number");
    assert_eq!(everything(&w), before);
    // CANCELED: nothing changes any more.
    let ended = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-03-01T00:00:00Z"));
    w.billing.subscriptions().cancel(s, ended.id, SubscriptionCancel::default()).unwrap();
    let before = everything(&w);
    expect_code(try_update(&w, ended.id, &update_body(&[(gym.id, 2)], &[])), Code::INVALID_STATUS);
    let mut b = update_body(&[(gym.id, 1)], &[]);
    b["description"] = json!("x");
    expect_code(try_update(&w, ended.id, &b), Code::INVALID_STATUS);
    w.billing.subscriptions().cancel_pending_change(s, ended.id).unwrap();
    assert_eq!(everything(&w), before);
}

/// A monthly subscription anchored on Jan 31 moved to a quarterly product: INTERVAL_CHANGED
/// with PRODUCT_REPLACED; from the period end (Feb 28) the cycles are quarters counted from
/// there (May 28, Aug 28), each billed the new amount.
pub fn interval_change_reanchors_the_cycles<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    card(&w, s, c.id);
    let gym = monthly(&w, s, "100.00");
    let quarterly = product(
        &w,
        s,
        "270.00",
        json!({"type": "RECURRING", "recurring_interval": "QUARTER", "name": "Gym quarterly"}),
    );
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-31T10:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    let mut b = update_body(&[(quarterly.id, 1)], &[]);
    b["recurring_interval"] = json!("QUARTER");
    b["recurring_interval_count"] = json!(1);
    update(&w, sub.id, b);
    let p = pending(&w, sub.id).unwrap();
    assert_eq!(kinds(&p), [DiffKind::IntervalChanged, DiffKind::ProductReplaced]);
    assert_eq!(
        (p.changes[0].from_value.as_deref(), p.changes[0].to_value.as_deref()),
        (Some("1 MONTH"), Some("1 QUARTER"))
    );
    assert_eq!(p.changes[1].from_value, Some(gym.id.to_string()));
    assert_eq!(
        (p.preview.period_start, p.preview.period_end),
        (ts("2026-02-28T10:00:00Z"), ts("2026-05-28T10:00:00Z"))
    );
    let v = subscription_json(&w.billing, s, sub.id).unwrap();
    assert_eq!(v["pending_change"]["delta_amount_per_month"], "-10.00");
    assert_eq!(v["pending_change"]["target_recurring_interval"], "QUARTER");
    to(&w, "2026-02-28T10:00:01Z");
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!(
        (
            got.recurring_interval,
            got.current_cycle_number,
            got.current_period_start,
            got.current_period_end
        ),
        (RecurringInterval::Quarter, 2, ts("2026-02-28T10:00:00Z"), ts("2026-05-28T10:00:00Z"))
    );
    to(&w, "2026-08-28T10:00:01Z");
    let invs = invoices_of(&w, sub.id);
    let due: Vec<String> = invs.iter().map(|(_, i)| i.scheduled_on.format("%Y-%m-%d").to_string()).collect();
    assert_eq!(due, ["2026-01-31", "2026-02-28", "2026-05-28", "2026-08-28"]);
    assert!(invs[1..]
        .iter()
        .all(|(_, i)| i.total_amount == sar("270.00") && i.status == InvoiceStatus::Completed));
}

/// A product already on the plan keeps the unit price it was subscribed at when its quantity
/// changes (its catalog price changed since); a product new to the plan takes today's price.
pub fn kept_products_keep_their_price<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let pool = product(&w, s, "50.00", json!({"type": "RECURRING", "recurring_interval": "MONTH"}));
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    let price = gym.active_price(Currency::SAR).unwrap().id;
    w.billing
        .products()
        .update_price(s, gym.id, price, parse_price_update(&json!({"amount": 150})).unwrap())
        .unwrap();
    update(&w, sub.id, update_body(&[(gym.id, 2), (pool.id, 1)], &[]));
    let p = pending(&w, sub.id).unwrap();
    assert_eq!(p.target.items[0].line.unit_price, sar("100.00"));
    assert_eq!(p.target.amount, sar("250.00"));
    // A new subscription pays today's price.
    let fresh = create(&w, s, sub_body(c.id, &[(gym.id, 2), (pool.id, 1)], "2026-01-15T09:00:00Z"));
    assert_eq!(fresh.amount, sar("350.00"));
}

/// With a lead time of 3 days the next cycle's invoice is prepared 3 days before the period
/// end (due at it, not yet the latest invoice, not charged), once whatever runs the
/// preparation; at the period end it becomes the latest invoice and is charged.
pub fn lead_time_prepares_the_next_invoice<H: Harness>() {
    let w = World::new(H::store());
    set_settings(&w, json!({"subscription_invoice_lead_days": 3}));
    let s = &w.fresh_admin();
    let c = consumer(&w, s, false);
    card(&w, s, c.id);
    let gym = monthly(&w, s, "100.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    to(&w, "2026-02-12T08:59:00Z");
    assert_eq!(invoices_of(&w, sub.id).len(), 1);
    to(&w, "2026-02-12T09:00:01Z");
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.len(), 2);
    let prepared = &invs[1].1;
    assert_eq!(
        (invs[1].0, prepared.scheduled_on, prepared.status),
        (2, ts("2026-02-15T09:00:00Z"), InvoiceStatus::Created)
    );
    assert!(prepared.created_at >= ts("2026-02-12T09:00:00Z") && prepared.created_at <= ts("2026-02-12T09:00:01Z"));
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!((got.current_cycle_number, got.latest_invoice_id), (1, sub.latest_invoice_id));
    assert!(got.latest_invoice_paid);
    // A second preparation item for the same cycle finds the invoice.
    let payload = json!({"branch_id": sub.branch_id, "subscription_id": sub.id, "cycle": 2});
    w.write(|tx| {
        tx.insert_work(&DueWork::new(
            WorkId::new(),
            sub.org_id,
            PREPARE_KIND,
            ts("2026-02-12T09:00:00Z"),
            payload.clone(),
        ))
    });
    w.billing.engine().run_due_work(Some(s.org_id()), 100).unwrap();
    assert_eq!(invoices_of(&w, sub.id).len(), 2);
    to(&w, "2026-02-15T09:00:01Z");
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!((got.current_cycle_number, got.latest_invoice_id), (2, Some(prepared.id)));
    assert!(got.latest_invoice_paid);
    let (inv, pays) = w.billing.invoices().get(s, prepared.id).unwrap().into_parts();
    assert_eq!(
        (inv.status, pays.len(), pays[0].status),
        (InvoiceStatus::Completed, 1, PaymentStatus::Succeeded)
    );
    assert!(pays[0].payed_at.unwrap() >= ts("2026-02-15T09:00:00Z"), "charged at the period end");
    to(&w, "2026-03-12T09:00:01Z");
    assert_eq!(invoices_of(&w, sub.id).len(), 3);
    one_live_invoice_per_cycle(&w, sub.id);
}

/// A plan change while the next invoice is prepared and unpaid: that invoice is voided and the
/// cycle's invoice issued again for the new plan (its row re-pointed, still one live invoice per
/// cycle), SUBSCRIPTION_PLAN_CHANGE_SCHEDULED then SUBSCRIPTION_PLAN_CHANGE_INVOICE_REISSUED,
/// `invoice_was_reissued`, the preview the re-issued invoice. A second change re-issues again;
/// DELETE pending-change leaves the re-issued invoice as it is.
pub fn plan_change_reissues_a_prepared_invoice<H: Harness>() {
    let w = World::new(H::store());
    set_settings(&w, json!({"subscription_invoice_lead_days": 3}));
    let s = &w.fresh_admin();
    let c = consumer(&w, s, false);
    card(&w, s, c.id);
    let gym = monthly(&w, s, "100.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    to(&w, "2026-02-13T00:00:00Z");
    let first_prepared = invoices_of(&w, sub.id)[1].1.clone();
    update(&w, sub.id, update_body(&[(gym.id, 2)], &[]));
    let p = pending(&w, sub.id).unwrap();
    assert!(p.invoice_was_reissued);
    assert_eq!(invoice(&w, first_prepared.id).status, InvoiceStatus::Canceled);
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.len(), 2);
    let reissued = invs[1].1.clone();
    assert_ne!(reissued.id, first_prepared.id);
    assert_eq!((reissued.total_amount, reissued.scheduled_on), (sar("200.00"), ts("2026-02-15T09:00:00Z")));
    assert_eq!((p.preview.total_amount, p.preview.issue_at), (reissued.total_amount, reissued.created_at));
    let evs = sub_events(&w, sub.id);
    assert_eq!(
        evs[evs.len() - 2..],
        [EventType::SubscriptionPlanChangeScheduled, EventType::SubscriptionPlanChangeInvoiceReissued]
    );
    let payload = w
        .read(|tx| tx.list_events(s.org_id()))
        .into_iter()
        .find(|e| e.event_type == EventType::SubscriptionPlanChangeInvoiceReissued)
        .unwrap()
        .payload;
    assert_eq!(payload["data"]["invoice"]["id"], json!(reissued.id));
    assert_eq!(payload["data"]["canceled_invoice"]["id"], json!(first_prepared.id));
    assert_eq!(payload["data"]["pending_change"]["id"], json!(p.id));
    one_live_invoice_per_cycle(&w, sub.id);
    // Another change re-issues again.
    update(&w, sub.id, update_body(&[(gym.id, 3)], &[]));
    let third = invoices_of(&w, sub.id)[1].1.clone();
    assert_eq!(third.total_amount, sar("300.00"));
    assert_eq!(invoice(&w, reissued.id).status, InvoiceStatus::Canceled);
    // Withdrawn: the re-issued invoice stays as it is (the spec), and bills cycle 2.
    w.billing.subscriptions().cancel_pending_change(s, sub.id).unwrap();
    assert_eq!(invoice(&w, third.id).status, InvoiceStatus::Created);
    to(&w, "2026-02-15T09:00:01Z");
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!(
        (got.current_cycle_number, got.latest_invoice_id, got.amount),
        (2, Some(third.id), sar("100.00"))
    );
    assert_eq!(invoice(&w, third.id).status, InvoiceStatus::Completed);
    to(&w, "2026-03-12T09:00:01Z");
    assert_eq!(invoices_of(&w, sub.id)[2].1.total_amount, sar("100.00"));
    one_live_invoice_per_cycle(&w, sub.id);
    assert_eq!(all_invoices(&w, sub.id).len(), 5);
}

/// A scheduled cancellation (or `until_cycle_number` lowered to the current cycle) voids an
/// open prepared invoice at once and frees its cycle; uncancel (or raising it again) prepares
/// the invoice again at once; at the end nothing payable is left.
pub fn cancellation_withdraws_a_prepared_invoice<H: Harness>() {
    let w = World::new(H::store());
    set_settings(&w, json!({"subscription_invoice_lead_days": 3}));
    let s = &w.fresh_admin();
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    to(&w, "2026-02-13T00:00:00Z");
    let prepared = invoices_of(&w, sub.id)[1].1.id;
    let s = &w.fresh_admin();
    w.billing.subscriptions().cancel(s, sub.id, SubscriptionCancel::default()).unwrap();
    assert_eq!(invoice(&w, prepared).status, InvoiceStatus::Canceled);
    assert_eq!(invoices_of(&w, sub.id).len(), 1, "the cycle is free again");
    w.billing.subscriptions().uncancel(s, sub.id).unwrap();
    let again = invoices_of(&w, sub.id);
    assert_eq!((again.len(), again[1].1.status), (2, InvoiceStatus::Created));
    let mut b = update_body(&[(gym.id, 1)], &[]);
    b["until_cycle_number"] = json!(1);
    update(&w, sub.id, b);
    assert_eq!(invoice(&w, again[1].1.id).status, InvoiceStatus::Canceled);
    assert_eq!(invoices_of(&w, sub.id).len(), 1);
    let mut b = update_body(&[(gym.id, 1)], &[]);
    b["until_cycle_number"] = Value::Null;
    update(&w, sub.id, b);
    let third = invoices_of(&w, sub.id)[1].1.id;
    w.billing.subscriptions().cancel(s, sub.id, SubscriptionCancel::default()).unwrap();
    // A change scheduled, then the end: the change is withdrawn, not applied.
    update(&w, sub.id, update_body(&[(gym.id, 2)], &[]));
    to(&w, "2026-02-16T00:00:00Z");
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!((got.status, got.amount), (SubscriptionStatus::Canceled, sar("100.00")));
    assert_eq!(invoice(&w, third).status, InvoiceStatus::Canceled);
    assert!(all_invoices(&w, sub.id)[1..].iter().all(|i| i.status == InvoiceStatus::Canceled));
    assert_eq!(history(&w, sub.id), vec![PlanChangeStatus::Canceled]);
    assert_eq!(count(&w, sub.id, EventType::SubscriptionPlanChanged), 0);
    assert_eq!(sub_events(&w, sub.id).last(), Some(&EventType::SubscriptionCanceled));
}

/// A prepared invoice already paid is kept by a plan change (not re-issued); the preview is
/// then the first invoice of the new plan, the cycle after, and matches it when issued.
pub fn paid_prepared_invoice_is_kept<H: Harness>() {
    let w = World::new(H::store());
    set_settings(&w, json!({"subscription_invoice_lead_days": 3}));
    let s = &w.fresh_admin();
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let mut body = sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z");
    body["override_payment_methods"] = json!({"subscription_auto_renewal": false});
    let sub = create(&w, s, body);
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    to(&w, "2026-02-13T00:00:00Z");
    let prepared = invoices_of(&w, sub.id)[1].1.id;
    let s = &w.fresh_admin();
    pay_first(&w, s, prepared);
    update(&w, sub.id, update_body(&[(gym.id, 2)], &[]));
    let p = pending(&w, sub.id).unwrap();
    assert!(!p.invoice_was_reissued);
    assert_eq!(
        (p.preview.cycle, p.preview.period_start, p.preview.issue_at),
        (3, ts("2026-03-15T09:00:00Z"), ts("2026-03-12T09:00:00Z"))
    );
    assert_eq!(invoice(&w, prepared).status, InvoiceStatus::Completed);
    to(&w, "2026-02-15T09:00:01Z");
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!(
        (got.latest_invoice_id, got.latest_invoice_paid, got.amount),
        (Some(prepared), true, sar("200.00"))
    );
    to(&w, "2026-03-12T09:00:01Z");
    let third = &invoices_of(&w, sub.id)[2].1;
    assert_eq!((third.total_amount, third.scheduled_on), (p.preview.total_amount, p.preview.period_start));
}

/// The organization's retry schedule: `[2]` retries a declined renewal once, 2 days after the
/// first attempt, then INACTIVE. A dunning under way keeps the schedule it started with.
pub fn dunning_follows_the_organization_schedule<H: Harness>() {
    let w = World::new(H::store());
    set_settings(&w, json!({"subscription_renewal_retry_days": [2]}));
    let s = &w.fresh_admin();
    let c = consumer(&w, s, false);
    w.billing.payments().save_card(s, c.id, "4123120001090000", 12, 2035, true).unwrap();
    let gym = monthly(&w, s, "100.00");
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    let c2 = consumer(&w, s, false);
    w.billing.payments().save_card(s, c2.id, "4123120001090000", 12, 2035, true).unwrap();
    let sub2 = create(&w, s, sub_body(c2.id, &[(gym.id, 1)], "2026-01-16T09:00:00Z"));
    pay_first(&w, s, sub2.latest_invoice_id.unwrap());
    to(&w, "2026-02-15T09:00:01Z");
    assert_eq!(count(&w, sub.id, EventType::SubscriptionCycleRenewalFailed), 1);
    to(&w, "2026-02-16T09:00:01Z");
    // The second one's first attempt fails under [2] too; then the schedule changes.
    assert_eq!(count(&w, sub2.id, EventType::SubscriptionCycleRenewalFailed), 1);
    set_settings(&w, json!({"subscription_renewal_retry_days": [1, 3, 7]}));
    to(&w, "2026-02-17T09:00:01Z");
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!(
        (got.status, count(&w, sub.id, EventType::SubscriptionCycleRenewalFailed)),
        (SubscriptionStatus::Inactive, 2)
    );
    assert_eq!(sub_events(&w, sub.id).last(), Some(&EventType::SubscriptionInactivated));
    // Day 1 after sub2's first attempt: no retry under [2].
    assert_eq!(count(&w, sub2.id, EventType::SubscriptionCycleRenewalFailed), 1);
    to(&w, "2026-02-18T09:00:01Z");
    assert_eq!(count(&w, sub2.id, EventType::SubscriptionCycleRenewalFailed), 2);
    assert_eq!(
        w.billing.subscriptions().get(s, sub2.id).unwrap().subscription.status,
        SubscriptionStatus::Inactive
    );
}

/// The lead time and the retry schedule in the settings: defaults (0 days; 1, 3, 7), patched
/// by an admin, refused when out of bounds, not increasing or not whole days (422 at the
/// field, nothing written).
pub fn subscription_settings_are_validated<H: Harness>() {
    let w = World::new(H::store());
    let s = w.billing.org().settings(&w.admin).unwrap();
    assert_eq!(
        (s.subscription_invoice_lead_days, s.subscription_renewal_retry_days.clone()),
        (0, vec![1, 3, 7])
    );
    let v = serde_json::to_value(s.view(w.boot.org.id)).unwrap();
    assert_eq!(
        (v["subscription_invoice_lead_days"].clone(), v["subscription_renewal_retry_days"].clone()),
        (json!(0), json!([1, 3, 7]))
    );
    set_settings(
        &w,
        json!({"subscription_invoice_lead_days": 5, "subscription_renewal_retry_days": [1, 2, 10, 60]}),
    );
    let after = w.billing.org().settings(&w.admin).unwrap();
    assert_eq!(
        (after.subscription_invoice_lead_days, after.subscription_renewal_retry_days.clone()),
        (5, vec![1, 2, 10, 60])
    );
    set_settings(&w, json!({"subscription_renewal_retry_days": []}));
    assert!(w.billing.org().settings(&w.admin).unwrap().subscription_renewal_retry_days.is_empty());
    let before = w.read(|tx| tx.org(w.boot.org.id)).unwrap().settings;
    for (bad, field) in [
        (json!({"subscription_invoice_lead_days": -1}), "subscription_invoice_lead_days"),
        (json!({"subscription_invoice_lead_days": 31}), "subscription_invoice_lead_days"),
        (json!({"subscription_invoice_lead_days": "three"}), "subscription_invoice_lead_days"),
        (json!({"subscription_renewal_retry_days": [0]}), "0"),
        (json!({"subscription_renewal_retry_days": [61]}), "0"),
        (json!({"subscription_renewal_retry_days": [1.5]}), "0"),
        (json!({"subscription_renewal_retry_days": ["a"]}), "0"),
        (json!({"subscription_renewal_retry_days": [3, 2]}), "subscription_renewal_retry_days"),
        (json!({"subscription_renewal_retry_days": [1, 1]}), "subscription_renewal_retry_days"),
        (
            json!({"subscription_renewal_retry_days": (1..=11).collect::<Vec<u32>>()}),
            "subscription_renewal_retry_days",
        ),
        (json!({"subscription_renewal_retry_days": 3}), "subscription_renewal_retry_days"),
    ] {
        match SettingsPatch::parse(&bad) {
            Err(Error::Validation(d)) => {
                let last = d[0].loc.last().cloned();
                let ok = match field.parse::<usize>() {
                    Ok(k) => last == Some(crate::error::LocPart::Index(k)),
                    Err(_) => last == Some(crate::error::LocPart::Key(field.to_string())),
                };
                assert!(ok, "{bad}: {d:?}");
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert_eq!(w.read(|tx| tx.org(w.boot.org.id)).unwrap().settings, before);
}

/// A preparation and the renewal of the same cycle run twice each from three threads at once
/// (the organization's clock moved past both): one invoice for the cycle.
pub fn concurrent_preparation_and_renewal_issue_once<H: Harness>() {
    let w = World::new(H::store());
    set_settings(&w, json!({"subscription_invoice_lead_days": 1}));
    let s = &w.fresh_admin();
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let mut body = sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z");
    body["override_payment_methods"] = json!({"subscription_auto_renewal": false});
    let sub = create(&w, s, body);
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    let payload = json!({"branch_id": sub.branch_id, "subscription_id": sub.id, "cycle": 2});
    for kind in [PREPARE_KIND, RENEWAL_KIND] {
        w.write(|tx| tx.insert_work(&DueWork::new(WorkId::new(), sub.org_id, kind, sub.current_period_end, payload.clone())));
    }
    let mut org = w.read(|tx| tx.org(s.org_id())).unwrap();
    org.clock_offset_us = Duration::days(32).num_microseconds().unwrap();
    w.write(|tx| tx.update_org(&org));
    std::thread::scope(|t| {
        let hs: Vec<_> = (0..3)
            .map(|_| t.spawn(|| w.billing.engine().run_due_work(Some(s.org_id()), 100).unwrap()))
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(all_invoices(&w, sub.id).len(), 2);
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!((got.current_cycle_number, got.latest_invoice_id), (2, Some(invs[1].1.id)));
}

/// The store: a change round-trips (target plan, diff, preview), a second SCHEDULED change of
/// one subscription is `subscription_plan_changes_scheduled_key`, history keeps the others in
/// order; a cycle's row is re-pointed or deleted only from the invoice it points at.
pub fn plan_change_rows_and_cycle_pointers<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let gym = monthly(&w, s, "100.00");
    let ten = coupon(&w, s, json!({"name": "TEN", "discount_value": 10, "is_percentage": true}));
    let sub = create(&w, s, sub_body(c.id, &[(gym.id, 1)], "2026-01-15T09:00:00Z"));
    let mut b = update_body(&[(gym.id, 3)], &[ten.id]);
    b["items"][0]["coupons"] = json!([ten.id]);
    update(&w, sub.id, b);
    let p = pending(&w, sub.id).unwrap();
    assert_eq!(w.read(|tx| tx.plan_changes(sub.id)), vec![p.clone()]);
    assert_eq!(p.target.items[0].line.coupons.len(), 1);
    let mut twin = p.clone();
    twin.id = crate::ids::PlanChangeId::new();
    assert_eq!(
        expect_unique(w.try_write(|tx| tx.insert_plan_change(&twin))),
        "subscription_plan_changes_scheduled_key"
    );
    let mut done = p.clone();
    done.status = PlanChangeStatus::Applied;
    done.updated_at = Some(ts("2026-02-01T00:00:00.000001Z"));
    w.write(|tx| tx.update_plan_change(&done));
    twin.status = PlanChangeStatus::Canceled;
    w.write(|tx| tx.insert_plan_change(&twin));
    assert_eq!(w.read(|tx| tx.scheduled_plan_change(sub.id)), None);
    assert_eq!(w.read(|tx| tx.plan_changes(sub.id)), vec![done, twin]);
    let mut ghost = p.clone();
    ghost.id = crate::ids::PlanChangeId::new();
    assert!(w.try_write(|tx| tx.update_plan_change(&ghost)).is_err());
    // Cycle pointers.
    let first = sub.latest_invoice_id.unwrap();
    let other = InvoiceId::new();
    let other_inv = super::invoices::create(&w, s, super::invoices::invoice_body(c.id, &[(gym.id, 1)], &[]));
    assert!(!w.write(|tx| tx.replace_subscription_cycle_invoice(sub.id, 1, other, other_inv.id)));
    assert!(w.write(|tx| tx.replace_subscription_cycle_invoice(sub.id, 1, first, other_inv.id)));
    assert_eq!(w.read(|tx| tx.subscription_cycle_invoice(sub.id, 1)), Some(other_inv.id));
    assert_eq!(w.read(|tx| tx.subscription_cycle_invoice(sub.id, 2)), None);
    assert!(!w.write(|tx| tx.delete_subscription_cycle(sub.id, 1, first)));
    assert!(w.write(|tx| tx.delete_subscription_cycle(sub.id, 1, other_inv.id)));
    assert_eq!(w.read(|tx| tx.subscription_cycles(sub.id)), vec![]);
}

/// A tiny deterministic generator (xorshift), so that a failing run replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Twelve cycles of random plan changes (products with VAT included, excluded and exempt,
/// percentage and fixed coupons on lines and on the whole, quantities), half of them made after
/// the next invoice was prepared (so re-issued): every cycle's invoice is the preview shown
/// when the change was made, to the minor unit (total, subtotal, period), and one live invoice
/// per cycle.
pub fn random_plan_changes_bill_as_previewed<H: Harness>() {
    let w = World::new(H::store());
    set_settings(&w, json!({"subscription_invoice_lead_days": 2}));
    let s = &w.fresh_admin();
    let c = consumer(&w, s, false);
    let m = |price: &str, extra: Value| {
        let mut v = json!({"type": "RECURRING", "recurring_interval": "MONTH"});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        product(&w, s, price, v)
    };
    let products = [
        m("115.00", json!({})),
        m("100.00", json!({"is_price_inclusive_of_vat": false})),
        m("50.00", json!({"is_price_exempt_from_vat": true})),
        m("33.33", json!({})),
    ];
    let coupons = [
        coupon(&w, s, json!({"name": "TEN", "discount_value": 10, "is_percentage": true})),
        coupon(&w, s, json!({"name": "SEVEN", "discount_value": "7.5", "is_percentage": true})),
        coupon(&w, s, json!({"name": "FIVE", "discount_value": "5", "currency": "SAR"})),
        coupon(&w, s, json!({"name": "ODD", "discount_value": "12.34", "currency": "SAR"})),
    ];
    let mut body = sub_body(c.id, &[(products[0].id, 1)], "2026-01-15T09:00:00Z");
    body["override_payment_methods"] = json!({"subscription_auto_renewal": false});
    let sub = create(&w, s, body);
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut reissued = 0;
    for _ in 0..12 {
        let cur = w.billing.subscriptions().get(&w.fresh_admin(), sub.id).unwrap().subscription;
        let end = cur.current_period_end;
        let prepared_first = rng.below(2) == 1;
        if prepared_first {
            w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(end - Duration::days(1))).unwrap();
        }
        let mut lines = vec![];
        let mut taken = vec![];
        for _ in 0..1 + rng.below(3) {
            let p = rng.below(products.len());
            if taken.contains(&p) {
                continue;
            }
            taken.push(p);
            let mut line = json!({"product_id": products[p].id, "quantity": 1 + rng.below(5)});
            if rng.below(3) == 0 {
                line["coupons"] = json!([coupons[rng.below(coupons.len())].id]);
            }
            lines.push(line);
        }
        let mut whole = vec![];
        for _ in 0..rng.below(3) {
            let k = coupons[rng.below(coupons.len())].id;
            if !whole.contains(&k) {
                whole.push(k);
            }
        }
        update(&w, sub.id, json!({"items": lines, "coupons": whole}));
        let change = pending(&w, sub.id);
        reissued += usize::from(change.as_ref().is_some_and(|c| c.invoice_was_reissued));
        w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(end + Duration::seconds(1))).unwrap();
        let got = w.billing.subscriptions().get(&w.fresh_admin(), sub.id).unwrap().subscription;
        let inv = invoice(&w, got.latest_invoice_id.unwrap());
        assert_eq!(inv.scheduled_on, end);
        match change {
            Some(c) => {
                let p = &c.preview;
                assert_eq!(
                    (inv.total_amount.minor_units(), inv.original_amount, inv.scheduled_on),
                    (p.total_amount.minor_units(), p.subtotal, p.period_start),
                    "{c:?}"
                );
                assert_eq!(p.discount_total.amount(), inv.original_amount.amount() - c.target.after_discounts().amount());
                assert_eq!(got.amount, c.target.amount);
            }
            None => assert_eq!(inv.total_amount, cur.amount),
        }
        assert_eq!(inv.total_amount, got.amount);
    }
    assert!(reissued > 0, "some changes re-issued a prepared invoice");
    one_live_invoice_per_cycle(&w, sub.id);
    assert_eq!(invoices_of(&w, sub.id).len(), 13);
}

/// A weekly subscription whose next invoice was prepared while a declined renewal was being
/// retried, then made INACTIVE by the last retry, then canceled: CANCELED at once, and the
/// prepared invoice (of a cycle that will not come) voided.
pub fn immediate_cancellation_voids_a_prepared_invoice<H: Harness>() {
    let w = World::new(H::store());
    set_settings(&w, json!({"subscription_invoice_lead_days": 5, "subscription_renewal_retry_days": [3]}));
    let s = &w.fresh_admin();
    let c = consumer(&w, s, false);
    w.billing.payments().save_card(s, c.id, "4123120001090000", 12, 2035, true).unwrap();
    let weekly = product(&w, s, "10.00", json!({"type": "RECURRING", "recurring_interval": "WEEK"}));
    let sub = create(&w, s, sub_body(c.id, &[(weekly.id, 1)], "2026-01-15T09:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    // Cycle 2 starts Jan 22 (declined), cycle 3's invoice is prepared Jan 24, the retry on
    // Jan 25 fails and inactivates.
    to(&w, "2026-01-26T00:00:00Z");
    let got = w.billing.subscriptions().get(s, sub.id).unwrap().subscription;
    assert_eq!((got.status, got.current_cycle_number), (SubscriptionStatus::Inactive, 2));
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.len(), 3);
    let prepared = invs[2].1.id;
    assert_eq!(invoice(&w, prepared).status, InvoiceStatus::Created);
    w.billing
        .subscriptions()
        .cancel(&w.fresh_admin(), sub.id, SubscriptionCancel::default())
        .unwrap();
    assert_eq!(invoice(&w, prepared).status, InvoiceStatus::Canceled);
    assert_eq!(
        invoice(&w, invs[1].1.id).status,
        InvoiceStatus::Created,
        "the overdue one is not asked to be voided"
    );
    assert_eq!(
        w.billing.subscriptions().get(s, sub.id).unwrap().subscription.status,
        SubscriptionStatus::Canceled
    );
}

/// An INACTIVE subscription (its renewal declined) whose next invoice was prepared while it was
/// ACTIVE, then given `until_cycle_number` = its current cycle: it ends at the period end, so the
/// prepared invoice of a cycle that will not come is voided and its cycle freed, as for an
/// ACTIVE one; a later plan change issues nothing for that cycle.
pub fn ending_an_inactive_subscription_withdraws_its_prepared_invoice<H: Harness>() {
    let w = World::new(H::store());
    set_settings(&w, json!({"subscription_invoice_lead_days": 7, "subscription_renewal_retry_days": [1]}));
    let s = &w.fresh_admin();
    let c = consumer(&w, s, false);
    let weekly = product(&w, s, "10.00", json!({"type": "RECURRING", "recurring_interval": "WEEK"}));
    let other = product(&w, s, "25.00", json!({"type": "RECURRING", "recurring_interval": "WEEK"}));
    let sub = create(&w, s, sub_body(c.id, &[(weekly.id, 1)], "2026-01-15T09:00:00Z"));
    pay_first(&w, s, sub.latest_invoice_id.unwrap());
    // Jan 22: cycle 2 (no card: declined) and cycle 3's invoice prepared; Jan 23: the retry
    // fails, INACTIVE.
    to(&w, "2026-01-24T00:00:00Z");
    let got = w.billing.subscriptions().get(&w.fresh_admin(), sub.id).unwrap().subscription;
    assert_eq!((got.status, got.current_cycle_number), (SubscriptionStatus::Inactive, 2));
    let invs = invoices_of(&w, sub.id);
    assert_eq!(invs.len(), 3);
    let prepared = invs[2].1.id;
    update(
        &w,
        sub.id,
        json!({"items": [{"product_id": weekly.id, "quantity": 1}], "coupons": [], "until_cycle_number": 2}),
    );
    assert_eq!(
        invoice(&w, prepared).status,
        InvoiceStatus::Canceled,
        "a cycle after the last one is not billed"
    );
    assert_eq!(invoices_of(&w, sub.id).len(), 2);
    update(&w, sub.id, update_body(&[(other.id, 2)], &[]));
    assert_eq!(invoices_of(&w, sub.id).len(), 2, "nothing re-issued for a cycle that will not come");
    assert_eq!(count(&w, sub.id, EventType::SubscriptionPlanChangeInvoiceReissued), 0);
}
