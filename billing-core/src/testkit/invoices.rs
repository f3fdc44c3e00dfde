//! Invoice and payment cases: exact totals, invoice numbers, stored amounts, list filters,
//! mark-paid, refunds, installments, void, send, in-place update, auto-charge, and the events
//! each writes in its transaction.

use super::{expect_code, money, Harness, World};
use crate::auth::Scope;
use crate::consumer::{Consumer, ConsumerFields};
use crate::coupon::{Coupon, CouponFields};
use crate::error::{Code, Error};
use crate::event::EventType;
use crate::ids::{ConsumerId, CouponId, InvoiceId, InvoiceItemId, PaymentId, ProductId};
use crate::invoice::*;
use crate::list::QueryParams;
use crate::money::{Currency, Money};
use crate::payment::*;
use crate::pricing::CouponLine;
use crate::product::{Product, ProductFields, VatMode};
use crate::store::Store;
use serde_json::{json, Value};

pub fn consumer<S: Store>(w: &World<S>, s: &Scope, email: bool) -> Consumer {
    let mut v = json!({"name": "Sara Al-Harbi"});
    if email {
        v["email"] = json!(super::unique_email("sara").as_str());
    }
    w.billing.consumers().create(s, ConsumerFields::parse(&v, true).unwrap()).unwrap()
}

pub fn product<S: Store>(w: &World<S>, s: &Scope, price: &str, v: Value) -> Product {
    let mut body = json!({"name": "Item", "type": "ONE_OFF", "price": price});
    for (k, x) in v.as_object().unwrap() {
        body[k] = x.clone();
    }
    w.billing
        .products()
        .create(s, ProductFields::parse(&body, true, Currency::SAR).unwrap())
        .unwrap()
}

pub fn coupon<S: Store>(w: &World<S>, s: &Scope, v: Value) -> Coupon {
    w.billing.coupons().create(s, CouponFields::parse(&v, true).unwrap()).unwrap()
}

pub fn invoice_body(c: ConsumerId, items: &[(ProductId, u32)], coupons: &[CouponId]) -> Value {
    json!({
        "organization_consumer_id": c,
        "items": items.iter().map(|(p, q)| json!({"product_id": p, "quantity": q})).collect::<Vec<_>>(),
        "coupons": coupons,
        "payment_methods": {"mada": true, "visa": true, "mastercard": true, "amex": false, "bank_transfer": true, "installment": true},
        "notify_consumer": false,
    })
}

pub fn create<S: Store>(w: &World<S>, s: &Scope, v: Value) -> Invoice {
    w.billing
        .invoices()
        .create(s, InvoiceCreate::parse(&v, Currency::SAR).unwrap())
        .unwrap_or_else(|e| panic!("create invoice {v}: {e:?}"))
        .invoice
}

fn sar(a: &str) -> Money {
    money(a, Currency::SAR)
}

fn events<S: Store>(w: &World<S>) -> Vec<(EventType, uuid::Uuid)> {
    w.read(|tx| tx.list_events(w.admin.org_id()))
        .into_iter()
        .map(|e| (e.event_type, e.entity_id))
        .collect()
}

fn snapshot<S: Store>(w: &World<S>, id: InvoiceId) -> String {
    let s = &w.admin;
    let (inv, pays) = w.billing.invoices().get(s, id).unwrap().into_parts();
    format!("{inv:?}{pays:?}{:?}{:?}", events(w), w.notifications())
}

pub fn create_computes_exact_totals<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let inc = product(&w, s, "115.00", json!({"is_price_inclusive_of_vat": true}));
    let exc = product(&w, s, "100.00", json!({"is_price_inclusive_of_vat": false}));
    let exempt = product(&w, s, "50.00", json!({"is_price_exempt_from_vat": true}));
    let ten = coupon(&w, s, json!({"name": "TEN", "discount_value": 10, "is_percentage": true}));
    let five = coupon(&w, s, json!({"name": "FIVE", "discount_value": "5", "currency": "SAR"}));
    let mut body = invoice_body(c.id, &[(inc.id, 2), (exc.id, 1), (exempt.id, 1)], &[five.id]);
    body["items"][0]["coupons"] = json!([ten.id]);
    let inv = create(&w, s, body);
    assert_eq!(inv.status, InvoiceStatus::Created);
    assert_eq!(inv.org_invoice_number, 1);
    assert_eq!(inv.original_amount, sar("380.00"));
    assert_eq!(inv.items[0].original_amount, sar("230.00"));
    assert_eq!(inv.items[0].discounted_amount, sar("207.00"));
    assert_eq!(inv.items[0].coupons[0].discount, sar("23.00"));
    assert_eq!(inv.item_level_discounted_amount, sar("357.00"));
    assert_eq!(inv.coupons.len(), 1);
    assert_eq!(
        (inv.coupons[0].before, inv.coupons[0].discount, inv.coupons[0].after),
        (sar("357.00"), sar("5.00"), sar("352.00"))
    );
    assert_eq!(
        inv.total_amount.amount(),
        inv.total_price_excluding_vat.amount() + inv.total_vat_amount.amount()
    );
    // The exclusive item adds VAT on top; the others are paid at their (discounted) price.
    let vat_exc = inv.items[1].vat_amount;
    assert_eq!(inv.total_amount.amount(), sar("352.00").amount() + vat_exc.amount());
    let (got, pays) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    assert_eq!(got, inv, "read back exactly as created");
    assert_eq!(pays.len(), 1);
    assert_eq!(inv.remaining_amount(&pays), inv.total_amount);
    assert_eq!(
        (pays[0].amount, pays[0].status, pays[0].payment_type),
        (inv.total_amount, PaymentStatus::Pending, PaymentType::Initial)
    );
    assert_eq!(events(&w), vec![(EventType::InvoiceCreated, inv.id.0)]);
    let ev = &w.read(|tx| tx.list_events(s.org_id()))[0];
    assert_eq!(ev.payload["status"], "CREATED");
    assert_eq!(ev.payload["entity_type"], "INVOICE");
    assert_eq!(ev.payload["data"]["invoice"]["id"], json!(inv.id));
    assert!(ev.payload["entity_url"].as_str().unwrap().ends_with(&format!("/api/v2/invoices/{}", inv.id)));
    assert!(w.notifications().is_empty());
}

