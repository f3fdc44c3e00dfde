//! The random actions, each through the engine's public operations as the server calls them
//! (request bodies parsed by the same parsers). An action the engine may refuse in the state the
//! subscription is in lists the refusals it accepts; a refusal must leave the subscription, its
//! cycles and its freezes as they were. Any other error fails the run.

use super::{Card, Preview, Sim, SimSub};
use crate::clock::format_rfc3339;
use crate::error::{Code, Error, Result};
use crate::ids::SubscriptionId;
use crate::money::Currency;
use crate::payment::{MarkPaid, PaymentMethod};
use crate::store::Store;
use crate::subscription::plan_change::Plan;
use crate::subscription::{FreezeRequest, FreezeState, SubscriptionCancel, SubscriptionCreate, SubscriptionUpdate};
use chrono::Duration;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const APPROVES: &str = "4111111111111111";
const DECLINES: &str = "4123120001090000";

/// One random action on a random subscription that is not over.
pub fn random<S: Store>(sim: &mut Sim<S>) {
    let live = super::live(&sim.subs, None);
    if live.is_empty() {
        return;
    }
    let id = *sim.rng.pick(&live);
    match sim.rng.below(100) {
        0..=17 => change_plan(sim, id),
        18..=21 => delete_pending_change(sim, id),
        22..=33 => freeze(sim, id),
        34..=41 => unfreeze(sim, id),
        42..=49 => cancel(sim, id),
        50..=55 => uncancel(sim, id),
        56..=79 => pay_open_invoice(sim, id),
        80..=89 => change_card(sim, id),
        _ => update_fields(sim, id),
    }
}

/// What a refusal must not have changed.
fn state<S: Store>(sim: &Sim<S>, id: SubscriptionId) -> String {
    let org = &sim.orgs[sim.subs.iter().find(|s| s.id == id).expect("known").org];
    let s = org.scope(&sim.w);
    let sub = sim.w.billing.subscriptions().get(&s, id).map(|d| d.subscription).expect("get subscription");
    let cycles = sim.w.read(|tx| tx.subscription_cycles(id));
    let freezes = sim.w.read(|tx| tx.subscription_freezes(id));
    let change = sim.w.read(|tx| tx.scheduled_plan_change(id));
    format!("{sub:?}\n{cycles:?}\n{freezes:?}\n{change:?}")
}

/// Runs `op` on subscription `id`; a refusal with one of `allowed` codes must change nothing.
fn attempt<S: Store, T: std::fmt::Debug>(
    sim: &mut Sim<S>,
    id: SubscriptionId,
    what: &str,
    allowed: &[Code],
    op: impl FnOnce(&Sim<S>) -> Result<T>,
) -> Option<T> {
    let before = state(sim, id);
    sim.sub_mut(id).touched = true;
    match op(sim) {
        Ok(x) => Some(x),
        Err(Error::Rule { code, .. }) if allowed.contains(&code) => {
            let after = state(sim, id);
            assert_eq!(before, after, "step {}: {what} of {id} was refused ({code:?}) but changed it", sim.step);
            None
        }
        Err(e) => panic!("step {}: {what} of subscription {id}: {e:?}", sim.step),
    }
}

fn sub<S: Store>(sim: &Sim<S>, id: SubscriptionId) -> &SimSub {
    sim.subs.iter().find(|s| s.id == id).expect("known")
}

