//! Using billing-core as a library, with the SQLite store and no HTTP:
//! `cargo run -p examples --example embed`.
//!
//! The same operations the server exposes are plain method calls on `Billing`; request bodies
//! can be parsed from the public API's JSON or built as typed values directly.

use billing_core::auth::Credential;
use billing_core::clock::SystemClock;
use billing_core::consumer::{parse_consumer_list, ConsumerFields};
use billing_core::fields::{Email, PhoneNumber};
use billing_core::list::QueryParams;
use billing_core::org::BootstrapRequest;
use billing_core::product::ProductFields;
use billing_core::Billing;
use billing_store_sqlite::SqliteStore;
use std::sync::Arc;

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
    Ok(())
}