pub fn create_refusals_write_nothing<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, true);
    let p = product(&w, s, "10.00", json!({}));
    let before = format!("{:?}{:?}", events(&w), w.notifications());
    // No active price in USD: 422 at the item.
    let mut body = invoice_body(c.id, &[(p.id, 1)], &[]);
    body["currency"] = json!("USD");
    let r = w.billing.invoices().create(s, InvoiceCreate::parse(&body, Currency::SAR).unwrap());
    assert!(matches!(r, Err(Error::Validation(_))), "{r:?}");
    let r = w.billing.invoices().create(
        s,
        InvoiceCreate::parse(&invoice_body(c.id, &[(ProductId::new(), 1)], &[]), Currency::SAR).unwrap(),
    );
    expect_code(r, Code::NOT_FOUND);
    let r = w.billing.invoices().create(
        s,
        InvoiceCreate::parse(&invoice_body(ConsumerId::new(), &[(p.id, 1)], &[]), Currency::SAR).unwrap(),
    );
    expect_code(r, Code::NOT_FOUND);
    let r = w.billing.invoices().create(
        s,
        InvoiceCreate::parse(&invoice_body(c.id, &[(p.id, 1)], &[CouponId::new()]), Currency::SAR).unwrap(),
    );
    expect_code(r, Code::NOT_FOUND);
    assert!(InvoiceCreate::parse(&json!({"items": []}), Currency::SAR).is_err());
    assert_eq!(before, format!("{:?}{:?}", events(&w), w.notifications()));
    // The failed attempts did not use up invoice numbers.
    assert_eq!(create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[])).org_invoice_number, 1);
}

pub fn notify_sends_and_records<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, true);
    let p = product(&w, s, "10.00", json!({}));
    let mut body = invoice_body(c.id, &[(p.id, 1)], &[]);
    body["notify_consumer"] = json!(true);
    let inv = create(&w, s, body);
    assert_eq!(inv.status, InvoiceStatus::Sent);
    assert_eq!(events(&w), vec![(EventType::InvoiceCreated, inv.id.0), (EventType::InvoiceSent, inv.id.0)]);
    let n = w.notifications();
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].kind, crate::notification::Kind::InvoiceSent);
    // Without a channel the invoice stays CREATED.
    let quiet = consumer(&w, s, false);
    let mut body = invoice_body(quiet.id, &[(p.id, 1)], &[]);
    body["notify_consumer"] = json!(true);
    assert_eq!(create(&w, s, body).status, InvoiceStatus::Created);
}

pub fn invoice_numbers_are_gapless_under_concurrency<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let p = product(&w, s, "10.00", json!({}));
    let body = invoice_body(c.id, &[(p.id, 1)], &[]);
    let mut numbers: Vec<i64> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..4)
            .map(|_| sc.spawn(|| (0..5).map(|_| create(&w, s, body.clone()).org_invoice_number).collect::<Vec<_>>()))
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    numbers.sort();
    assert_eq!(numbers, (1..=20).collect::<Vec<i64>>());
    // Another organization counts from 1.
    let other = w.other_org("Other", false);
    let os = w.billing.auth().authenticate(&World::<H::S>::key_of(&other), None).unwrap();
    let oc = consumer(&w, &os, false);
    let op = product(&w, &os, "10.00", json!({}));
    assert_eq!(create(&w, &os, invoice_body(oc.id, &[(op.id, 1)], &[])).org_invoice_number, 1);
}

