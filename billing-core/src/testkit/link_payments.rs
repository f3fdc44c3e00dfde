//! Paying a payment link ([`crate::Billing::checkout`]`().pay`): what a paid attempt creates in one
//! transaction (consumer, card, invoice, payments, events carrying the link and its metadata),
//! every sandbox card outcome and the wallet ranges, exact installments, max-payments
//! completion, the refusals that write nothing, concurrent attempts and attempts nobody
//! recorded.

use super::invoices::{consumer, product};
use super::payment_links::{create as create_link, link_body};
use super::{expect_code, money, Harness, World};
use crate::consumer::{ConsumerFilter, ConsumerSort};
use crate::error::{Code, Error, Result};
use crate::event::{Event, EventType};
use crate::invoice::{InvoiceListRequest, InvoiceSort, InvoiceStatus};
use crate::list::ListQuery;
use crate::money::{Currency, Money};
use crate::payment::gateway::{CardDetails, GatewayOutcome, PaymentGateway, SandboxGateway};
use crate::payment::{PaymentMethod, PaymentStatus, PaymentType};
use crate::payment_link::checkout::{PayOutcome, PayRequest, PayStatus};
use crate::payment_link::*;
use crate::sandbox::Advance;
use crate::store::Store;
use chrono::Duration;
use serde_json::{json, Value};
use std::sync::{mpsc, Arc, Mutex};

pub const PAID_CARD: &str = "4111111111111111";
/// The sandbox card whose charge ends in a gateway error (code 96).
pub const ERROR_CARD: &str = "4000000000000093";

pub fn card(number: &str) -> Value {
    json!({"type": "card", "number": number, "name": "Sara Al-Harbi", "expiry_month": 12, "expiry_year": 2030, "cvc": "123"})
}

pub fn pay_body(method: Value, phone: &str) -> Value {
    json!({"customer": {"name": "Sara Al-Harbi", "phone_number": phone}, "method": method, "installments": 1, "language": "en"})
}

fn pay<S: Store>(w: &World<S>, l: &PaymentLink, body: &Value) -> Result<PayOutcome> {
    w.billing.checkout().pay(&l.short_id, &PayRequest::parse(body)?)
}

fn events<S: Store>(w: &World<S>) -> Vec<Event> {
    w.read(|tx| tx.list_events(w.boot.org.id))
}

fn kinds(e: &[Event]) -> Vec<EventType> {
    e.iter().map(|e| e.event_type).collect()
}

/// Consumers, invoices (with payments), cards of the default branch, links and events.
fn everything<S: Store>(w: &World<S>) -> String {
    let s = &w.admin;
    let mut q = ListQuery::new(ConsumerSort::CreatedAt);
    q.limit = 100;
    let consumers = w.billing.consumers().list(s, &q, &ConsumerFilter::default()).unwrap().items;
    let mut iq = ListQuery::new(InvoiceSort::CreatedAt);
    iq.limit = 100;
    let req = InvoiceListRequest {
        query: iq,
        filter: Default::default(),
        include_payments: true,
    };
    let invoices = w.billing.invoices().list(s, &req).unwrap().items;
    let cards: Vec<_> = consumers.iter().map(|c| w.read(|tx| tx.latest_active_card(c.id))).collect();
    let links = w.read(|tx| {
        let mut q = ListQuery::new(PaymentLinkSort::CreatedAt);
        q.limit = 100;
        tx.list_payment_links(s.branch_id(), &q, &Default::default())
    });
    format!("{consumers:?}{invoices:?}{cards:?}{links:?}{:?}", events(w))
}

fn sar(a: &str) -> Money {
    money(a, Currency::SAR)
}

/// A link of one `price` product (VAT-inclusive, so the amount is the price) and what else
/// `extra` sets.
fn link_of<S: Store>(w: &World<S>, price: &str, extra: Value) -> PaymentLink {
    let p = product(w, &w.admin, price, json!({}));
    let mut body = link_body(&[(p.id, 1)], &[]);
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    create_link(w, &w.admin, body)
}

