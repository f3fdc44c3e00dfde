//! Product and coupon cases.

use super::{Harness, World};
use crate::product::ProductFields;
use serde_json::json;

pub fn product_prices_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let f = ProductFields::parse(
        &json!({"name": "Plan", "type": "ONE_OFF", "price": "115.00", "prices": [{"currency": "KWD", "amount": "1.250", "is_price_inclusive_of_vat": false}]}),
        true,
        crate::money::Currency::SAR,
    )
    .unwrap();
    let p = w.billing.create_product(&w.admin, f).unwrap();
    assert_eq!(p.prices.len(), 2);
    let got = w.billing.get_product(&w.admin, p.id).unwrap();
    assert_eq!(got, p);
}