pub fn amounts_round_trip_through_the_store<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    for (cur, amounts) in [
        (Currency::SAR, ["0.01", "999999999999.99", "4791.67"]),
        (Currency::KWD, ["0.001", "1.250", "999999999.999"]),
        (Currency::JPY, ["1", "500", "999999999999"]),
    ] {
        let m = |a: &str| money(a, cur);
        let line = CouponLine {
            coupon_id: CouponId::new(),
            name: "C".into(),
            is_percentage: false,
            discount_value: amounts[0].into(),
            currency: Some(cur),
            order: 1,
            before: m(amounts[1]),
            discount: m(amounts[0]),
            after: m(amounts[2]),
        };
        let now = w.now();
        let inv = Invoice {
            id: InvoiceId::new(),
            org_id: s.org_id(),
            branch_id: s.branch_id(),
            user_id: s.actor.user_id,
            consumer_id: c.id,
            org_invoice_number: w.write(|tx| tx.next_invoice_number(s.org_id())),
            description: Some("ünïcode ✓".into()),
            currency: cur,
            status: InvoiceStatus::Accepted,
            payment_methods: PaymentMethods {
                mada: true,
                installment: true,
                ..Default::default()
            },
            coupon_ids: vec![line.coupon_id],
            exclude_coupons_if_installments: true,
            notify_consumer: false,
            scheduled_on: super::ts("2026-03-01T10:11:12.123456Z"),
            original_amount: m(amounts[1]),
            item_level_discounted_amount: m(amounts[2]),
            total_vat_amount: m(amounts[0]),
            total_price_excluding_vat: m(amounts[2]),
            total_amount: m(amounts[1]),
            paid_amount: m(amounts[0]),
            coupons: vec![line.clone()],
            installments: Some(3),
            payment_link_id: Some(uuid::Uuid::now_v7()),
            subscription_id: None,
            items: vec![InvoiceItem {
                id: InvoiceItemId::new(),
                product_id: ProductId::new(),
                price_id: None,
                quantity: 7,
                unit_price: m(amounts[2]),
                vat_mode: VatMode::Exempt,
                one_time: true,
                coupon_ids: vec![line.coupon_id],
                original_amount: m(amounts[1]),
                discounted_amount: m(amounts[2]),
                coupons: vec![line],
                vat_amount: m(amounts[0]),
                excluding_vat: m(amounts[2]),
                created_at: now,
            }],
            created_at: now,
            updated_at: Some(now),
        };
        let pay = Payment {
            id: PaymentId::new(),
            org_id: s.org_id(),
            branch_id: s.branch_id(),
            invoice_id: inv.id,
            number: 1,
            amount: m(amounts[1]),
            payment_type: PaymentType::Installment,
            method: Some(PaymentMethod::BankTransfer),
            status: PaymentStatus::Refunded,
            scheduled_on: now,
            payed_at: Some(now),
            refunded_at: Some(now),
            refund_reason: Some(RefundReason::Duplicate),
            refund_note: Some("note".into()),
            note: None,
            transaction_id: Some(uuid::Uuid::now_v7()),
            latest_pgw_message: Some("00 APPROVED".into()),
            created_at: now,
            updated_at: None,
        };
        w.write(|tx| {
            tx.insert_invoice(&inv)?;
            tx.insert_payment(&pay)
        });
        assert_eq!(w.read(|tx| tx.invoice(s.branch_id(), inv.id)), Some(inv.clone()));
        assert_eq!(w.read(|tx| tx.payment(s.branch_id(), pay.id)), Some(pay.clone()));
        assert_eq!(w.read(|tx| tx.invoice_payments(inv.id)), vec![pay.clone()]);
        // The row alone: its fields change, its stored items stay whatever the value holds.
        let paid = Invoice {
            status: InvoiceStatus::Completed,
            paid_amount: m(amounts[1]),
            updated_at: Some(now + chrono::Duration::seconds(1)),
            ..inv.clone()
        };
        let without_items = Invoice { items: vec![], ..paid.clone() };
        w.write(|tx| tx.update_invoice_row(&without_items));
        assert_eq!(w.read(|tx| tx.invoice(s.branch_id(), inv.id)), Some(paid.clone()));
        let elsewhere = Invoice {
            id: InvoiceId::new(),
            ..paid.clone()
        };
        let missing = w.try_write(|tx| tx.update_invoice_row(&elsewhere));
        assert!(
            matches!(missing, Err(crate::Error::Store(crate::error::StoreError::NotFound(_)))),
            "{missing:?}"
        );
        w.write(|tx| tx.update_invoice_row(&inv));
        assert_eq!(w.read(|tx| tx.invoice(s.branch_id(), inv.id)), Some(inv.clone()));
        // Many more amounts, spread over the whole accepted range (a fixed pseudo-random
        // sequence, so a failure reproduces): each payment reads back exactly.
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15 ^ cur.minor_digits() as u64;
        let max_minor: u64 = 1_000_000_000_000 * 10u64.pow(cur.minor_digits());
        let written: Vec<Payment> = (0..64u32)
            .map(|k| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let minor = (seed >> 11) % (max_minor + 1);
                Payment {
                    id: PaymentId::new(),
                    number: k + 2,
                    amount: Money::from_minor(minor as i64, cur),
                    ..pay.clone()
                }
            })
            .collect();
        w.write(|tx| {
            for p in &written {
                tx.insert_payment(p)?;
            }
            Ok(())
        });
        let back = w.read(|tx| tx.invoice_payments(inv.id));
        assert_eq!(&back[1..], &written[..], "amounts round-trip exactly in {cur}");
        let other = w.new_branch(&format!("Elsewhere {cur}"));
        assert_eq!(w.read(|tx| tx.invoice(other.id, inv.id)), None, "another branch does not see it");
    }
}

fn list<S: Store>(w: &World<S>, query: &str) -> Vec<i64> {
    let req = parse_invoice_list(&QueryParams::parse(query)).unwrap_or_else(|e| panic!("{query}: {e:?}"));
    w.billing
        .invoices()
        .list(&w.admin, &req)
        .unwrap()
        .items
        .iter()
        .map(|d| d.invoice.org_invoice_number)
        .collect()
}

pub fn list_filters_and_sorts<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let a = consumer(&w, s, false);
    let b = w
        .billing
        .consumers()
        .create(s, ConsumerFields::parse(&json!({"name": "Omar Zahrani"}), true).unwrap())
        .unwrap();
    let p = product(&w, s, "10.00", json!({"prices": [{"currency": "USD", "amount": "20"}]}));
    let mut ids = vec![];
    for (k, (cons, qty, cur, desc)) in [(a.id, 1, "SAR", "gym"), (b.id, 3, "SAR", "Pool pass"), (a.id, 5, "USD", "Yoga ÉCOLE")]
        .iter()
        .enumerate()
    {
        w.tick(10);
        let mut body = invoice_body(*cons, &[(p.id, *qty)], &[]);
        body["currency"] = json!(cur);
        body["description"] = json!(desc);
        body["scheduled_on"] = json!(format!("2026-02-0{}T00:00:00Z", k + 1));
        ids.push(create(&w, s, body).id);
    }
    // Totals: 10.00 SAR, 30.00 SAR, 100.00 USD (VAT-inclusive prices).
    assert_eq!(list(&w, ""), vec![3, 2, 1]);
    assert_eq!(list(&w, "sort_field=total_amount&sort_direction=asc"), vec![1, 2, 3]);
    assert_eq!(list(&w, "currencies=USD"), vec![3]);
    assert_eq!(list(&w, "currencies=USD,SAR&sort_direction=asc"), vec![1, 2, 3]);
    assert_eq!(list(&w, "from_price=20&to_price=%2250.00%22".replace("%22", "").as_str()), vec![2]);
    assert_eq!(list(&w, &format!("organization_consumer_id={}", a.id)), vec![3, 1]);
    assert_eq!(list(&w, "search_term=POOL"), vec![2]);
    assert_eq!(list(&w, "search_term=omar"), vec![2]);
    assert_eq!(list(&w, "search_term=%C3%A9cole"), vec![3], "case folds beyond ASCII");
    assert_eq!(list(&w, "search_term=50%25"), Vec::<i64>::new(), "LIKE wildcards match themselves");
    assert_eq!(list(&w, "search_term=3"), vec![3]);
    assert_eq!(list(&w, "due_date_from=2026-02-02T00:00:00Z&due_date_to=2026-02-02T23:00:00Z"), vec![2]);
    assert_eq!(list(&w, "statuses=CREATED&statuses=SENT"), vec![3, 2, 1]);
    assert_eq!(list(&w, "statuses=COMPLETED"), Vec::<i64>::new());
    assert_eq!(list(&w, "limit=2&page=2"), vec![1]);
    // Mark the first paid in cash: payment status filter and payments_not_settled (card only).
    let (_, pays) = w.billing.invoices().get(s, ids[0]).unwrap().into_parts();
    w.billing
        .payments()
        .mark_paid(
            s,
            pays[0].id,
            MarkPaid {
                method: PaymentMethod::Cash,
                note: None,
            },
        )
        .unwrap();
    assert_eq!(list(&w, "payment_statuses=SUCCEEDED"), vec![1]);
    assert_eq!(list(&w, "statuses=COMPLETED"), vec![1]);
    assert_eq!(list(&w, "payments_not_settled=true"), Vec::<i64>::new());
    assert!(parse_invoice_list(&QueryParams::parse("statuses=NOPE")).is_err());
    assert!(parse_invoice_list(&QueryParams::parse("from_price=abc")).is_err());
    assert!(parse_invoice_list(&QueryParams::parse("currencies=XXX")).is_err());
    let req = parse_invoice_list(&QueryParams::parse("include_payments=true")).unwrap();
    let page = w.billing.invoices().list(s, &req).unwrap();
    let item = serde_json::to_value(page.items[0].list_item(w.billing.engine().public_url(), req.include_payments)).unwrap();
    assert_eq!(item["payments"].as_array().unwrap().len(), 1);
    // Payments list.
    let (q, f) = parse_payment_list(&QueryParams::parse(&format!("invoice_id={}&invoice_id={}", ids[0], ids[1]))).unwrap();
    assert_eq!(w.billing.payments().list(s, &q, &f).unwrap().items.len(), 2);
    let (q, f) = parse_payment_list(&QueryParams::parse("statuses=SUCCEEDED")).unwrap();
    assert_eq!(w.billing.payments().list(s, &q, &f).unwrap().items.len(), 1);
}