/// A paid card attempt creates, in one transaction: the consumer, the saved card, the invoice
/// (paid in full: COMPLETED) and its payment, the link's count and collected amount, and the
/// events with `data.payment_link` and `metadata`; the payer goes to the success URL with the
/// spec's parameters. The next payer with the same phone is the same consumer.
pub fn paid_card_creates_everything_in_one_go<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let meta = json!({"order": {"id": 42, "lines": [1, {"sku": "A"}]}});
    let l = link_of(
        &w,
        "115.00",
        json!({"custom_metadata": meta, "success_redirect_url": "https://shop.example/done?from=link#top", "max_number_of_payments": 5}),
    );
    let before = events(&w).len();
    let out = pay(&w, &l, &pay_body(card(PAID_CARD), "+966501234567")).unwrap();
    assert_eq!((out.status, out.message.as_str()), (PayStatus::Paid, "APPROVED"));
    let (inv_id, pay_id, consumer_id, consent) = (
        out.invoice_id.unwrap(),
        out.payment_id.unwrap(),
        out.consumer_id.unwrap(),
        out.consent_id.unwrap(),
    );
    let c = w.billing.consumers().get(s, consumer_id).unwrap();
    assert_eq!((c.name.as_str(), c.phone_number.as_ref().unwrap().as_str()), ("Sara Al-Harbi", "+966501234567"));
    assert_eq!(c.preferred_language, crate::fields::Language::En);
    let (inv, pays) = w.billing.invoices().get(s, inv_id).unwrap().into_parts();
    assert_eq!((inv.status, inv.total_amount, inv.paid_amount), (InvoiceStatus::Completed, l.amount, l.amount));
    assert_eq!((inv.payment_link_id, inv.consumer_id, inv.installments), (Some(l.id.0), consumer_id, None));
    assert_eq!(inv.items.len(), 1);
    assert_eq!(inv.items[0].original_amount, l.items[0].line.original_amount);
    assert_eq!(pays.len(), 1);
    assert_eq!(
        (pays[0].id, pays[0].status, pays[0].method, pays[0].payment_type),
        (pay_id, PaymentStatus::Succeeded, Some(PaymentMethod::Visa), PaymentType::Initial)
    );
    let saved = w.read(|tx| tx.latest_active_card(consumer_id)).expect("the card is kept");
    assert_eq!(
        (saved.id, saved.network.as_str(), saved.last_four.as_str(), saved.consent),
        (consent, "VISA", "1111", true)
    );
    assert!(!saved.gateway_token.contains(PAID_CARD));
    let link = w.billing.payment_links().get(s, l.id).unwrap().link;
    assert_eq!(
        (link.payments_count, link.amount_collected, link.status),
        (1, l.amount, PaymentLinkStatus::Active)
    );
    let new = &events(&w)[before..];
    assert_eq!(
        kinds(new),
        [
            EventType::InvoiceCreated,
            EventType::InvoiceAccepted,
            EventType::PaymentSucceeded,
            EventType::InvoiceCompleted
        ]
    );
    for e in new {
        assert_eq!(e.payload["data"]["payment_link"]["id"], json!(l.id), "{}", e.payload);
        assert_eq!(
            e.payload["data"]["payment_link"]["url"],
            format!("{}/api/v2/payment_links/{}", w.billing.engine().public_url(), l.id)
        );
        assert_eq!(e.payload["data"]["metadata"], meta);
    }
    assert_eq!(new[0].payload["status"], "CREATED");
    assert_eq!(new[1].payload["status"], "ACCEPTED");
    let url = &out.redirect_url;
    assert!(url.starts_with("https://shop.example/done?from=link&id="), "{url}");
    assert!(url.ends_with("#top"), "{url}");
    for (k, v) in [
        ("payment_link_id", l.id.to_string()),
        ("status", "paid".into()),
        ("message", "APPROVED".into()),
        ("login_method", "PHONE".into()),
        ("invoice_id", inv_id.to_string()),
        ("consent_id", consent.to_string()),
        ("payment_id", pay_id.to_string()),
        ("organization_consumer_id", consumer_id.to_string()),
    ] {
        assert!(url.contains(&format!("&{k}={v}")), "{k} in {url}");
    }
    // The same phone again: the same consumer, a second invoice.
    let again = pay(&w, &l, &pay_body(card("5421080101000000"), "+966501234567")).unwrap();
    assert_eq!((again.status, again.consumer_id), (PayStatus::Paid, Some(consumer_id)));
    assert_ne!(again.invoice_id, out.invoice_id);
    let link = w.billing.payment_links().get(s, l.id).unwrap().link;
    assert_eq!((link.payments_count, link.amount_collected), (2, sar("230.00")));
    // An existing consumer with that phone, or the link's own consumer, is the payer.
    let known = consumer(&w, s, true);
    let mut body = link_body(&[(l.items[0].line.product_id, 1)], &[]);
    body["organization_consumer_id"] = json!(known.id);
    let mine = create_link(&w, s, body);
    let out = pay(&w, &mine, &json!({"method": card(PAID_CARD)})).unwrap();
    assert_eq!(out.consumer_id, Some(known.id));
    assert!(
        out.redirect_url
            .starts_with(&format!("{}/pay/{}/result?id=", w.billing.engine().public_url(), mine.short_id)),
        "{}",
        out.redirect_url
    );
    assert!(out.redirect_url.ends_with("&language=ar"), "{}", out.redirect_url);
}

