//! Payment link cases: pricing (the invoices' own), the rules of a link's products, the round
//! trip of every stored field, list filters and sorts, status and coupon changes, and what an
//! active link holds (its consumer, its branch). Every refusal is checked to write nothing.

use super::invoices::{consumer, coupon, create as create_invoice, invoice_body, product};
use super::{expect_code, expect_invalid, money, ts, Harness, World};

use crate::auth::Scope;
use crate::error::{Code, Error, Result};
use crate::ids::{ConsumerId, CouponId, InvoiceItemId, PaymentLinkId, PaymentLinkItemId, ProductId};
use crate::invoice::{InvoiceItem, PaymentMethods};
use crate::list::QueryParams;
use crate::money::Currency;
use crate::payment_link::*;
use crate::pricing::CouponLine;
use crate::product::{RecurringInterval, VatMode};
use crate::store::Store;
use serde_json::{json, Value};

pub fn link_body(items: &[(ProductId, u32)], coupons: &[CouponId]) -> Value {
    json!({
        "name": "Gym membership",
        "items": items.iter().map(|(p, q)| json!({"product_id": p, "quantity": q})).collect::<Vec<_>>(),
        "coupons": coupons,
        "currency": "SAR",
    })
}

pub fn try_create<S: Store>(w: &World<S>, s: &Scope, v: &Value) -> Result<PaymentLink> {
    w.billing.payment_links().create(s, PaymentLinkCreate::parse(v, Currency::SAR)?).map(|d| d.link)
}

pub fn create<S: Store>(w: &World<S>, s: &Scope, v: Value) -> PaymentLink {
    try_create(w, s, &v).unwrap_or_else(|e| panic!("create payment link {v}: {e:?}"))
}

fn everything<S: Store>(w: &World<S>) -> String {
    let s = &w.admin;
    let req = parse_payment_link_list(&QueryParams::parse("limit=100&sort_direction=asc")).unwrap();
    let links = w.billing.payment_links().list(s, &req).unwrap().items;
    let events = w.read(|tx| tx.list_events(s.org_id()));
    format!("{links:?}{events:?}")
}

fn listed<S: Store>(w: &World<S>, query: &str) -> Vec<String> {
    let req = parse_payment_link_list(&QueryParams::parse(query)).unwrap_or_else(|e| panic!("{query}: {e:?}"));
    w.billing
        .payment_links()
        .list(&w.admin, &req)
        .unwrap()
        .items
        .iter()
        .map(|d| d.link.name.clone())
        .collect()
}