pub fn mark_paid_completes_with_events<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let p = product(&w, s, "10.00", json!({}));
    let cp = coupon(&w, s, json!({"name": "X", "discount_value": 1, "is_percentage": true}));
    let inv = create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[cp.id]));
    let pay = w.billing.invoices().get(s, inv.id).unwrap().payments.remove(0);
    let snap = snapshot(&w, inv.id);
    let r = w.billing.payments().mark_paid(
        s,
        pay.id,
        MarkPaid {
            method: PaymentMethod::Visa,
            note: None,
        },
    );
    expect_code(r, Code::PAYMENT_FLOW_NOT_ALLOWED);
    assert_eq!(snap, snapshot(&w, inv.id), "a refused mark-paid changes nothing");
    w.tick(5);
    let paid = w
        .billing
        .payments()
        .mark_paid(
            s,
            pay.id,
            MarkPaid {
                method: PaymentMethod::BankTransfer,
                note: Some("wire".into()),
            },
        )
        .unwrap();
    assert_eq!(paid.status, PaymentStatus::Succeeded);
    assert_eq!(paid.method, Some(PaymentMethod::BankTransfer));
    assert_eq!(paid.payed_at, Some(w.now()));
    let (inv2, pays2) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    assert_eq!(inv2.status, InvoiceStatus::Completed);
    assert_eq!(inv2.paid_amount, inv2.total_amount);
    assert!(inv2.remaining_amount(&pays2).is_zero());
    assert_eq!(
        events(&w),
        vec![
            (EventType::InvoiceCreated, inv.id.0),
            (EventType::PaymentMarkedAsPaid, pay.id.0),
            (EventType::InvoiceCompleted, inv.id.0)
        ]
    );
    // The products and coupons of a finalised invoice are frozen.
    assert!(w.billing.products().get(s, p.id).unwrap().used_in_finalized_invoice);
    assert!(w.billing.coupons().get(s, cp.id).unwrap().used_in_finalized_invoice);
    let snap = snapshot(&w, inv.id);
    expect_code(
        w.billing.payments().mark_paid(
            s,
            pay.id,
            MarkPaid {
                method: PaymentMethod::Cash,
                note: None,
            },
        ),
        Code::PAYMENT_FINALIZED,
    );
    expect_code(w.billing.invoices().void(s, inv.id), Code::INVOICE_FINALISED);
    expect_code(w.billing.invoices().send(s, inv.id), Code::INVOICE_FINALISED);
    expect_code(
        w.billing.invoices().update(
            s,
            inv.id,
            InvoiceInPlaceUpdate {
                description: Some("x".into()),
                scheduled_on: None,
            },
        ),
        Code::INVOICE_FINALISED,
    );
    assert_eq!(snap, snapshot(&w, inv.id));
}

