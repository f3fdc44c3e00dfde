//! Invoice creation through billing-core on the SQLite store (no HTTP):
//!
//! ```sh
//! cargo bench -p benches --bench invoices
//! ```
//!
//! One organization with a consumer, three products (VAT-inclusive, VAT-exclusive, exempt) and
//! one percentage coupon; each iteration creates one invoice for the three products with the
//! coupon: parse the request, read consumer, products and coupon, compute the totals, take the
//! next invoice number, write the invoice, its items, its payment and the INVOICE_CREATED event,
//! commit durably. Throughput is reported in invoices per second.

use billing_core::auth::Credential;
use billing_core::clock::SystemClock;
use billing_core::consumer::ConsumerFields;
use billing_core::coupon::CouponFields;
use billing_core::fields::Email;
use billing_core::invoice::InvoiceCreate;
use billing_core::money::Currency;
use billing_core::org::BootstrapRequest;
use billing_core::product::ProductFields;
use billing_core::Billing;
use billing_store_sqlite::SqliteStore;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;
use std::sync::Arc;

fn create_invoice(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open(dir.path().join("bench.db")).expect("open SQLite");
    let billing = Billing::new(store, Arc::new(SystemClock));
    let boot = billing
        .org()
        .bootstrap(&BootstrapRequest {
            org_name: "Bench".into(),
            admin_email: Email::parse("admin@example.com").unwrap(),
            sandbox: true,
        })
        .expect("bootstrap");
    let scope = billing
        .auth()
        .authenticate(
            &Credential::ApiKey {
                key: boot.api_key.key.clone(),
                secret: boot.api_key.secret.clone(),
            },
            None,
        )
        .expect("scope");
    let consumer = billing
        .consumers()
        .create(&scope, ConsumerFields::parse(&json!({"name": "Bench Payer"}), true).unwrap())
        .unwrap();
    let product = |body: serde_json::Value| {
        billing
            .products()
            .create(&scope, ProductFields::parse(&body, true, Currency::SAR).unwrap())
            .unwrap()
            .id
    };
    let a = product(json!({"name": "A", "type": "ONE_OFF", "price": "115.00"}));
    let b = product(json!({"name": "B", "type": "ONE_OFF", "price": "99.99", "is_price_inclusive_of_vat": false}));
    let e = product(json!({"name": "C", "type": "ONE_OFF", "price": "10.50", "is_price_exempt_from_vat": true}));
    let coupon = billing
        .coupons()
        .create(
            &scope,
            CouponFields::parse(&json!({"name": "TEN", "discount_value": 10, "is_percentage": true}), true).unwrap(),
        )
        .unwrap();
    let body = json!({
        "organization_consumer_id": consumer.id,
        "items": [{"product_id": a, "quantity": 2}, {"product_id": b, "quantity": 1}, {"product_id": e, "quantity": 3}],
        "coupons": [coupon.id],
        "payment_methods": {"mada": true, "visa": true, "mastercard": true, "amex": false, "bank_transfer": false, "installment": true},
        "notify_consumer": false,
    });
    let mut g = c.benchmark_group("invoices");
    g.throughput(Throughput::Elements(1));
    g.bench_function("create_invoice_sqlite_3_items_1_coupon", |bench| {
        bench.iter(|| {
            let req = InvoiceCreate::parse(&body, Currency::SAR).expect("valid body");
            black_box(billing.invoices().create(&scope, req).expect("create invoice"));
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = create_invoice
}
criterion_main!(benches);
