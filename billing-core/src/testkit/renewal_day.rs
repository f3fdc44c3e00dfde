//! A renewal day at scale, for the renewal benchmark (`benches/src/bin/renewalbench.rs`) and the
//! multi-process and crash tests of the server: [`seed`] makes `n` ACTIVE monthly subscriptions
//! whose period ends now, each with its own consumer holding a saved, active tokenized card with
//! consent (so the renewal charge is approved by the sandbox gateway).
//!
//! One subscription is made through the engine's operations (consumer, card, subscription with
//! its first invoice, that invoice marked paid, which activates it); the others are copies of
//! its rows with fresh ids, written through the store `batch` at a time: the same consumer,
//! card, subscription (with its items), first invoice (with its own invoice number), paid
//! payment, cycle row and queued renewal as the operations write. Only the creation events and
//! notifications of the copies are not written: a renewal day neither reads nor needs them.

use crate::auth::Scope;
use crate::billing::Billing;
use crate::clock::Timestamp;
use crate::consumer::ConsumerFields;
use crate::error::Result;
use crate::ids::{ConsumerId, InvoiceId, InvoiceItemId, PaymentId, SubscriptionId, SubscriptionItemId};
use crate::money::Currency;
use crate::payment::{MarkPaid, PaymentMethod};
use crate::product::ProductFields;
use crate::store::Store;
use crate::subscription::SubscriptionCreate;
use serde_json::json;

/// The card every seeded consumer saved (approved by the sandbox gateway).
pub const APPROVED_CARD: &str = "4111111111111111";

/// Makes `n` (at least 1) ACTIVE monthly subscriptions of 100.00 SAR in `scope`'s branch whose
/// first period starts at `period_start` (so their renewal into cycle 2 is due at
/// `period_start` + 1 month), `batch` copies per transaction. Returns their ids.
pub fn seed<S: Store>(billing: &Billing<S>, scope: &Scope, n: usize, period_start: Timestamp, batch: usize) -> Result<Vec<SubscriptionId>> {
    let product = billing.products().create(
        scope,
        ProductFields::parse(
            &json!({"name": "Monthly plan", "type": "RECURRING", "recurring_interval": "MONTH", "price": "100.00"}),
            true,
            Currency::SAR,
        )?,
    )?;
    let consumer = billing.consumers().create(scope, ConsumerFields::parse(&json!({"name": "Renewal 0"}), true)?)?;
    billing.payments().save_card(scope, consumer.id, APPROVED_CARD, 12, 2040, true)?;
    let body = json!({
        "organization_consumer_id": consumer.id,
        "items": [{"product_id": product.id, "quantity": 1}],
        "period_start": crate::clock::format_rfc3339(&period_start),
        "currency": "SAR",
    });
    let sub = billing
        .subscriptions()
        .create(scope, SubscriptionCreate::parse(&body, Currency::SAR)?)?
        .subscription;
    let first = sub.latest_invoice_id.expect("a subscription has its first invoice");
    let (_, pays) = billing.invoices().get(scope, first)?.into_parts();
    billing.payments().mark_paid(
        scope,
        pays[0].id,
        MarkPaid {
            method: PaymentMethod::Cash,
            note: None,
        },
    )?;
    // The template's rows, as the operations wrote them.
    let (c, card, s, inv, pays) = billing.engine().store.read(|tx| {
        let c = tx.consumer(scope.branch_id(), consumer.id)?.expect("the consumer");
        let card = tx.latest_active_card(consumer.id)?.expect("the card");
        let s = tx.subscription(scope.branch_id(), sub.id)?.expect("the subscription");
        let inv = tx.invoice(scope.branch_id(), first)?.expect("the first invoice");
        let pays = tx.invoice_payments(first)?;
        Ok((c, card, s, inv, pays))
    })?;
    assert_eq!(s.status, crate::subscription::SubscriptionStatus::Active, "the template is active");
    let lead = scope.org.settings.invoice_lead();
    let mut ids = vec![s.id];
    let mut made = 1;
    while made < n {
        let k = batch.max(1).min(n - made);
        let copies = billing.engine().store.write(|tx| {
            let mut copies = Vec::with_capacity(k);
            for i in made..made + k {
                let mut c2 = c.clone();
                c2.id = ConsumerId::new();
                c2.name = format!("Renewal {i}");
                tx.insert_consumer(&c2)?;
                let mut card2 = card.clone();
                card2.id = uuid::Uuid::now_v7();
                card2.consumer_id = c2.id;
                tx.insert_card(&card2)?;
                let mut s2 = s.clone();
                s2.id = SubscriptionId::new();
                s2.consumer_id = c2.id;
                for item in &mut s2.items {
                    item.id = SubscriptionItemId::new();
                    item.line.id = InvoiceItemId(item.id.0);
                }
                let mut inv2 = inv.clone();
                inv2.id = InvoiceId::new();
                inv2.consumer_id = c2.id;
                inv2.subscription_id = Some(s2.id.0);
                inv2.org_invoice_number = tx.next_invoice_number(s2.org_id)?;
                for item in &mut inv2.items {
                    item.id = InvoiceItemId::new();
                }
                s2.latest_invoice_id = Some(inv2.id);
                tx.insert_invoice(&inv2)?;
                for p in &pays {
                    let mut p2 = p.clone();
                    p2.id = PaymentId::new();
                    p2.invoice_id = inv2.id;
                    tx.insert_payment(&p2)?;
                }
                tx.insert_subscription(&s2)?;
                tx.insert_subscription_cycle(s2.id, 1, inv2.id)?;
                crate::subscription::ops::schedule_renewal(tx, &s2, lead)?;
                copies.push(s2.id);
            }
            Ok(copies)
        })?;
        made += copies.len();
        ids.extend(copies);
    }
    Ok(ids)
}