/// A link is priced by the invoices' pricing: the same products, quantities and coupons give
/// the same amounts, lines and coupon steps as an invoice; it starts ACTIVE with an
/// unguessable short id, the organization's payment methods, and its metadata as given.
pub fn create_prices_like_an_invoice<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let inc = product(&w, s, "115.00", json!({"is_price_inclusive_of_vat": true}));
    let exc = product(&w, s, "100.00", json!({"is_price_inclusive_of_vat": false}));
    let ten = coupon(&w, s, json!({"name": "TEN", "discount_value": 10, "is_percentage": true}));
    let five = coupon(&w, s, json!({"name": "FIVE", "discount_value": "5", "currency": "SAR"}));
    let mut body = link_body(&[(inc.id, 2), (exc.id, 1)], &[five.id]);
    body["items"][0]["coupons"] = json!([ten.id]);
    body["custom_metadata"] = json!({"order": {"id": 7, "tags": ["a", {"b": null}]}});
    body["description"] = json!("Twelve months");
    let l = create(&w, s, body);
    let c = consumer(&w, s, false);
    let mut ib = invoice_body(c.id, &[(inc.id, 2), (exc.id, 1)], &[five.id]);
    ib["items"][0]["coupons"] = json!([ten.id]);
    let inv = create_invoice(&w, s, ib);
    assert_eq!(
        (
            l.original_amount,
            l.item_level_discounted_amount,
            l.total_vat_amount,
            l.total_price_excluding_vat,
            l.amount
        ),
        (
            inv.original_amount,
            inv.item_level_discounted_amount,
            inv.total_vat_amount,
            inv.total_price_excluding_vat,
            inv.total_amount
        )
    );
    assert_eq!(l.coupons, inv.coupons);
    for (a, b) in l.items.iter().zip(&inv.items) {
        assert_eq!(InvoiceItem { id: b.id, ..a.line.clone() }, *b, "each line as the invoice prices it");
        assert_eq!(a.line.id.0, a.id.0);
    }
    assert_eq!(l.status, PaymentLinkStatus::Active);
    assert!(l.short_id.len() >= 16 && l.short_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    assert_eq!(l.payment_methods, s.org.settings.default_payment_methods);
    assert_eq!(l.contact_information_type, ContactInformationType::Phone);
    assert_eq!((l.recurring_interval, l.payments_count), (None, 0));
    assert_eq!(l.custom_metadata.get("order"), Some(&json!({"id": 7, "tags": ["a", {"b": null}]})));
    assert_eq!(w.billing.payment_links().get(s, l.id).unwrap().link, l, "read back exactly as created");
    let other = create(&w, s, link_body(&[(inc.id, 1)], &[]));
    assert_ne!(other.short_id, l.short_id);
    // The view: amounts as strings with amount_in_smallest_unit, items with their product,
    // link coupons as CouponDto, the checkout address.
    let v = serde_json::to_value(
        w.billing
            .payment_links()
            .get(s, l.id)
            .unwrap()
            .response(w.billing.engine().public_url(), &s.org.settings),
    )
    .unwrap();
    assert_eq!(v["amount"], json!(l.amount));
    assert_eq!(v["amount_in_smallest_unit"], json!(l.amount.minor_units()));
    assert_eq!(v["url"], format!("{}/pay/{}", w.billing.engine().public_url(), l.short_id));
    assert_eq!(v["items"][0]["product"]["id"], json!(inc.id));
    assert_eq!(v["coupons"][0]["id"], json!(five.id));
    assert_eq!(v["amount_collected"], "0.00");
    assert_eq!(v["custom_metadata"]["order"]["tags"][1], json!({"b": null}));
    // No events: a link is not money yet.
    let events = w.read(|tx| tx.list_events(s.org_id()));
    assert_eq!(events.len(), 1, "only the invoice's: {events:?}");
}

/// The product rules, each a refusal that writes nothing.
pub fn create_refusals_write_nothing<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let one = product(&w, s, "100.00", json!({}));
    let monthly = product(&w, s, "50.00", json!({"type": "RECURRING", "recurring_interval": "MONTH"}));
    let yearly = product(&w, s, "500.00", json!({"type": "RECURRING", "recurring_interval": "YEAR"}));
    let usd_only = product(&w, s, "10.00", json!({"prices": [{"currency": "USD", "amount": "10"}]}));
    let other_branch = w.new_branch("Elsewhere");
    let foreign = consumer(&w, &w.in_branch(other_branch.id), false);
    let before = everything(&w);
    let refused = |v: Value| try_create(&w, s, &v);
    expect_invalid(refused(link_body(&[(one.id, 1), (monthly.id, 1)], &[])), "items");
    expect_invalid(refused(link_body(&[(monthly.id, 1), (yearly.id, 1)], &[])), "items");
    let mut usd = link_body(&[(one.id, 1)], &[]);
    usd["currency"] = json!("USD");
    match refused(usd) {
        Err(Error::Validation(d)) => assert_eq!(serde_json::to_value(&d[0].loc).unwrap(), json!(["body", "items", 0, "product_id"])),
        other => panic!("expected a 422 at the item, got {other:?}"),
    }
    let _ = usd_only;
    expect_code(refused(link_body(&[(ProductId::new(), 1)], &[])), Code::NOT_FOUND);
    expect_code(refused(link_body(&[(one.id, 1)], &[CouponId::new()])), Code::NOT_FOUND);
    for c in [ConsumerId::new(), foreign.id] {
        let mut b = link_body(&[(one.id, 1)], &[]);
        b["organization_consumer_id"] = json!(c);
        expect_code(refused(b), Code::NOT_FOUND);
    }
    let at = |t: crate::clock::Timestamp| {
        let mut b = link_body(&[(one.id, 1)], &[]);
        b["valid_until"] = json!(crate::clock::format_rfc3339(&t));
        b
    };
    let now = w.now();
    expect_invalid(refused(at(now - chrono::Duration::seconds(1))), "valid_until");
    expect_invalid(refused(at(now)), "valid_until");
    assert_eq!(before, everything(&w), "refusals wrote nothing");
    let later = now + chrono::Duration::microseconds(1);
    assert_eq!(create(&w, s, at(later)).valid_until, Some(later));
}