pub fn refunds_single_and_related<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let p = product(&w, s, "10.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    let pay = w.billing.invoices().get(s, inv.id).unwrap().payments.remove(0);
    let req = RefundRequest {
        reason: RefundReason::RequestedByCustomer,
        note: Some("sorry".into()),
        allow_multiple: false,
    };
    expect_code(w.billing.payments().refund(s, pay.id, req.clone()), Code::INVALID_STATUS);
    w.billing
        .payments()
        .mark_paid(
            s,
            pay.id,
            MarkPaid {
                method: PaymentMethod::Cash,
                note: None,
            },
        )
        .unwrap();
    let r = w.billing.payments().refund(s, pay.id, req.clone()).unwrap();
    assert_eq!(r.status, PaymentStatus::Refunded);
    assert_eq!(
        (r.refund_reason, r.refund_note.as_deref(), r.refunded_at),
        (Some(RefundReason::RequestedByCustomer), Some("sorry"), Some(w.now()))
    );
    assert_eq!(
        w.billing.invoices().get(s, inv.id).unwrap().invoice.status,
        InvoiceStatus::Completed,
        "the invoice does not change"
    );
    assert_eq!(events(&w).last(), Some(&(EventType::PaymentRefunded, pay.id.0)));
    let n = events(&w).len();
    expect_code(w.billing.payments().refund(s, pay.id, req.clone()), Code::PAYMENT_REFUNDED_ALREADY);
    assert_eq!(events(&w).len(), n);

    // Two installments paid in one transaction: refunding one needs the flag.
    let big = product(&w, s, "400.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(big.id, 1)], &[]));
    let (_, pays) = w.billing.invoices().accept(s, inv.id, PaymentPlan::Installments(2)).unwrap();
    let txn = uuid::Uuid::now_v7();
    w.write(|tx| {
        for p in &pays {
            let mut p = p.clone();
            p.status = PaymentStatus::Succeeded;
            p.method = Some(PaymentMethod::Mada);
            p.transaction_id = Some(txn);
            p.payed_at = Some(w.now());
            tx.update_payment(&p)?;
        }
        Ok(())
    });
    let before = snapshot(&w, inv.id);
    match w.billing.payments().refund(s, pays[0].id, req.clone()) {
        Err(Error::MultiplePayments { payment_ids, total_amount }) => {
            assert_eq!(payment_ids.len(), 2);
            assert_eq!(total_amount, "400.00");
        }
        other => panic!("expected MultiplePayments, got {other:?}"),
    }
    assert_eq!(before, snapshot(&w, inv.id));
    let all = RefundRequest { allow_multiple: true, ..req };
    w.billing.payments().refund(s, pays[0].id, all).unwrap();
    let (_, after) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    assert!(after.iter().all(|p| p.status == PaymentStatus::Refunded));
    let refunded: Vec<_> = events(&w).into_iter().filter(|e| e.0 == EventType::PaymentRefunded).collect();
    assert_eq!(refunded.len(), 3);
}

pub fn installments_replace_the_payment<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let p = product(&w, s, "100.00", json!({}));
    let cp = coupon(&w, s, json!({"name": "X", "discount_value": 10, "is_percentage": true}));
    let mut body = invoice_body(c.id, &[(p.id, 4)], &[cp.id]);
    body["exclude_coupons_if_installments"] = json!(true);
    let inv = create(&w, s, body);
    assert_eq!(inv.total_amount, sar("360.00"));
    // The plans split what installments cost: 400.00 without the coupon (4 × 100.00 is
    // allowed), as accepting computes it.
    assert_eq!(w.billing.invoices().installment_options(s, &inv), vec![2, 3, 4]);
    // Mark-paid is refused on an installment invoice that is not accepted: not yet one here.
    let before = snapshot(&w, inv.id);
    expect_code(w.billing.invoices().accept(s, inv.id, PaymentPlan::Installments(5)), Code::INVALID_PARAMETERS);
    assert_eq!(before, snapshot(&w, inv.id));
    let (acc, pays) = w.billing.invoices().accept(s, inv.id, PaymentPlan::Installments(3)).unwrap();
    assert_eq!(acc.status, InvoiceStatus::Accepted);
    assert_eq!(acc.total_amount, sar("400.00"), "coupons excluded with installments");
    assert!(acc.coupons.is_empty());
    let amounts: Vec<Money> = pays.iter().map(|p| p.amount).collect();
    assert_eq!(amounts, vec![sar("133.33"), sar("133.33"), sar("133.34")]);
    assert!(pays.iter().all(|p| p.payment_type == PaymentType::Installment));
    assert_eq!(pays[0].scheduled_on, w.now());
    assert_eq!(crate::clock::format_rfc3339(&pays[1].scheduled_on), "2026-02-15T09:00:00.000000Z");
    assert_eq!(w.billing.invoices().get(s, inv.id).unwrap().payments, pays);
    assert_eq!(events(&w).last(), Some(&(EventType::InvoiceAccepted, inv.id.0)));
    expect_code(w.billing.invoices().accept(s, inv.id, PaymentPlan::Full), Code::INVOICE_INVALID_STATUS);
    // Paying them one by one completes the invoice only with the last.
    for (k, p) in pays.iter().enumerate() {
        w.billing
            .payments()
            .mark_paid(
                s,
                p.id,
                MarkPaid {
                    method: PaymentMethod::Cash,
                    note: None,
                },
            )
            .unwrap();
        let st = w.billing.invoices().get(s, inv.id).unwrap().invoice.status;
        assert_eq!(st == InvoiceStatus::Completed, k == 2);
    }
    let completed = events(&w).into_iter().filter(|e| e.0 == EventType::InvoiceCompleted).count();
    assert_eq!(completed, 1);

    // Not offered: installments off, recurring products, below the minimum, no minimum.
    let mut body = invoice_body(c.id, &[(p.id, 1)], &[]);
    body["payment_methods"]["installment"] = json!(false);
    let off = create(&w, s, body);
    expect_code(
        w.billing.invoices().accept(s, off.id, PaymentPlan::Installments(2)),
        Code::PAYMENT_FLOW_NOT_ALLOWED,
    );
    let rec = product(&w, s, "500.00", json!({"type": "RECURRING", "recurring_interval": "MONTH"}));
    let r = create(&w, s, invoice_body(c.id, &[(rec.id, 1)], &[]));
    expect_code(
        w.billing.invoices().accept(s, r.id, PaymentPlan::Installments(2)),
        Code::PAYMENT_FLOW_NOT_ALLOWED,
    );
    let small = create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    expect_code(w.billing.invoices().accept(s, small.id, PaymentPlan::Installments(2)), Code::INVALID_PARAMETERS);
    // Full payment: accepted, payment unchanged.
    let (full, fp) = w.billing.invoices().accept(s, small.id, PaymentPlan::Full).unwrap();
    assert_eq!((full.status, fp.len(), fp[0].payment_type), (InvoiceStatus::Accepted, 1, PaymentType::Initial));
}

