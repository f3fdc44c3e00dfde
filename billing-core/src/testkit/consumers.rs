//! Consumer cases.

use super::{Harness, World};
use crate::consumer::ConsumerFields;
use serde_json::json;

pub fn create_and_get<H: Harness>() {
    let w = World::new(H::store());
    let f = ConsumerFields::parse(&json!({"name": "Sara", "phone_number": "+966501234567", "email": "sara@example.com", "external_metadata": {"plan": "gold"}}), true).unwrap();
    let c = w.billing.create_consumer(&w.admin, f).unwrap();
    let got = w.billing.get_consumer(&w.admin, c.id).unwrap();
    assert_eq!(got, c);
}