/// Every sandbox card: declines and the gateway error create nothing but
/// PAYMENT_LINK_PAY_ATTEMPT_FAILED (with the link, its metadata and the gateway's code), send
/// the payer to the failure URL, and leave the link as it was.
pub fn every_sandbox_card_outcome<H: Harness>() {
    let w = World::new(H::store());
    let l = link_of(
        &w,
        "115.00",
        json!({"failure_redirect_url": "https://shop.example/failed", "custom_metadata": {"k": "v"}}),
    );
    let table = [
        ("4201320111111010", PayStatus::Paid, "00", "APPROVED"),
        ("4201320000013020", PayStatus::Failed, "99", "UNSPECIFIED FAILURE"),
        ("4201320000311101", PayStatus::Failed, "51", "INSUFFICIENT FUNDS"),
        ("4201320131000508", PayStatus::Failed, "41", "DECLINED: LOST CARD"),
        ("4201321234411220", PayStatus::Failed, "05", "DECLINED"),
        ("4201322267774310", PayStatus::Failed, "54", "DECLINED: EXPIRED CARD"),
        ("4201326324640570", PayStatus::Failed, "61", "DECLINED: EXCEEDS WITHDRAWAL LIMIT"),
        ("4201321144311528", PayStatus::Failed, "43", "DECLINED: STOLEN CARD"),
        ("4111111111111111", PayStatus::Paid, "00", "APPROVED"),
        ("4123120000000000", PayStatus::Failed, "99", "UNSPECIFIED FAILURE"),
        ("4123120001090000", PayStatus::Failed, "51", "INSUFFICIENT FUNDS"),
        ("4123120001090109", PayStatus::Failed, "05", "DECLINED"),
        ("5421080101000000", PayStatus::Paid, "00", "APPROVED"),
        ("5105105105105100", PayStatus::Failed, "99", "UNSPECIFIED FAILURE"),
        ("5457210001000092", PayStatus::Failed, "51", "INSUFFICIENT FUNDS"),
        ("4111111111111095", PayStatus::Failed, "99", "UNSPECIFIED FAILURE"),
        (ERROR_CARD, PayStatus::FailedInternalError, "96", "SYSTEM MALFUNCTION"),
    ];
    for (k, (number, status, code, message)) in table.into_iter().enumerate() {
        let phone = format!("+9665012{:05}", k);
        let before_links = w.billing.payment_links().get(&w.admin, l.id).unwrap().link;
        let n = events(&w).len();
        let out = pay(&w, &l, &pay_body(card(number), &phone)).unwrap();
        assert_eq!((out.status, out.message.as_str()), (status, message), "{number}");
        if status == PayStatus::Paid {
            assert!(out.invoice_id.is_some());
            continue;
        }
        assert!(out.invoice_id.is_none() && out.consumer_id.is_none() && out.payment_id.is_none());
        assert!(out.redirect_url.starts_with("https://shop.example/failed?id="), "{}", out.redirect_url);
        assert!(!out.redirect_url.contains("invoice_id"), "{}", out.redirect_url);
        let new = &events(&w)[n..];
        assert_eq!(kinds(new), [EventType::PaymentLinkPayAttemptFailed], "{number}");
        let p = &new[0].payload;
        assert_eq!((p["entity_type"].clone(), p["entity_id"].clone()), (json!("PAYMENT_LINK"), json!(l.id)));
        assert_eq!(p["data"]["attempt"]["code"], code);
        assert_eq!(p["data"]["attempt"]["status"], status.as_str());
        assert_eq!(p["data"]["metadata"], json!({"k": "v"}));
        assert_eq!(p["data"]["payment_link"]["id"], json!(l.id));
        assert_eq!(w.billing.payment_links().get(&w.admin, l.id).unwrap().link, before_links, "{number}");
    }
    // Three paid: three consumers and invoices, nothing for the failures.
    let s = &w.admin;
    let q = ListQuery::new(ConsumerSort::CreatedAt);
    assert_eq!(w.billing.consumers().list(s, &q, &ConsumerFilter::default()).unwrap().total, 3);
    assert_eq!(w.billing.payment_links().get(s, l.id).unwrap().link.payments_count, 3);
    // The gateway error's charge is voided by its item (it is due at once).
    let report = w.billing.engine().run_due_work(Some(s.org_id()), 10).unwrap();
    assert_eq!(report.errors, 0);
    let left = w.read(|tx| tx.due_work_exists(Some(s.org_id()), &[LINK_CHARGE_KIND], w.now() + Duration::days(1)));
    assert!(!left, "the void is done: no item left");
}