pub fn installment_mark_paid_needs_accepted<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let p = product(&w, s, "400.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    let (mut acc, pays) = w.billing.invoices().accept(s, inv.id, PaymentPlan::Installments(2)).unwrap();
    // Put the installment invoice back to SENT (as a re-issue would) to see the rule.
    acc.status = InvoiceStatus::Sent;
    w.write(|tx| tx.update_invoice(&acc));
    let before = snapshot(&w, inv.id);
    expect_code(
        w.billing.payments().mark_paid(
            s,
            pays[0].id,
            MarkPaid {
                method: PaymentMethod::Cash,
                note: None,
            },
        ),
        Code::INVOICE_INVALID_STATUS,
    );
    assert_eq!(before, snapshot(&w, inv.id));
}

pub fn void_send_and_inplace<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, true);
    let p = product(&w, s, "10.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    w.tick(1);
    let sent = w.billing.invoices().send(s, inv.id).unwrap().invoice;
    assert_eq!(sent.status, InvoiceStatus::Sent);
    assert_eq!(w.notifications().len(), 1);
    let again = w.billing.invoices().send(s, inv.id).unwrap().invoice;
    assert_eq!(again.status, InvoiceStatus::Sent);
    assert_eq!(w.notifications().len(), 2, "a resend is another notification");
    let when = super::ts("2026-05-01T00:00:00Z");
    let upd = w
        .billing
        .invoices()
        .update(
            s,
            inv.id,
            InvoiceInPlaceUpdate {
                description: Some("new".into()),
                scheduled_on: Some(when),
            },
        )
        .unwrap()
        .invoice;
    assert_eq!((upd.description.as_deref(), upd.scheduled_on), (Some("new"), when));
    let (_, pays) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    assert_eq!(pays[0].scheduled_on, when);
    let void = w.billing.invoices().void(s, inv.id).unwrap().invoice;
    assert_eq!(void.status, InvoiceStatus::Canceled);
    let (_, pays) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    assert_eq!(pays[0].status, PaymentStatus::Canceled);
    let kinds: Vec<EventType> = events(&w).into_iter().map(|e| e.0).collect();
    assert_eq!(
        kinds,
        vec![
            EventType::InvoiceCreated,
            EventType::InvoiceSent,
            EventType::InvoiceSent,
            EventType::InvoiceUpdated,
            EventType::PaymentCanceled,
            EventType::InvoiceCanceled
        ]
    );
    expect_code(w.billing.invoices().void(s, inv.id), Code::INVOICE_FINALISED);
    expect_code(
        w.billing.payments().mark_paid(
            s,
            pays[0].id,
            MarkPaid {
                method: PaymentMethod::Cash,
                note: None,
            },
        ),
        Code::PAYMENT_FINALIZED,
    );
    assert!(
        w.billing.products().get(s, p.id).unwrap().used_in_finalized_invoice,
        "a canceled invoice is finalised"
    );
}

pub fn consumer_with_open_invoices_cannot_be_deleted<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let p = product(&w, s, "10.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    expect_code(w.billing.consumers().delete(s, c.id), Code::CONSUMER_HAS_ONGOING_INVOICES);
    assert!(!w.billing.consumers().get(s, c.id).unwrap().is_deleted);
    w.billing.invoices().void(s, inv.id).unwrap();
    w.billing.consumers().delete(s, c.id).unwrap();
}

pub fn auto_charge_on_demand<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let p = product(&w, s, "10.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    let pay = w.billing.invoices().get(s, inv.id).unwrap().payments.remove(0);
    expect_code(w.billing.payments().auto_charge(s, pay.id), Code::FEATURE_DISABLED);
    let mut org = s.org.clone();
    org.settings.auto_charge_on_demand = true;
    w.write(|tx| tx.update_org(&org));
    let s = &w.fresh_admin();
    expect_code(w.billing.payments().auto_charge(s, PaymentId::new()), Code::NOT_FOUND);
    expect_code(w.billing.payments().auto_charge(s, pay.id), Code::INVALID_PARAMETERS);
    // A declined card: FAILED with PAYMENT_FAILED only, and a 400.
    let bad = w.billing.payments().save_card(s, c.id, "4123120001090000", 12, 2030, true).unwrap();
    assert_eq!((bad.network.as_str(), bad.last_four.as_str()), ("VISA", "0000"));
    assert!(!bad.gateway_token.contains("4123120001090000"));
    expect_code(w.billing.payments().auto_charge(s, pay.id), Code::INVALID_PARAMETERS);
    let failed = w.billing.payments().get(s, pay.id).unwrap();
    assert_eq!(failed.status, PaymentStatus::Failed);
    assert_eq!(events(&w).last(), Some(&(EventType::PaymentFailed, pay.id.0)));
    w.tick(1);
    w.billing.payments().save_card(s, c.id, "4201320111111010", 12, 2030, true).unwrap();
    let (pid, iid) = w.billing.payments().auto_charge(s, pay.id).unwrap();
    assert_eq!((pid, iid), (pay.id, inv.id));
    let paid = w.billing.payments().get(s, pay.id).unwrap();
    assert_eq!((paid.status, paid.method), (PaymentStatus::Succeeded, Some(PaymentMethod::Mada)));
    let tail: Vec<_> = events(&w).into_iter().rev().take(2).collect();
    assert_eq!(tail, vec![(EventType::InvoiceCompleted, inv.id.0), (EventType::PaymentSucceeded, pay.id.0)]);
    expect_code(w.billing.payments().auto_charge(s, pay.id), Code::PAYMENT_FINALIZED);
    // Without consent: 404.
    let c2 = consumer(&w, s, false);
    let inv2 = create(&w, s, invoice_body(c2.id, &[(p.id, 1)], &[]));
    w.billing.payments().save_card(s, c2.id, "4111111111111111", 12, 2030, false).unwrap();
    let pay2 = w.billing.invoices().get(s, inv2.id).unwrap().payments.remove(0);
    expect_code(w.billing.payments().auto_charge(s, pay2.id), Code::NOT_FOUND);
}