/// Recurring products: the link takes their interval, and never offers installments.
pub fn recurring_links_take_the_interval_and_no_installments<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let a = product(
        &w,
        s,
        "50.00",
        json!({"type": "RECURRING", "recurring_interval": "MONTH", "recurring_interval_count": 3}),
    );
    let b = product(
        &w,
        s,
        "20.00",
        json!({"type": "RECURRING", "recurring_interval": "MONTH", "recurring_interval_count": 3}),
    );
    let mut body = link_body(&[(a.id, 1), (b.id, 2)], &[]);
    body["payment_methods"] = json!({"visa": true, "installment": true});
    let l = create(&w, s, body);
    assert_eq!((l.recurring_interval, l.recurring_interval_count), (Some(RecurringInterval::Month), Some(3)));
    assert!(!l.payment_methods.installment, "installments are disabled for recurring products");
    assert!(l.payment_methods.visa && l.payment_methods.mada && !l.payment_methods.amex);
    assert_eq!(l.amount, money("90.00", Currency::SAR));
    let one = product(&w, s, "100.00", json!({}));
    let mut off = link_body(&[(one.id, 1)], &[]);
    off["payment_methods"] = json!({"installment": false});
    assert!(!create(&w, s, off).payment_methods.installment, "given methods override the default");
}