/// The wallet's outcome follows the amount (sandbox ranges); a wallet pays in full only.
pub fn wallet_ranges<H: Harness>() {
    let w = World::new(H::store());
    for (price, status, code) in [
        ("200.00", PayStatus::Paid, None),
        ("300.00", PayStatus::Paid, None),
        ("300.01", PayStatus::Failed, Some("99")),
        ("1000.00", PayStatus::Failed, Some("99")),
        ("1150.00", PayStatus::Failed, Some("51")),
        ("1250.00", PayStatus::Failed, Some("41")),
        ("1350.00", PayStatus::Failed, Some("05")),
        ("1450.00", PayStatus::Failed, Some("54")),
        ("1550.00", PayStatus::Failed, Some("61")),
        ("1650.00", PayStatus::Failed, Some("43")),
        ("50.00", PayStatus::Failed, Some("99")),
    ] {
        let l = link_of(&w, price, json!({}));
        let n = events(&w).len();
        let out = pay(&w, &l, &pay_body(json!({"type": "wallet", "phone_number": "+966501234567"}), "+966500000001")).unwrap();
        assert_eq!(out.status, status, "{price}");
        match code {
            None => {
                let (_, pays) = w.billing.invoices().get(&w.admin, out.invoice_id.unwrap()).unwrap().into_parts();
                assert_eq!((pays[0].amount, pays[0].method), (l.amount, Some(PaymentMethod::PgwCardUnspecified)));
                assert_eq!(out.consent_id, None, "no card to keep");
            }
            Some(c) => assert_eq!(events(&w)[n].payload["data"]["attempt"]["code"], c, "{price}"),
        }
    }
    let l = link_of(&w, "600.00", json!({}));
    let mut body = pay_body(json!({"type": "wallet", "phone_number": "+966501234567"}), "+966500000002");
    body["installments"] = json!(2);
    let before = everything(&w);
    expect_code(pay(&w, &l, &body), Code::PAYMENT_FLOW_NOT_ALLOWED);
    assert_eq!(before, everything(&w));
}

/// Installments: each part `total / n` rounded half-up, the difference last; the first paid
/// now, the others scheduled a month apart; the invoice ACCEPTED (not completed) with its plan.
/// Below the 100 SAR minimum, or on a link without installments, refused with nothing written.
pub fn installments_with_exact_amounts<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let l = link_of(&w, "400.00", json!({}));
    let mut body = pay_body(card(PAID_CARD), "+966501234567");
    body["installments"] = json!(3);
    let n = events(&w).len();
    let out = pay(&w, &l, &body).unwrap();
    assert_eq!(out.status, PayStatus::Paid);
    let (inv, pays) = w.billing.invoices().get(s, out.invoice_id.unwrap()).unwrap().into_parts();
    let amounts: Vec<Money> = pays.iter().map(|p| p.amount).collect();
    assert_eq!(amounts, [sar("133.33"), sar("133.33"), sar("133.34")]);
    let statuses: Vec<PaymentStatus> = pays.iter().map(|p| p.status).collect();
    assert_eq!(statuses, [PaymentStatus::Succeeded, PaymentStatus::Pending, PaymentStatus::Pending]);
    assert!(pays.iter().all(|p| p.payment_type == PaymentType::Installment));
    assert_eq!(crate::clock::format_rfc3339(&pays[1].scheduled_on), "2026-02-15T09:00:00.000000Z");
    assert_eq!(crate::clock::format_rfc3339(&pays[2].scheduled_on), "2026-03-15T09:00:00.000000Z");
    assert_eq!(
        (inv.status, inv.installments, inv.paid_amount),
        (InvoiceStatus::Accepted, Some(3), sar("133.33"))
    );
    assert_eq!(
        kinds(&events(&w)[n..]),
        [EventType::InvoiceCreated, EventType::InvoiceAccepted, EventType::PaymentSucceeded],
        "not completed yet"
    );
    assert_eq!(w.billing.payment_links().get(s, l.id).unwrap().link.amount_collected, sar("133.33"));
    // The consent covers the later installments: the saved card is active with consent.
    assert!(w.read(|tx| tx.latest_active_card(out.consumer_id.unwrap())).unwrap().consent);
    // Four parts of 350.00 are 87.50: below the minimum.
    let small = link_of(&w, "350.00", json!({}));
    body["installments"] = json!(4);
    let before = everything(&w);
    expect_code(pay(&w, &small, &body), Code::INVALID_PARAMETERS);
    assert_eq!(before, everything(&w));
    body["installments"] = json!(3);
    let off = link_of(&w, "900.00", json!({"payment_methods": {"visa": true, "installment": false}}));
    let before_off = everything(&w);
    expect_code(pay(&w, &off, &body), Code::PAYMENT_FLOW_NOT_ALLOWED);
    assert_eq!(before_off, everything(&w));
    body["installments"] = json!(2);
    let out = pay(&w, &small, &body).unwrap();
    let (_, pays) = w.billing.invoices().get(s, out.invoice_id.unwrap()).unwrap().into_parts();
    assert_eq!(pays.iter().map(|p| p.amount).collect::<Vec<_>>(), [sar("175.00"), sar("175.00")]);
}