fn card(number: &str) -> gateway::CardDetails {
    gateway::CardDetails {
        name: "Sara Harbi".into(),
        number: number.into(),
        expiry_month: 12,
        expiry_year: 2030,
        cvc: "123".into(),
    }
}

pub fn several_payments_paid_together<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let p = product(&w, s, "100.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(p.id, 6)], &[]));
    let (_, pays) = w.billing.invoices().accept(s, inv.id, PaymentPlan::Installments(3)).unwrap();
    // A card form error charges nothing and writes nothing.
    let before = snapshot(&w, inv.id);
    let mut bad = card("4111111111111111");
    bad.name = "Sara".into();
    assert!(matches!(
        w.billing.payments().pay_by_card(s, inv.id, &[pays[0].id], &bad),
        Err(Error::Validation(_))
    ));
    assert_eq!(before, snapshot(&w, inv.id));
    // A declined card: each chosen payment FAILED, PAYMENT_FAILED only.
    let n = events(&w).len();
    expect_code(
        w.billing
            .payments()
            .pay_by_card(s, inv.id, &[pays[0].id, pays[1].id], &card("4201320000311101")),
        Code::INVALID_PARAMETERS,
    );
    assert_eq!(
        events(&w)[n..],
        [(EventType::PaymentFailed, pays[0].id.0), (EventType::PaymentFailed, pays[1].id.0)]
    );
    // Two installments together: one PAYMENT_SUCCEEDED each, no INVOICE_COMPLETED yet.
    let n = events(&w).len();
    let paid = w
        .billing
        .payments()
        .pay_by_card(s, inv.id, &[pays[0].id, pays[1].id], &card("4201320111111010"))
        .unwrap();
    assert!(paid
        .iter()
        .all(|p| p.status == PaymentStatus::Succeeded && p.method == Some(PaymentMethod::Mada)));
    assert_eq!(paid[0].transaction_id, paid[1].transaction_id);
    assert_eq!(
        events(&w)[n..],
        [(EventType::PaymentSucceeded, pays[0].id.0), (EventType::PaymentSucceeded, pays[1].id.0)]
    );
    assert_eq!(w.billing.invoices().get(s, inv.id).unwrap().invoice.status, InvoiceStatus::Accepted);
    // Paid together: refunding one needs the flag.
    let req = RefundRequest {
        reason: RefundReason::Duplicate,
        note: None,
        allow_multiple: false,
    };
    assert!(matches!(w.billing.payments().refund(s, pays[0].id, req), Err(Error::MultiplePayments { .. })));
    // The last one completes the invoice.
    let n = events(&w).len();
    w.billing.payments().pay_by_card(s, inv.id, &[pays[2].id], &card("5421080101000000")).unwrap();
    assert_eq!(
        events(&w)[n..],
        [(EventType::PaymentSucceeded, pays[2].id.0), (EventType::InvoiceCompleted, inv.id.0)]
    );
    expect_code(
        w.billing.payments().pay_by_card(s, inv.id, &[pays[2].id], &card("5421080101000000")),
        Code::PAYMENT_FINALIZED,
    );
}

/// Each invoice that uses a coupon (on an item or on the whole invoice, once per invoice)
/// counts one redemption; a refused invoice counts none.
pub fn coupons_count_their_redemptions<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, true);
    let p = product(&w, s, "100.00", json!({}));
    let ten = coupon(&w, s, json!({"name": "TEN", "discount_value": 10, "is_percentage": true}));
    let five = coupon(&w, s, json!({"name": "FIVE", "discount_value": 5, "currency": "SAR"}));
    let redemptions = |id: CouponId| w.billing.coupons().get(s, id).unwrap().redemptions;
    assert_eq!((redemptions(ten.id), redemptions(five.id)), (0, 0));

    create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[ten.id]));
    let mut body = invoice_body(c.id, &[(p.id, 2)], &[ten.id, five.id]);
    body["items"][0]["coupons"] = json!([ten.id]);
    create(&w, s, body);
    assert_eq!(
        (redemptions(ten.id), redemptions(five.id)),
        (2, 1),
        "the same coupon twice in one invoice counts once"
    );

    // Refused (a product without a price in USD): nothing counted.
    let mut refused = invoice_body(c.id, &[(p.id, 1)], &[five.id]);
    refused["currency"] = json!("USD");
    assert!(w.billing.invoices().create(s, InvoiceCreate::parse(&refused, Currency::SAR).unwrap()).is_err());
    assert_eq!((redemptions(ten.id), redemptions(five.id)), (2, 1));
    let listed = w
        .billing
        .coupons()
        .list(s, &crate::list::ListQuery::new(crate::coupon::CouponSort::CreatedAt), &Default::default())
        .unwrap();
    let counts: Vec<u64> = listed.items.iter().map(|x| x.redemptions).collect();
    assert_eq!(counts, vec![1, 2], "lists show the counts too (newest first)");
}