/// Every stored field reads back exactly, by id and by short id, and an update replaces the
/// items; a short id is unique.
pub fn payment_link_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let now = w.now();
    let m = |a: &str| money(a, Currency::KWD);
    let line = CouponLine {
        coupon_id: CouponId::new(),
        name: "C".into(),
        is_percentage: true,
        discount_value: "12.50".into(),
        currency: None,
        order: 1,
        before: m("999999999.999"),
        discount: m("0.001"),
        after: m("999999999.998"),
    };
    let item_id = PaymentLinkItemId::new();
    let mut l = PaymentLink {
        id: PaymentLinkId::new(),
        org_id: s.org_id(),
        branch_id: s.branch_id(),
        user_id: s.actor.user_id,
        short_id: new_short_id(),
        name: "ünïcode ✓".into(),
        description: Some("".into()),
        currency: Currency::KWD,
        status: PaymentLinkStatus::Inactive,
        deactivate_message: Some("sold out".into()),
        consumer_id: Some(ConsumerId::new()),
        contact_information_type: ContactInformationType::Email,
        max_number_of_payments: Some(u32::MAX),
        payments_count: 7,
        amount_collected: m("1.250"),
        valid_until: Some(ts("2030-03-01T10:11:12.123456Z")),
        checkout: CheckoutOptions {
            confirmation_message: Some("thanks".into()),
            trial_period_days: Some(14),
            custom_fields: Some(json!({"a": 1}).as_object().unwrap().clone()),
            success_redirect_url: Some("https://shop.example/ok?x=1".into()),
            failure_redirect_url: None,
        },
        custom_metadata: json!({"deep": {"x": [1, 2, {"y": "z"}]}}).as_object().unwrap().clone(),
        payment_methods: PaymentMethods {
            visa: true,
            installment: true,
            ..Default::default()
        },
        recurring_interval: Some(RecurringInterval::Year),
        recurring_interval_count: Some(2),
        coupon_ids: vec![line.coupon_id],
        coupons: vec![line.clone()],
        original_amount: m("999999999.999"),
        item_level_discounted_amount: m("0.001"),
        total_vat_amount: m("0.000"),
        total_price_excluding_vat: m("1.250"),
        amount: m("999999999.998"),
        items: vec![PaymentLinkItem {
            id: item_id,
            line: InvoiceItem {
                id: InvoiceItemId(item_id.0),
                product_id: ProductId::new(),
                price_id: None,
                quantity: 1_000_000,
                unit_price: m("0.001"),
                vat_mode: VatMode::Exclusive,
                one_time: false,
                coupon_ids: vec![line.coupon_id],
                original_amount: m("1000.000"),
                discounted_amount: m("999.999"),
                coupons: vec![line],
                vat_amount: m("0.000"),
                excluding_vat: m("999.999"),
                created_at: now,
            },
            allow_custom_quantity: true,
            min_quantity: Some(1),
            max_quantity: Some(1_000_000),
            updated_at: Some(now),
        }],
        created_at: now,
        updated_at: None,
    };
    w.write(|tx| tx.insert_payment_link(&l));
    assert_eq!(w.read(|tx| tx.payment_link(s.branch_id(), l.id)), Some(l.clone()));
    assert_eq!(w.read(|tx| tx.payment_link_by_short_id(&l.short_id)), Some(l.clone()));
    assert_eq!(w.read(|tx| tx.payment_link_by_short_id("nope")), None);
    let other = w.new_branch("Other");
    assert_eq!(w.read(|tx| tx.payment_link(other.id, l.id)), None, "another branch does not see it");
    // The row alone: its fields change, its stored items stay whatever the value holds.
    l.status = PaymentLinkStatus::Inactive;
    l.payments_count = 3;
    l.updated_at = Some(now);
    let without_items = PaymentLink { items: vec![], ..l.clone() };
    w.write(|tx| tx.update_payment_link_row(&without_items));
    assert_eq!(w.read(|tx| tx.payment_link(s.branch_id(), l.id)), Some(l.clone()));
    let elsewhere = PaymentLink {
        id: PaymentLinkId::new(),
        ..l.clone()
    };
    let missing = w.try_write(|tx| tx.update_payment_link_row(&elsewhere));
    assert!(
        matches!(missing, Err(crate::Error::Store(crate::error::StoreError::NotFound(_)))),
        "{missing:?}"
    );
    l.items.clear();
    l.status = PaymentLinkStatus::Completed;
    l.checkout = CheckoutOptions::default();
    l.updated_at = Some(now);
    w.write(|tx| tx.update_payment_link(&l));
    assert_eq!(w.read(|tx| tx.payment_link(s.branch_id(), l.id)), Some(l.clone()));
    // The metadata alone, as events read it; another branch sees none.
    assert_eq!(w.read(|tx| tx.payment_link_metadata(s.branch_id(), l.id)), Some(l.custom_metadata.clone()));
    assert_eq!(w.read(|tx| tx.payment_link_metadata(other.id, l.id)), None);
    // The collected amount grows in place to the last thousandth, the rest of the link untouched.
    w.write(|tx| tx.add_payment_link_collected(s.branch_id(), l.id, m("0.001")));
    w.write(|tx| tx.add_payment_link_collected(s.branch_id(), l.id, m("998.749")));
    l.amount_collected = m("1000.000");
    assert_eq!(w.read(|tx| tx.payment_link(s.branch_id(), l.id)), Some(l.clone()));
    let missing = w.try_write(|tx| tx.add_payment_link_collected(other.id, l.id, m("1.000")));
    assert!(
        matches!(missing, Err(crate::Error::Store(crate::error::StoreError::NotFound(_)))),
        "{missing:?}"
    );
    assert_eq!(
        w.read(|tx| tx.payment_link(s.branch_id(), l.id)),
        Some(l.clone()),
        "nothing added in another branch"
    );
    let dup = PaymentLink {
        id: PaymentLinkId::new(),
        ..l.clone()
    };
    let name = super::expect_unique(w.try_write(|tx| tx.insert_payment_link(&dup)));
    assert_eq!(name, "payment_links_short_id_key");
}