/// `max_number_of_payments` reached: the link is COMPLETED and takes no more payments.
pub fn max_payments_complete_the_link<H: Harness>() {
    let w = World::new(H::store());
    let l = link_of(&w, "100.00", json!({"max_number_of_payments": 2}));
    let a = pay(&w, &l, &pay_body(card(PAID_CARD), "+966501111111")).unwrap();
    assert_eq!(w.billing.payment_links().get(&w.admin, l.id).unwrap().link.status, PaymentLinkStatus::Active);
    let declined = pay(&w, &l, &pay_body(card("4123120001090000"), "+966501111112")).unwrap();
    assert_eq!(declined.status, PayStatus::Failed, "a decline does not count");
    let b = pay(&w, &l, &pay_body(card(PAID_CARD), "+966501111113")).unwrap();
    assert_eq!((a.status, b.status), (PayStatus::Paid, PayStatus::Paid));
    let done = w.billing.payment_links().get(&w.admin, l.id).unwrap().link;
    assert_eq!((done.status, done.payments_count), (PaymentLinkStatus::Completed, 2));
    let before = everything(&w);
    expect_code(pay(&w, &l, &pay_body(card(PAID_CARD), "+966501111114")), Code::INVALID_STATUS);
    assert_eq!(before, everything(&w));
}

/// What a link takes no payment for, each refused with nothing written and no gateway call.
pub fn refusals_write_nothing<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let gw = Gate::new(Act::Sandbox);
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let l = link_of(&w, "100.00", json!({"valid_until": "2026-01-16T09:00:00Z"}));
    let email = link_of(&w, "100.00", json!({"contact_information_type": "EMAIL"}));
    let rec = product(&w, s, "50.00", json!({"type": "RECURRING", "recurring_interval": "MONTH"}));
    let recurring = create_link(&w, s, link_body(&[(rec.id, 1)], &[]));
    let ok_body = pay_body(card(PAID_CARD), "+966501234567");
    expect_code(w.billing.checkout().pay("no-such-link", &PayRequest::parse(&ok_body).unwrap()), Code::NOT_FOUND);
    // A subscription is paid by card (renewals charge it), and a trial cannot be started yet.
    let wallet = pay_body(json!({"type": "wallet", "phone_number": "+966501234567"}), "+966501234567");
    expect_code(pay(&w, &recurring, &wallet), Code::PAYMENT_FLOW_NOT_ALLOWED);
    let mut trial_body = link_body(&[(rec.id, 1)], &[]);
    trial_body["trial_period_days"] = json!(7);
    let trial = create_link(&w, s, trial_body);
    let before = everything(&w);
    expect_code(pay(&w, &trial, &ok_body), Code::PAYMENT_FLOW_NOT_ALLOWED);
    let form = |method: Value, field: &str| match pay(&w, &l, &pay_body(method, "+966501234567")) {
        Err(Error::Validation(d)) => assert_eq!(serde_json::to_value(&d[0].loc).unwrap(), json!(["body", "method", field])),
        other => panic!("expected a form error at {field}, got {other:?}"),
    };
    let mut c = card("4111111111111112");
    form(c.clone(), "number");
    c = card(PAID_CARD);
    c["name"] = json!("Sara");
    form(c, "name");
    c = card(PAID_CARD);
    c["expiry_year"] = json!(2025);
    form(c, "expiry_year");
    c = card(PAID_CARD);
    c["cvc"] = json!("12");
    form(c, "cvc");
    match pay(&w, &l, &json!({"method": card(PAID_CARD)})) {
        Err(Error::Validation(d)) => assert_eq!(serde_json::to_value(&d[0].loc).unwrap(), json!(["body", "customer"])),
        other => panic!("{other:?}"),
    }
    match pay(&w, &email, &ok_body) {
        Err(Error::Validation(d)) => assert_eq!(serde_json::to_value(&d[0].loc).unwrap(), json!(["body", "customer", "email"])),
        other => panic!("{other:?}"),
    }
    assert_eq!(before, everything(&w));
    w.billing
        .payment_links()
        .update_status(s, l.id, StatusChange::parse(&json!({"status": "INACTIVE"})).unwrap())
        .unwrap();
    let inactive = everything(&w);
    expect_code(pay(&w, &l, &ok_body), Code::INVALID_STATUS);
    assert_eq!(inactive, everything(&w));
    w.billing
        .payment_links()
        .update_status(s, l.id, StatusChange::parse(&json!({"status": "ACTIVE"})).unwrap())
        .unwrap();
    w.tick(86_400);
    let expired = everything(&w);
    let e = expect_code(pay(&w, &l, &ok_body), Code::INVALID_STATUS);
    assert!(e.to_string().contains("expired"), "{e}");
    assert_eq!(expired, everything(&w));
    assert!(gw.calls().is_empty(), "no refusal reached the gateway");
}