/// A new subscription of a new consumer in a random organization (see the module of the
/// simulation for the mix).
pub fn create<S: Store>(sim: &mut Sim<S>) {
    let k = sim.rng.below(sim.orgs.len());
    let scope = sim.orgs[k].scope(&sim.w);
    let now = sim.now;
    let consumer = sim
        .w
        .billing
        .consumers()
        .create(
            &scope,
            crate::consumer::ConsumerFields::parse(&json!({"name": "Simulated Consumer"}), true).expect("consumer"),
        )
        .expect("create consumer");
    let card = match sim.rng.below(10) {
        0..=4 => Card::Approves,
        5..=7 => Card::Declines,
        _ => Card::None,
    };
    save_card(sim, &scope, consumer.id, card);
    // Monthly plans are the common case.
    let g = if sim.rng.chance(40) { 2 } else { sim.rng.below(sim.orgs[k].groups.len()) };
    let items = random_items(sim, k, g);
    let coupons = random_coupons(sim, k);
    let trial = sim.rng.chance(12);
    let period_start = if trial {
        now + Duration::days(1 + sim.rng.below(30) as i64) + super::GRID * sim.rng.below(4) as i32
    } else if sim.rng.chance(15) {
        now + Duration::days(1 + sim.rng.below(20) as i64)
    } else {
        now
    };
    let auto_renewal = !sim.rng.chance(15);
    let mut body = json!({
        "organization_consumer_id": consumer.id,
        "items": items,
        "coupons": coupons,
        "period_start": format_rfc3339(&period_start),
        "currency": "SAR",
        "notify_consumer": false,
        "trial": trial,
        "override_payment_methods": {"subscription_auto_renewal": auto_renewal},
    });
    if sim.rng.chance(20) {
        body["until_cycle_number"] = json!(2 + sim.rng.below(9));
    }
    let req = SubscriptionCreate::parse(&body, Currency::SAR).expect("a valid creation");
    let s = sim
        .w
        .billing
        .subscriptions()
        .create(&scope, req)
        .map(|d| d.subscription)
        .unwrap_or_else(|e| panic!("step {}: create subscription {body}: {e:?}", sim.step));
    sim.subs.push(SimSub {
        id: s.id,
        org: k,
        consumer: consumer.id,
        trial,
        card,
        stable: true,
        auto_renewal,
        invoices: BTreeMap::new(),
        status: s.status,
        over_since: None,
        previews: vec![],
        settled: false,
        touched: true,
    });
    if !trial && sim.rng.chance(75) {
        pay_open_invoice(sim, s.id);
    }
}

fn save_card<S: Store>(sim: &Sim<S>, scope: &crate::auth::Scope, consumer: crate::ids::ConsumerId, card: Card) {
    let number = match card {
        Card::None => return,
        Card::Approves => APPROVES,
        Card::Declines => DECLINES,
    };
    sim.w.billing.payments().save_card(scope, consumer, number, 12, 2040, true).expect("save card");
}

/// 1 to 3 distinct products of group `g`, quantities 1 to 4, sometimes an item coupon.
fn random_items<S: Store>(sim: &mut Sim<S>, org: usize, g: usize) -> Vec<Value> {
    let products = sim.orgs[org].groups[g].products.clone();
    let coupons = sim.orgs[org].coupons.clone();
    let mut taken = vec![];
    let mut items = vec![];
    for _ in 0..1 + sim.rng.below(3) {
        let p = *sim.rng.pick(&products);
        if taken.contains(&p) {
            continue;
        }
        taken.push(p);
        let mut line = json!({"product_id": p, "quantity": 1 + sim.rng.below(4)});
        if sim.rng.chance(20) {
            line["coupons"] = json!([sim.rng.pick(&coupons)]);
        }
        items.push(line);
    }
    items
}