pub fn list_filters_and_sorts<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let a = product(&w, s, "10.00", json!({}));
    let b = product(&w, s, "30.00", json!({}));
    let c = consumer(&w, s, false);
    for (name, desc, p, q) in [("Alpha", "Gym ÉCOLE", a.id, 1), ("Beta", "pool", b.id, 1), ("Gamma", "50% off", a.id, 5)] {
        w.tick(10);
        let mut body = link_body(&[(p, q)], &[]);
        body["name"] = json!(name);
        body["description"] = json!(desc);
        if name == "Beta" {
            body["organization_consumer_id"] = json!(c.id);
        }
        create(&w, s, body);
    }
    // Amounts: 10.00, 30.00, 50.00 (VAT-inclusive prices).
    assert_eq!(listed(&w, ""), ["Gamma", "Beta", "Alpha"]);
    assert_eq!(listed(&w, "sort_field=amount&sort_direction=asc"), ["Alpha", "Beta", "Gamma"]);
    assert_eq!(listed(&w, "sort_field=name&sort_direction=desc"), ["Gamma", "Beta", "Alpha"]);
    assert_eq!(listed(&w, "from_price=30&to_price=50.00"), ["Gamma", "Beta"], "bounds are inclusive");
    assert_eq!(listed(&w, "to_price=%2229.99%22"), ["Alpha"]);
    assert_eq!(listed(&w, &format!("product_ids={}", a.id)), ["Gamma", "Alpha"]);
    assert_eq!(listed(&w, &format!("product_ids={}&product_ids={}", a.id, b.id)).len(), 3);
    assert_eq!(listed(&w, "search_term=%C3%A9cole"), ["Alpha"], "description, case folded beyond ASCII");
    assert_eq!(listed(&w, "search_term=BET"), ["Beta"], "name");
    assert_eq!(listed(&w, "search_term=0%25"), ["Gamma"], "LIKE wildcards match themselves");
    assert_eq!(listed(&w, "from_date=2026-01-15T09:00:15Z&to_date=2026-01-15T09:00:20Z"), ["Beta"]);
    assert_eq!(listed(&w, &format!("organization_consumer_id={}", c.id)), ["Beta"]);
    assert_eq!(listed(&w, "limit=2&page=2"), ["Alpha"]);
    assert_eq!(listed(&w, "statuses=ACTIVE").len(), 3);
    assert!(listed(&w, "statuses=INACTIVE,COMPLETED").is_empty());
    for bad in ["statuses=NOPE", "from_price=abc", "product_ids=x", "sort_field=status", "from_date=yesterday"] {
        assert!(parse_payment_link_list(&QueryParams::parse(bad)).is_err(), "{bad}");
    }
}

fn change_status<S: Store>(w: &World<S>, id: PaymentLinkId, v: Value) -> Result<PaymentLink> {
    w.billing.payment_links().update_status(&w.admin, id, StatusChange::parse(&v)?).map(|d| d.link)
}

/// Deactivate with a message, reactivate (message cleared); a completed link is refused either
/// way and an expired one keeps its status.
pub fn status_changes<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let p = product(&w, s, "10.00", json!({}));
    let mut body = link_body(&[(p.id, 1)], &[]);
    body["valid_until"] = json!("2026-01-16T09:00:00Z");
    let l = create(&w, s, body);
    w.tick(5);
    let off = change_status(&w, l.id, json!({"status": "INACTIVE", "deactivate_message": "Sold out"})).unwrap();
    assert_eq!(
        (off.status, off.deactivate_message.as_deref(), off.updated_at),
        (PaymentLinkStatus::Inactive, Some("Sold out"), Some(w.now()))
    );
    assert_eq!(off.check_payable(w.now()).unwrap_err().rule_code(), Some(Code::INVALID_STATUS));
    let on = change_status(&w, l.id, json!({"status": "ACTIVE"})).unwrap();
    assert_eq!((on.status, on.deactivate_message.as_deref()), (PaymentLinkStatus::Active, None));
    assert!(on.check_payable(w.now()).is_ok());
    // Past valid_until: the status stays ACTIVE, but it takes no payment.
    w.tick(86_400);
    let later = w.fresh_admin();
    let got = w.billing.payment_links().get(&later, l.id).unwrap().link;
    assert_eq!(got.status, PaymentLinkStatus::Active);
    assert_eq!(got.payable(w.billing.engine().now(&later)), Err(Unpayable::Expired));
    expect_code(change_status(&w, PaymentLinkId::new(), json!({"status": "ACTIVE"})), Code::NOT_FOUND);
    // Completed (used up): neither deactivated nor reactivated.
    let mut done = got.clone();
    done.status = PaymentLinkStatus::Completed;
    w.write(|tx| tx.update_payment_link(&done));
    let before = everything(&w);
    expect_code(change_status(&w, l.id, json!({"status": "INACTIVE"})), Code::INVALID_STATUS);
    expect_code(change_status(&w, l.id, json!({"status": "ACTIVE"})), Code::INVALID_STATUS);
    assert_eq!(before, everything(&w));
}

fn change_coupons<S: Store>(w: &World<S>, id: PaymentLinkId, v: Value) -> Result<PaymentLink> {
    w.billing
        .payment_links()
        .update_coupons(&w.admin, id, CouponsChange::parse(&v)?)
        .map(|d| d.link)
}