/// Two attempts of one payer at once (a double click): the second is DUPLICATE_PAYMENT while
/// the first is at the gateway, and so is another payer's on a link with one payment left;
/// the card is charged once.
pub fn concurrent_attempts_charge_once<H: Harness>() {
    let w = World::new(H::store());
    let (entered_tx, entered) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let gw = Gate::new(Act::Block(entered_tx, Mutex::new(go_rx)));
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let l = link_of(&w, "100.00", json!({"max_number_of_payments": 1}));
    let body = pay_body(card(PAID_CARD), "+966501234567");
    std::thread::scope(|t| {
        let first = t.spawn(|| pay(&w, &l, &body));
        entered.recv().unwrap();
        expect_code(pay(&w, &l, &body), Code::DUPLICATE_PAYMENT);
        expect_code(pay(&w, &l, &pay_body(card(PAID_CARD), "+966509999999")), Code::DUPLICATE_PAYMENT);
        expect_code(
            w.billing.payment_links().update_coupons(&w.admin, l.id, CouponsChange::default()),
            Code::INVALID_STATUS,
        );
        go.send(()).unwrap();
        assert_eq!(first.join().unwrap().unwrap().status, PayStatus::Paid);
    });
    assert_eq!(gw.calls().iter().filter(|c| c.0 == "charge").count(), 1, "one charge at the gateway");
    let paid = events(&w).iter().filter(|e| e.event_type == EventType::PaymentSucceeded).count();
    assert_eq!(paid, 1);
    assert_eq!(w.billing.payment_links().get(&w.admin, l.id).unwrap().link.status, PaymentLinkStatus::Completed);
}

/// A sandbox clock advance past a link payment's time-out while the request is at the gateway
/// leaves it alone: the advance waits, the payment is recorded paid, nothing is voided.
pub fn clock_advance_waits_for_a_live_link_payment<H: Harness>() {
    let w = World::new(H::store());
    let (entered_tx, entered) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let gw = Gate::new(Act::Block(entered_tx, Mutex::new(go_rx)));
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let l = link_of(&w, "100.00", json!({}));
    let body = pay_body(card(PAID_CARD), "+966501234567");
    std::thread::scope(|t| {
        let payer = t.spawn(|| pay(&w, &l, &body));
        entered.recv().unwrap();
        let attempt = crate::ids::WorkId(gw.calls()[0].1.parse().expect("the reference is the attempt's id"));
        let advance = t.spawn(|| w.billing.sandbox().advance(&w.admin, Advance::By(Duration::days(1))));
        // Once the advance has reached the time-out and its handler holds the item (without
        // the rule, it would have given the payment up by now).
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(10) && w.read(|tx| tx.work(attempt)).is_none_or(|i| i.leased_until.is_none()) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        go.send(()).unwrap();
        assert_eq!(payer.join().unwrap().unwrap().status, PayStatus::Paid);
        advance.join().unwrap().unwrap();
        assert_eq!(w.read(|tx| tx.work(attempt)), None, "the attempt's item is done");
    });
    assert_eq!(kinds(&events(&w)).iter().filter(|k| **k == EventType::PaymentLinkPayAttemptFailed).count(), 0);
    assert_eq!(gw.calls().iter().map(|c| c.0).collect::<Vec<_>>(), ["charge"], "never voided");
    assert_eq!(w.billing.payment_links().get(&w.admin, l.id).unwrap().link.payments_count, 1);
}

/// The process dies in the gateway call: the attempt is on record; when it times out, its item
/// records it failed (PAYMENT_LINK_PAY_ATTEMPT_FAILED) and voids the charge; nothing else was
/// created, and the payer may pay again.
pub fn unrecorded_attempt_is_voided<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let gw = Gate::new(Act::Die);
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let l = link_of(&w, "100.00", json!({}));
    let body = pay_body(card(PAID_CARD), "+966501234567");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pay(&w, &l, &body)));
    assert!(r.is_err(), "the scripted gateway dies");
    expect_code(pay(&w, &l, &body), Code::DUPLICATE_PAYMENT);
    let reference = gw.calls()[0].1.clone();
    w.billing.sandbox().advance(s, Advance::By(Duration::minutes(14))).unwrap();
    assert!(events(&w).is_empty());
    // The dead process's time passes on the server's clock too (the organization's clock alone
    // says nothing about whether the request is alive).
    w.clock.advance(w.billing.engine().work_lease());
    w.billing.sandbox().advance(s, Advance::By(Duration::minutes(2))).unwrap();
    assert_eq!(kinds(&events(&w)), [EventType::PaymentLinkPayAttemptFailed]);
    assert_eq!(events(&w)[0].payload["data"]["attempt"]["status"], "failed_internal_error");
    assert_eq!(gw.calls()[1..], [("void", reference)]);
    assert_eq!(w.billing.payment_links().get(s, l.id).unwrap().link.payments_count, 0);
    let q = ListQuery::new(ConsumerSort::CreatedAt);
    assert_eq!(w.billing.consumers().list(s, &q, &ConsumerFilter::default()).unwrap().total, 0);
    assert_eq!(pay(&w, &l, &body).unwrap().status, PayStatus::Paid, "payable again");
}

