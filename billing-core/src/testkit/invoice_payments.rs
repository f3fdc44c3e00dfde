//! Paying an invoice from its page ([`crate::invoice::ops::Invoices::pay`]): installments with the
//! card kept and the later ones charged on their dates, the consumer told when one fails, and
//! the store's count of failed attempts (card testing) shared by every process.

use super::invoices::{consumer, create, invoice_body, product};
use super::link_payments::{card, PAID_CARD};
use super::{expect_code, Harness, World};
use crate::error::Code;
use crate::invoice::InvoiceStatus;
use crate::payment::{limits, PaymentStatus};
use crate::payment_link::checkout::{PayRequest, PayStatus};
use crate::sandbox::Advance;
use crate::store::Store;
use chrono::Duration;
use serde_json::json;

const DECLINED_CARD: &str = "4123120001090000";

fn request(number: &str, installments: u8, client: &str) -> PayRequest {
    let mut r = PayRequest::parse(&json!({"method": card(number), "installments": installments})).unwrap();
    r.client = client.into();
    r
}

pub fn installments_keep_the_card_and_fall_due<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, true);
    let p = product(&w, s, "400.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    let out = w.billing.invoices().pay(inv.id, &request(PAID_CARD, 2, "10.0.0.1")).unwrap();
    assert_eq!(out.status, PayStatus::Paid);
    let card = w.read(|tx| tx.latest_active_card(c.id)).expect("the card is kept");
    assert_eq!((Some(card.id), card.last_four.as_str(), card.consent), (out.consent_id, "1111", true));
    let (acc, pays) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    assert_eq!((acc.status, acc.installments), (InvoiceStatus::Accepted, Some(2)));
    assert_eq!(
        pays.iter().map(|p| p.status).collect::<Vec<_>>(),
        [PaymentStatus::Succeeded, PaymentStatus::Pending]
    );
    // The consumer's latest card now declines: the second fails on its date, stays payable,
    // and the consumer is told, with the page to pay it from.
    w.billing.payments().save_card(s, c.id, DECLINED_CARD, 12, 2030, true).unwrap();
    let before = w.notifications().len();
    w.billing.sandbox().advance(s, Advance::By(Duration::days(40))).unwrap();
    w.billing.engine().run_due_work(None, 100).unwrap();
    let (_, pays) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    assert_eq!(pays[1].status, PaymentStatus::Failed);
    let failures = |w: &World<H::S>| -> Vec<crate::notification::Notification> {
        w.notifications()
            .into_iter()
            .filter(|n| n.kind == crate::notification::Kind::InstallmentFailed)
            .collect()
    };
    let notes = failures(&w);
    assert_eq!(notes.len(), 1, "{notes:?}");
    // (Before it, the reminder: 3 days ahead.)
    let reminders = w
        .notifications()
        .iter()
        .filter(|n| n.kind == crate::notification::Kind::InstallmentReminder)
        .count();
    assert_eq!((reminders, w.notifications().len()), (1, before + 2));
    let n = notes.last().unwrap();
    assert_eq!(
        (n.kind, n.recipient.as_str()),
        (crate::notification::Kind::InstallmentFailed, c.email.as_ref().unwrap().as_str())
    );
    assert_eq!(n.payload["payment_id"], json!(pays[1].id));
    assert_eq!(n.payload["url"], json!(acc.url(w.billing.engine().public_url())));
    // Paid from the page afterwards: complete, and nothing is charged or told again.
    assert_eq!(
        w.billing.invoices().pay(inv.id, &request(PAID_CARD, 1, "10.0.0.1")).unwrap().status,
        PayStatus::Paid
    );
    let (done, _) = w.billing.invoices().get(s, inv.id).unwrap().into_parts();
    assert_eq!(done.status, InvoiceStatus::Completed);
    expect_code(w.billing.invoices().pay(inv.id, &request(PAID_CARD, 1, "10.0.0.1")), Code::DUPLICATE_PAYMENT);
    w.billing.sandbox().advance(s, Advance::By(Duration::days(60))).unwrap();
    assert_eq!(failures(&w).len(), 1);
}

pub fn failed_attempts_are_counted_per_target_and_client<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = consumer(&w, s, false);
    let p = product(&w, s, "100.00", json!({}));
    let inv = create(&w, s, invoice_body(c.id, &[(p.id, 1)], &[]));
    for _ in 0..limits::MAX_FAILED {
        assert_eq!(
            w.billing.invoices().pay(inv.id, &request(DECLINED_CARD, 1, "10.0.0.1")).unwrap().status,
            PayStatus::Failed
        );
    }
    expect_code(w.billing.invoices().pay(inv.id, &request(PAID_CARD, 1, "10.0.0.1")), Code::RATE_LIMITED);
    // Another client is not held back.
    assert_eq!(
        w.billing.invoices().pay(inv.id, &request(DECLINED_CARD, 1, "10.0.0.2")).unwrap().status,
        PayStatus::Failed
    );
    // The store's contract: counts since a time, per target and client; recording forgets the
    // ones before `forget_before` of the same target and client only.
    let t0 = w.now();
    let target = limits::invoice_target(inv.id);
    let count = |client: &str, since| w.read(|tx| tx.count_failed_pay_attempts(&target, client, since));
    assert_eq!(count("10.0.0.1", t0 - limits::WINDOW), limits::MAX_FAILED);
    assert_eq!(count("10.0.0.1", t0 + Duration::seconds(1)), 0);
    assert_eq!(count("10.0.0.3", t0 - limits::WINDOW), 0);
    let later = t0 + Duration::minutes(20);
    w.billing
        .engine()
        .store
        .write(|tx| Ok(tx.record_failed_pay_attempt(&target, "10.0.0.1", later, later - limits::WINDOW)?))
        .unwrap();
    assert_eq!(count("10.0.0.1", t0 - Duration::hours(1)), 1, "the old ones are forgotten");
    assert_eq!(count("10.0.0.2", t0 - Duration::hours(1)), 1, "another client's are kept");
    // Past the window, the client may pay again.
    w.billing.sandbox().advance(s, Advance::By(Duration::minutes(16))).unwrap();
    let out = w.billing.invoices().pay(inv.id, &request(PAID_CARD, 1, "10.0.0.1")).unwrap();
    assert_eq!(out.status, PayStatus::Paid);
}