/// Link-level coupons and each item's (by `payment_link_item_id`) are replaced and the link is
/// priced again; items not named keep theirs.
pub fn coupon_changes_reprice<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let a = product(&w, s, "100.00", json!({}));
    let b = product(&w, s, "50.00", json!({}));
    let ten = coupon(&w, s, json!({"name": "TEN", "discount_value": 10, "is_percentage": true}));
    let five = coupon(&w, s, json!({"name": "FIVE", "discount_value": 5, "currency": "SAR"}));
    let mut body = link_body(&[(a.id, 1), (b.id, 2)], &[]);
    body["items"][1]["coupons"] = json!([five.id]);
    let l = create(&w, s, body);
    assert_eq!(l.amount, money("195.00", Currency::SAR));
    let first = l.items[0].id;
    let got = change_coupons(
        &w,
        l.id,
        json!({"coupons": [ten.id], "items": [{"payment_link_item_id": first, "coupons": [five.id]}]}),
    )
    .unwrap();
    // Items: 95.00 and 95.00 (their FIVE); the link's TEN: 190.00 → 171.00.
    assert_eq!(got.items[0].line.discounted_amount, money("95.00", Currency::SAR));
    assert_eq!(got.items[1].line.coupon_ids, vec![five.id], "an item not named keeps its coupons");
    assert_eq!(got.amount, money("171.00", Currency::SAR));
    assert_eq!(got.coupon_ids, vec![ten.id]);
    assert_eq!(w.billing.payment_links().get(s, l.id).unwrap().link, got);
    let cleared = change_coupons(&w, l.id, json!({"coupons": []})).unwrap();
    assert_eq!(cleared.amount, money("190.00", Currency::SAR));
    let before = everything(&w);
    let r = change_coupons(&w, l.id, json!({"items": [{"payment_link_item_id": PaymentLinkItemId::new(), "coupons": []}]}));
    expect_invalid(r, "payment_link_item_id");
    expect_code(change_coupons(&w, l.id, json!({"coupons": [CouponId::new()]})), Code::NOT_FOUND);
    let usd = coupon(&w, s, json!({"name": "USD", "discount_value": 1, "currency": "USD"}));
    let r = change_coupons(&w, l.id, json!({"items": [{"payment_link_item_id": l.items[1].id, "coupons": [usd.id]}]}));
    match r {
        Err(Error::Validation(d)) => assert_eq!(
            serde_json::to_value(&d[0].loc).unwrap(),
            json!(["body", "items", 0, "coupons", 0]),
            "located where the request named the item"
        ),
        other => panic!("expected a 422, got {other:?}"),
    }
    assert_eq!(before, everything(&w));
    let mut done = cleared;
    done.status = PaymentLinkStatus::Completed;
    w.write(|tx| tx.update_payment_link(&done));
    expect_code(change_coupons(&w, l.id, json!({"coupons": [ten.id]})), Code::INVALID_STATUS);
}

/// An ACTIVE link holds its consumer (CONSUMER_HAS_ACTIVE_PAYMENT_LINKS) and its branch
/// (BRANCH_IN_USE); once deactivated, neither.
pub fn active_links_hold_consumer_and_branch<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Shop");
    let s = &w.in_branch(b.id);
    let c = consumer(&w, s, true);
    let p = product(&w, s, "10.00", json!({}));
    let mut body = link_body(&[(p.id, 1)], &[]);
    body["organization_consumer_id"] = json!(c.id);
    body["contact_information_type"] = json!("EMAIL");
    let l = create(&w, s, body);
    assert_eq!((l.consumer_id, l.contact_information_type), (Some(c.id), ContactInformationType::Email));
    let e = expect_code(w.billing.consumers().delete(s, c.id), Code::CONSUMER_HAS_ACTIVE_PAYMENT_LINKS);
    assert!(e.to_string().contains("payment links"), "{e}");
    let e = expect_code(w.billing.branches().delete(&w.admin, b.id), Code::BRANCH_IN_USE);
    assert!(e.to_string().contains("1 active payment link(s)"), "{e}");
    assert!(!w.billing.consumers().get(s, c.id).unwrap().is_deleted);
    // Another branch sees nothing of it.
    let main = &w.admin;
    expect_code(w.billing.payment_links().get(main, l.id).map(|d| d.link), Code::NOT_FOUND);
    assert!(listed(&w, "").is_empty());
    w.billing
        .payment_links()
        .update_status(s, l.id, StatusChange::parse(&json!({"status": "INACTIVE"})).unwrap())
        .unwrap();
    w.billing.consumers().delete(s, c.id).unwrap();
    w.billing.branches().delete(&w.admin, b.id).unwrap();
}