/// What the amounts mean: a fully discounted invoice has nothing to pay and is settled at
/// creation (no payment event, no notification, nothing to mark, charge or refund); a refund
/// takes its amount off `paid_amount` and leaves the status; `remaining_amount` is what the
/// unpaid payments still owe; the mark-paid note is shown with the payment.
pub fn amounts_after_zero_totals_and_refunds<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, true);
    let p = product(&w, s, "115.00", json!({}));
    let free = coupon(&w, s, json!({"name": "FREE", "discount_value": 100, "is_percentage": true}));
    let mut body = invoice_body(c.id, &[(p.id, 1)], &[free.id]);
    body["notify_consumer"] = json!(true);
    let n = events(&w).len();
    let zero = create(&w, s, body);
    assert_eq!((zero.status, zero.total_amount), (InvoiceStatus::Completed, sar("0.00")));
    assert_eq!(
        events(&w)[n..],
        [(EventType::InvoiceCreated, zero.id.0), (EventType::InvoiceCompleted, zero.id.0)]
    );
    assert!(w.notifications().is_empty(), "nothing to pay, nothing sent");
    let (_, pays) = w.billing.invoices().get(s, zero.id).unwrap().into_parts();
    assert_eq!((pays[0].status, pays[0].amount), (PaymentStatus::Succeeded, sar("0.00")));
    assert!(w.billing.products().get(s, p.id).unwrap().used_in_finalized_invoice);
    let manual = MarkPaid {
        method: PaymentMethod::Cash,
        note: Some("counter 3".into()),
    };
    expect_code(w.billing.payments().mark_paid(s, pays[0].id, manual.clone()), Code::PAYMENT_FINALIZED);
    let refund = RefundRequest {
        reason: RefundReason::Other,
        note: None,
        allow_multiple: false,
    };
    expect_code(w.billing.payments().refund(s, pays[0].id, refund.clone()), Code::INVALID_PARAMETERS);
    // Three installments: one paid then refunded.
    let p2 = product(&w, s, "100.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(p2.id, 6)], &[]));
    let (_, parts) = w.billing.invoices().accept(s, inv.id, PaymentPlan::Installments(3)).unwrap();
    let paid = w.billing.payments().mark_paid(s, parts[0].id, manual).unwrap();
    assert_eq!(paid.note.as_deref(), Some("counter 3"));
    assert_eq!(
        serde_json::to_value(w.billing.payments().get(s, parts[0].id).unwrap().response()).unwrap()["note"],
        "counter 3"
    );
    let (after_pay, pays) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    assert_eq!(after_pay.paid_amount, parts[0].amount);
    assert_eq!(
        after_pay.remaining_amount(&pays).amount(),
        after_pay.total_amount.amount() - parts[0].amount.amount()
    );
    let n = events(&w).len();
    w.billing.payments().refund(s, parts[0].id, refund).unwrap();
    let (after_refund, pays) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    assert_eq!(after_refund.status, InvoiceStatus::Accepted, "a refund leaves the status");
    assert_eq!(after_refund.paid_amount, sar("0.00"));
    assert_eq!(
        after_refund.remaining_amount(&pays).amount(),
        parts[1].amount.amount() + parts[2].amount.amount(),
        "the refunded part is not owed again"
    );
    assert_eq!(events(&w)[n..], [(EventType::PaymentRefunded, parts[0].id.0)]);
    let detail = w.billing.invoices().get(s, inv.id).unwrap();
    let view = serde_json::to_value(detail.detailed(&s.branch.name, w.billing.engine().public_url(), &s.org.settings)).unwrap();
    assert_eq!(view["paid_amount"], "0.00");
    assert_eq!(view["remaining_amount"], json!(after_refund.remaining_amount(&pays)));
}

/// A page of invoices reads its payments and consumers in one go each
/// (`payments_of_invoices`, `consumers_by_ids`): the same rows as one read per invoice, in a
/// transaction's own writes too, and nothing of another branch.
pub fn page_reads_payments_and_consumers_in_one_go<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let (a, b) = (consumer(&w, s, false), consumer(&w, s, true));
    let p = product(&w, s, "100.00", json!({}));
    let one = create(&w, s, invoice_body(a.id, &[(p.id, 1)], &[]));
    let split = create(&w, s, invoice_body(b.id, &[(p.id, 6)], &[]));
    w.billing.invoices().accept(s, split.id, PaymentPlan::Installments(3)).unwrap();
    let third = create(&w, s, invoice_body(a.id, &[(p.id, 2)], &[]));
    let ids = [one.id, split.id, third.id];
    let all = w.read(|tx| tx.payments_of_invoices(&ids));
    assert_eq!(all.len(), 5);
    for id in ids {
        let each = w.read(|tx| tx.invoice_payments(id));
        let batched: Vec<Payment> = all.iter().filter(|p| p.invoice_id == id).cloned().collect();
        assert_eq!(batched, each, "the invoice's payments, by number");
    }
    let first = all.iter().position(|p| p.invoice_id == split.id).unwrap();
    assert!(all[first..first + 3].iter().all(|p| p.invoice_id == split.id), "grouped by invoice");
    assert_eq!(w.read(|tx| tx.payments_of_invoices(&[])), vec![]);
    assert_eq!(w.read(|tx| tx.payments_of_invoices(&[InvoiceId::new()])), vec![]);
    // A transaction's own writes are read back.
    let noted = w.write(|tx| {
        let mut p = tx.invoice_payments(one.id)?.remove(0);
        p.note = Some("changed".into());
        tx.update_payment(&p)?;
        tx.payments_of_invoices(&[one.id, third.id])
    });
    assert_eq!(noted.iter().find(|p| p.invoice_id == one.id).unwrap().note.as_deref(), Some("changed"));
    // Consumers: deleted ones too, unknown ids and other branches' left out.
    let gone = consumer(&w, s, false);
    w.billing.consumers().delete(s, gone.id).unwrap();
    let elsewhere = w.new_branch("Elsewhere");
    let mut got = w.read(|tx| tx.consumers_by_ids(s.branch_id(), &[a.id, b.id, gone.id, ConsumerId::new()]));
    got.sort_by_key(|c| c.id);
    let mut want: Vec<Consumer> = [a.id, b.id, gone.id]
        .iter()
        .map(|id| w.read(|tx| tx.consumer(s.branch_id(), *id)).unwrap())
        .collect();
    want.sort_by_key(|c| c.id);
    assert_eq!(got, want);
    assert!(got.iter().any(|c| c.is_deleted));
    assert_eq!(w.read(|tx| tx.consumers_by_ids(elsewhere.id, &[a.id, b.id])), vec![]);
    assert_eq!(w.read(|tx| tx.consumers_by_ids(s.branch_id(), &[])), vec![]);
    // The list answers what one read per invoice would.
    let req = parse_invoice_list(&QueryParams::parse("limit=100")).unwrap();
    let page = w.billing.invoices().list(s, &req).unwrap();
    assert_eq!(page.items.len(), 3);
    for d in &page.items {
        let one_by_one = w.billing.invoices().get(s, d.invoice.id).unwrap();
        assert_eq!(
            (&d.invoice, &d.payments, &d.consumer),
            (&one_by_one.invoice, &one_by_one.payments, &one_by_one.consumer)
        );
    }
}
