//! Using billing-core as a library, with the SQLite store and no HTTP:
//! `cargo run -p examples --example embed`.
//!
//! The same operations the server exposes are plain method calls on `Billing`'s services;
//! request bodies can be parsed from the public API's JSON or built as typed values directly.
//! It ends by taking a payment through a card processor of its own (a `PaymentGateway`), running
//! the background work in-process and reading the events the operations recorded; it exits
//! with an error if the invoice was not paid exactly once.

use billing_core::auth::Credential;
use billing_core::clock::SystemClock;
use billing_core::consumer::{parse_consumer_list, ConsumerFields};
use billing_core::fields::{Email, PhoneNumber};
use billing_core::list::QueryParams;
use billing_core::money::Money;
use billing_core::org::BootstrapRequest;
use billing_core::payment::gateway::{CardDetails, GatewayOutcome, PaymentGateway};
use billing_core::payment::PaymentStatus;
use billing_core::product::ProductFields;
use billing_core::store::Store;
use billing_core::Billing;
use billing_store_sqlite::SqliteStore;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A card processor of the embedding program's own: it approves every charge and counts them.
/// (A real one calls its processor's API here, with `reference` as the idempotency key.)
#[derive(Default)]
struct InHouseProcessor {
    charges: AtomicUsize,
}

impl PaymentGateway for InHouseProcessor {
    fn charge_card(&self, reference: &str, card: &CardDetails, amount: Money) -> GatewayOutcome {
        self.charges.fetch_add(1, Ordering::SeqCst);
        println!("processor: charge {amount} {} to {card:?} (reference {reference})", amount.currency());
        GatewayOutcome::of("00", "APPROVED")
    }
    fn charge_token(&self, _reference: &str, _token: &str, _amount: Money) -> GatewayOutcome {
        GatewayOutcome::of("05", "DECLINED")
    }
    fn refund(&self, _reference: &str, _transaction: &str, _amount: Money) -> GatewayOutcome {
        GatewayOutcome::of("00", "APPROVED")
    }
    fn void(&self, _reference: &str) -> GatewayOutcome {
        GatewayOutcome::of("00", "APPROVED")
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(dir.path().join("billing.db"))?;
    let billing = Billing::new(store, Arc::new(SystemClock));

    // An organization with a branch, an admin and an API key; the key resolves to a scope.
    let boot = billing.org().bootstrap(&BootstrapRequest {
        org_name: "Embedded Shop".into(),
        admin_email: Email::parse("owner@shop.example")?,
        sandbox: true,
    })?;
    let scope = billing.auth().authenticate(
        &Credential::ApiKey {
            key: boot.api_key.key.clone(),
            secret: boot.api_key.secret.clone(),
        },
        None,
    )?;

    // Typed input, built directly…
    let sara = billing.consumers().create(
        &scope,
        ConsumerFields {
            name: Some("Sara Al-Harbi".into()),
            phone_number: Some(PhoneNumber::parse("+966501234567")?),
            ..Default::default()
        },
    )?;
    println!("consumer {} ({})", sara.name, sara.id);

    // …or parsed from the public API's JSON, with the same validation the server applies.
    let product = billing.products().create(
        &scope,
        ProductFields::parse(
            &serde_json::json!({"name": "Gym membership", "type": "ONE_OFF", "price": "115.00"}),
            true,
            scope.org.settings.default_currency,
        )?,
    )?;
    println!(
        "product {}: {}",
        product.name,
        serde_json::to_string(&product.view(&scope.org.settings).vat_amount)?
    );

    // A refused operation is a typed error carrying the API's code.
    let dup = billing.consumers().create(
        &scope,
        ConsumerFields {
            name: Some("Copy".into()),
            phone_number: Some(PhoneNumber::parse("+966501234567")?),
            ..Default::default()
        },
    );
    println!("duplicate refused with {:?}", dup.unwrap_err().rule_code());

    let (q, f) = parse_consumer_list(&QueryParams::parse("search_term=sara"))?;
    let page = billing.consumers().list(&scope, &q, &f)?;
    println!("search found {} consumer(s)", page.items.len());

    // An invoice for Sara, paid by card through the program's own processor.
    let processor = Arc::new(InHouseProcessor::default());
    billing.engine().set_sandbox_gateway(processor.clone());
    let invoice = billing.invoices().create(
        &scope,
        billing_core::invoice::InvoiceCreate::parse(
            &serde_json::json!({"organization_consumer_id": sara.id, "currency": "SAR",
                                "items": [{"product_id": product.id, "quantity": 2}]}),
            scope.org.settings.default_currency,
        )?,
    )?;
    let card = CardDetails {
        name: "Sara Al-Harbi".into(),
        number: "4111111111111111".into(),
        expiry_month: 12,
        expiry_year: 2030,
        cvc: "123".into(),
    };
    let due: Vec<_> = invoice.payments.iter().map(|p| p.id).collect();
    let paid = billing.payments().pay_by_card(&scope, invoice.invoice.id, &due, &card)?;
    println!("invoice {} paid: {:?}", invoice.invoice.id, paid.iter().map(|p| p.status).collect::<Vec<_>>());

    // The background work (webhook fan-out, notifications, renewals…), run in-process: a
    // program without the server calls this from a thread of its own every few seconds.
    let report = billing.engine().run_due_work(None, 1000)?;
    println!("due work: {} item(s) claimed", report.claimed);

    // What the operations recorded, in order: the outbox every webhook is sent from.
    let events = billing.engine().store.read(|tx| Ok(tx.list_events(scope.org_id())?))?;
    for e in &events {
        println!("event {:?} {}", e.event_type, e.entity_id);
    }
    let read = billing.invoices().get(&scope, invoice.invoice.id)?;
    let settled = read.payments.iter().all(|p| p.status == PaymentStatus::Succeeded);
    if !settled || processor.charges.load(Ordering::SeqCst) != 1 {
        return Err(format!("the invoice should be paid by exactly one charge: {:?}", read.invoice.status).into());
    }
    println!("invoice {} is {:?}, charged once", read.invoice.id, read.invoice.status);
    Ok(())
}