/// Later installments are charged to the saved card on their dates, by the due-work queue
/// that the sandbox clock drives: not before, once however often the queue runs; a decline
/// (the consumer's latest card is now one that declines) is PAYMENT_FAILED and the payment
/// stays payable; paying it then completes the invoice.
pub fn later_installments_are_charged_on_their_dates<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let gw = Gate::new(Act::Sandbox);
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let charges = || gw.calls().iter().filter(|c| c.0 == "charge").count();
    let l = link_of(&w, "400.00", json!({}));
    let mut body = pay_body(card(PAID_CARD), "+966501234567");
    body["installments"] = json!(3);
    let out = pay(&w, &l, &body).unwrap();
    let id = out.invoice_id.unwrap();
    assert_eq!(charges(), 1);
    let payment_events = |from: usize| -> Vec<EventType> {
        kinds(&events(&w)[from..])
            .into_iter()
            .filter(|k| matches!(k, EventType::PaymentSucceeded | EventType::PaymentFailed | EventType::InvoiceCompleted))
            .collect()
    };

    // A day before the second one is due: nothing.
    w.billing.sandbox().advance(s, Advance::To(super::ts("2026-02-14T09:00:00Z"))).unwrap();
    assert_eq!(charges(), 1);
    let n = events(&w).len();
    // Due: charged once, whatever runs the queue again.
    w.billing.sandbox().advance(s, Advance::To(super::ts("2026-02-16T09:00:00Z"))).unwrap();
    w.billing.engine().run_due_work(None, 100).unwrap();
    w.billing.sandbox().advance(s, Advance::By(Duration::hours(1))).unwrap();
    assert_eq!(charges(), 2);
    let (inv, pays) = w.billing.invoices().get(s, id).unwrap().into_parts();
    let statuses: Vec<PaymentStatus> = pays.iter().map(|p| p.status).collect();
    assert_eq!(statuses, [PaymentStatus::Succeeded, PaymentStatus::Succeeded, PaymentStatus::Pending]);
    assert_eq!((inv.status, inv.paid_amount), (InvoiceStatus::Accepted, sar("266.66")));
    assert_eq!(payment_events(n), [EventType::PaymentSucceeded]);

    // The consumer's latest card now declines: the third fails, and stays payable.
    let consumer = out.consumer_id.unwrap();
    w.billing.payments().save_card(s, consumer, "4123120001090000", 12, 2030, true).unwrap();
    let n = events(&w).len();
    w.billing.sandbox().advance(s, Advance::To(super::ts("2026-03-16T09:00:00Z"))).unwrap();
    w.billing.engine().run_due_work(None, 100).unwrap();
    assert_eq!(charges(), 3);
    let (inv, pays) = w.billing.invoices().get(s, id).unwrap().into_parts();
    assert_eq!(pays[2].status, PaymentStatus::Failed);
    assert!(pays[2].status.is_payable());
    assert_eq!(inv.status, InvoiceStatus::Accepted);
    assert_eq!(payment_events(n), [EventType::PaymentFailed]);
    // Paid by card afterwards: the invoice is complete, and nothing is charged again.
    let card = CardDetails {
        name: "Sara Al-Harbi".into(),
        number: PAID_CARD.into(),
        expiry_month: 12,
        expiry_year: 2030,
        cvc: "123".into(),
    };
    w.billing.payments().pay_by_card(s, id, &[pays[2].id], &card).unwrap();
    let (inv, _) = w.billing.invoices().get(s, id).unwrap().into_parts();
    assert_eq!(inv.status, InvoiceStatus::Completed);
    w.billing.sandbox().advance(s, Advance::By(Duration::days(60))).unwrap();
    assert_eq!(charges(), 4, "the card payment only");
}