fn random_coupons<S: Store>(sim: &mut Sim<S>, org: usize) -> Vec<Value> {
    let all = sim.orgs[org].coupons.clone();
    let mut out: Vec<Value> = vec![];
    if sim.rng.chance(30) {
        for _ in 0..1 + sim.rng.below(2) {
            let c = json!(sim.rng.pick(&all));
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// The request body of `plan` (items and coupons).
fn plan_body(plan: &Plan) -> Value {
    json!({
        "items": plan.items.iter().map(|i| json!({"product_id": i.line.product_id, "quantity": i.line.quantity, "coupons": i.line.coupon_ids})).collect::<Vec<_>>(),
        "coupons": plan.coupon_ids,
    })
}

/// The plan the next cycle bills: the SCHEDULED change's target, else the plan in force.
fn next_plan<S: Store>(sim: &Sim<S>, id: SubscriptionId) -> Plan {
    let scope = sim.orgs[sub(sim, id).org].scope(&sim.w);
    let s = sim.w.billing.subscriptions().get(&scope, id).map(|d| d.subscription).expect("get subscription");
    sim.w.read(|tx| tx.scheduled_plan_change(id)).map(|c| c.target).unwrap_or_else(|| s.plan())
}

fn update<S: Store>(sim: &mut Sim<S>, id: SubscriptionId, body: Value, what: &str) {
    let org = sub(sim, id).org;
    let req = SubscriptionUpdate::parse(&body).unwrap_or_else(|e| panic!("{what} {body}: {e:?}"));
    let done = attempt(sim, id, what, &[Code::INVALID_STATUS], |sim| {
        sim.w
            .billing
            .subscriptions()
            .update(&sim.orgs[org].scope(&sim.w), id, &req)
            .map(|d| d.subscription)
    });
    if done.is_some() {
        record_preview(sim, id);
    }
}

/// Remembers the preview of the SCHEDULED change, to compare with the invoice of its cycle.
fn record_preview<S: Store>(sim: &mut Sim<S>, id: SubscriptionId) {
    let Some(c) = sim.w.read(|tx| tx.scheduled_plan_change(id)) else { return };
    let s = sim.sub_mut(id);
    if s.previews.iter().any(|p| p.change == c.id) {
        return;
    }
    s.previews.push(Preview {
        change: c.id,
        cycle: c.preview.cycle,
        total: c.preview.total_amount,
        period_start: c.preview.period_start,
        made_at: c.created_at,
        moved: false,
    });
}

/// A plan change: new items of the same interval (sometimes another interval), quantities and
/// coupons.
fn change_plan<S: Store>(sim: &mut Sim<S>, id: SubscriptionId) {
    let org = sub(sim, id).org;
    let plan = next_plan(sim, id);
    let same = sim.orgs[org]
        .groups
        .iter()
        .position(|g| g.interval == plan.recurring_interval.as_str() && g.count == plan.recurring_interval_count)
        .expect("the plan's group");
    let g = if sim.rng.chance(15) {
        sim.rng.below(sim.orgs[org].groups.len())
    } else {
        same
    };
    let body = json!({"items": random_items(sim, org, g), "coupons": random_coupons(sim, org)});
    update(sim, id, body, "plan change");
}

fn delete_pending_change<S: Store>(sim: &mut Sim<S>, id: SubscriptionId) {
    let org = sub(sim, id).org;
    attempt(sim, id, "delete pending change", &[], |sim| {
        sim.w.billing.subscriptions().cancel_pending_change(&sim.orgs[org].scope(&sim.w), id)
    });
}

/// `until_cycle_number` and auto-renewal, applied at once (the plan sent is the next cycle's,
/// so no change is scheduled or withdrawn).
fn update_fields<S: Store>(sim: &mut Sim<S>, id: SubscriptionId) {
    let org = sub(sim, id).org;
    let s = sim
        .w
        .billing
        .subscriptions()
        .get(&sim.orgs[org].scope(&sim.w), id)
        .map(|d| d.subscription)
        .expect("get subscription");
    let mut body = plan_body(&next_plan(sim, id));
    if sim.rng.chance(50) {
        body["until_cycle_number"] = if sim.rng.chance(30) {
            Value::Null
        } else {
            json!(s.current_cycle_number.max(1) + sim.rng.below(4) as u32)
        };
    } else {
        let on = sim.rng.chance(70);
        body["override_payment_methods"] = json!({"subscription_auto_renewal": on});
        let m = sim.sub_mut(id);
        m.stable &= m.auto_renewal == on;
        m.auto_renewal = on;
    }
    update(sim, id, body, "update of immediate fields");
}

/// A freeze starting now or later, with an end or without.
fn freeze<S: Store>(sim: &mut Sim<S>, id: SubscriptionId) {
    let org = sub(sim, id).org;
    let now = sim.now;
    let start = if sim.rng.chance(40) {
        now
    } else {
        now + Duration::days(1 + sim.rng.below(60) as i64) + super::GRID * sim.rng.below(4) as i32
    };
    let end = if sim.rng.chance(25) {
        None
    } else {
        Some(start + Duration::days(1 + sim.rng.below(60) as i64))
    };
    let req = FreezeRequest { start, end, notes: None };
    attempt(sim, id, "freeze", &[Code::INVALID_STATUS, Code::FREEZE_OVERLAP], |sim| {
        sim.w.billing.freezes().create(&sim.orgs[org].scope(&sim.w), id, req)
    });
}

/// Deletes a freeze (in force: it ends now; scheduled: dropped), or gives an open-ended freeze
/// in force an end.
fn unfreeze<S: Store>(sim: &mut Sim<S>, id: SubscriptionId) {
    let org = sub(sim, id).org;
    let freezes: Vec<_> = sim
        .w
        .read(|tx| tx.subscription_freezes(id))
        .into_iter()
        .filter(|f| f.state != FreezeState::Ended)
        .collect();
    if freezes.is_empty() {
        return;
    }
    let f = sim.rng.pick(&freezes).clone();
    if f.state == FreezeState::InForce && f.end.is_none() && sim.rng.chance(50) {
        let end = sim.now + Duration::days(1 + sim.rng.below(20) as i64);
        let req = FreezeRequest::parse_update(&json!({
            "freeze_start_datetime": format_rfc3339(&f.start),
            "freeze_end_datetime": format_rfc3339(&end),
        }))
        .expect("freeze update");
        attempt(sim, id, "freeze end", &[Code::INVALID_STATUS, Code::FREEZE_OVERLAP], |sim| {
            sim.w.billing.freezes().update(&sim.orgs[org].scope(&sim.w), id, f.id, req)
        });
        return;
    }
    attempt(sim, id, "delete freeze", &[Code::INVALID_STATUS], |sim| {
        sim.w.billing.freezes().delete(&sim.orgs[org].scope(&sim.w), id, f.id)
    });
}

fn cancel<S: Store>(sim: &mut Sim<S>, id: SubscriptionId) {
    let org = sub(sim, id).org;
    let req = SubscriptionCancel {
        cancel_related_invoices: sim.rng.chance(40),
    };
    attempt(sim, id, "cancel", &[Code::INVALID_STATUS], |sim| {
        sim.w
            .billing
            .subscriptions()
            .cancel(&sim.orgs[org].scope(&sim.w), id, req)
            .map(|d| d.subscription)
    });
}

fn uncancel<S: Store>(sim: &mut Sim<S>, id: SubscriptionId) {
    let org = sub(sim, id).org;
    attempt(sim, id, "uncancel", &[Code::INVALID_STATUS], |sim| {
        sim.w.billing.subscriptions().uncancel(&sim.orgs[org].scope(&sim.w), id)
    });
}

/// Marks the payment of one of the subscription's open invoices paid (cash), as a consumer
/// paying by other means would.
fn pay_open_invoice<S: Store>(sim: &mut Sim<S>, id: SubscriptionId) {
    let org = sub(sim, id).org;
    let scope = sim.orgs[org].scope(&sim.w);
    let mut payable = vec![];
    for (_, inv) in sim.w.billing.subscriptions().invoices(&scope, id).expect("subscription invoices") {
        let (_, pays) = sim.w.billing.invoices().get(&scope, inv.id).expect("get invoice").into_parts();
        if inv.status == crate::invoice::InvoiceStatus::Canceled {
            continue;
        }
        payable.extend(pays.into_iter().filter(|p| p.status.is_payable()).map(|p| p.id));
    }
    if payable.is_empty() {
        return;
    }
    let p = *sim.rng.pick(&payable);
    let req = MarkPaid {
        method: PaymentMethod::Cash,
        note: None,
    };
    attempt(sim, id, "mark paid", &[], |sim| sim.w.billing.payments().mark_paid(&scope, p, req));
}

/// A new card for the consumer: the next renewals charge it.
fn change_card<S: Store>(sim: &mut Sim<S>, id: SubscriptionId) {
    let (org, consumer, old) = {
        let s = sub(sim, id);
        (s.org, s.consumer, s.card)
    };
    let card = if sim.rng.chance(50) { Card::Approves } else { Card::Declines };
    let scope = sim.orgs[org].scope(&sim.w);
    save_card(sim, &scope, consumer, card);
    let m = sim.sub_mut(id);
    m.stable &= old == card;
    m.card = card;
}