/// A link of recurring products paid by card makes, in the payment's transaction, the
/// subscription (ACTIVE, its period starting now, the link's lines and amount), its first
/// invoice (paid: COMPLETED, carrying the subscription and the link) and the saved card; the
/// renewal a period later charges that card. A decline makes none of it.
pub fn recurring_link_starts_a_subscription<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let gw = Gate::new(Act::Sandbox);
    w.billing.engine().set_sandbox_gateway(gw.clone());
    let rec = product(&w, s, "50.00", json!({"type": "RECURRING", "recurring_interval": "MONTH"}));
    let mut body = link_body(&[(rec.id, 3)], &[]);
    body["custom_metadata"] = json!({"plan": "gold"});
    let l = create_link(&w, s, body);
    let before = everything(&w);
    let n = events(&w).len();
    let declined = pay(&w, &l, &pay_body(card("4201321234411220"), "+966501234567")).unwrap();
    assert_eq!(declined.status, PayStatus::Failed);
    assert_eq!(kinds(&events(&w)[n..]), [EventType::PaymentLinkPayAttemptFailed]);
    // Consumers, invoices, cards and links as they were (`everything` ends with the events).
    let (after, ev) = (everything(&w), format!("{:?}", events(&w)));
    assert_eq!(format!("{:?}", &events(&w)[..n]), "[]");
    assert_eq!(after[..after.len() - ev.len()], before[..before.len() - 2], "a decline creates nothing else");
    let n = events(&w).len();
    let out = pay(&w, &l, &pay_body(card(PAID_CARD), "+966501234567")).unwrap();
    assert_eq!(out.status, PayStatus::Paid);
    let now = w.now();
    let (inv, pays) = w.billing.invoices().get(s, out.invoice_id.unwrap()).unwrap().into_parts();
    assert_eq!(
        (inv.status, inv.total_amount, inv.payment_link_id),
        (InvoiceStatus::Completed, sar("150.00"), Some(l.id.0))
    );
    assert_eq!((pays[0].id, pays[0].status), (out.payment_id.unwrap(), PaymentStatus::Succeeded));
    let sid: crate::ids::SubscriptionId = inv.subscription_id.expect("the subscription's invoice").into();
    let sub = w.billing.subscriptions().get(s, sid).unwrap().subscription;
    assert_eq!(sub.status, crate::subscription::SubscriptionStatus::Active);
    assert_eq!(
        (sub.consumer_id, sub.amount, sub.current_cycle_number),
        (out.consumer_id.unwrap(), sar("150.00"), 1)
    );
    assert_eq!(
        (sub.current_period_start, sub.latest_invoice_id, sub.latest_invoice_paid),
        (now, Some(inv.id), true)
    );
    assert_eq!((sub.items.len(), sub.items[0].line.quantity), (1, 3));
    let card_on_file = w.read(|tx| tx.latest_active_card(out.consumer_id.unwrap()));
    assert_eq!(card_on_file.map(|c| (c.id, c.consent)), Some((out.consent_id.unwrap(), true)));
    assert_eq!(
        kinds(&events(&w)[n..]),
        [
            EventType::SubscriptionCreated,
            EventType::InvoiceCreated,
            EventType::InvoiceAccepted,
            EventType::PaymentSucceeded,
            EventType::InvoiceCompleted,
            EventType::SubscriptionActivated,
        ]
    );
    let l2 = w.read(|tx| tx.payment_link(l.branch_id, l.id)).unwrap();
    assert_eq!((l2.payments_count, l2.amount_collected), (1, sar("150.00")));
    // A period on: the renewal is charged to the saved card (the token), once.
    let charged = || gw.calls().iter().filter(|c| c.0 == "charge").count();
    assert_eq!(charged(), 2, "the decline and the payment");
    w.billing.sandbox().advance(s, Advance::By(Duration::days(32))).unwrap();
    w.billing.engine().run_due_work(None, 100).unwrap();
    assert_eq!(charged(), 3);
    let cycles = w.billing.subscriptions().invoices(s, sid).unwrap();
    assert_eq!(cycles.len(), 2);
    assert_eq!(
        (cycles[1].0, cycles[1].1.status, cycles[1].1.payment_link_id),
        (2, InvoiceStatus::Completed, None)
    );
}

/// What a scripted gateway does when charged.
enum Act {
    Sandbox,
    Die,
    Block(mpsc::Sender<()>, Mutex<mpsc::Receiver<()>>),
}

/// A gateway that logs its calls (operation, reference) and acts as scripted on the first
/// charge, then like the sandbox.
struct Gate {
    act: Mutex<Act>,
    calls: Mutex<Vec<(&'static str, String)>>,
}

impl Gate {
    fn new(act: Act) -> Arc<Self> {
        Arc::new(Gate {
            act: Mutex::new(act),
            calls: Mutex::new(vec![]),
        })
    }
    fn calls(&self) -> Vec<(&'static str, String)> {
        self.calls.lock().unwrap().clone()
    }
    fn charge(&self, reference: &str, sandbox: impl FnOnce() -> GatewayOutcome) -> GatewayOutcome {
        self.calls.lock().unwrap().push(("charge", reference.to_string()));
        let act = std::mem::replace(&mut *self.act.lock().unwrap(), Act::Sandbox);
        match act {
            Act::Sandbox => {}
            Act::Die => panic!("the process died during the gateway call"),
            Act::Block(entered, go) => {
                entered.send(()).unwrap();
                go.lock().unwrap().recv().unwrap();
            }
        }
        sandbox()
    }
}

impl PaymentGateway for Gate {
    fn charge_card(&self, reference: &str, card: &CardDetails, amount: Money) -> GatewayOutcome {
        self.charge(reference, || SandboxGateway.charge_card(reference, card, amount))
    }
    fn charge_wallet(&self, reference: &str, phone: &str, amount: Money) -> GatewayOutcome {
        self.charge(reference, || SandboxGateway.charge_wallet(reference, phone, amount))
    }
    fn card_token(&self, reference: &str, card: &CardDetails) -> Option<String> {
        SandboxGateway.card_token(reference, card)
    }
    fn charge_token(&self, reference: &str, token: &str, amount: Money) -> GatewayOutcome {
        self.charge(reference, || SandboxGateway.charge_token(reference, token, amount))
    }
    fn refund(&self, reference: &str, transaction: &str, amount: Money) -> GatewayOutcome {
        SandboxGateway.refund(reference, transaction, amount)
    }
    fn void(&self, reference: &str) -> GatewayOutcome {
        self.calls.lock().unwrap().push(("void", reference.to_string()));
        SandboxGateway.void(reference)
    }
}
