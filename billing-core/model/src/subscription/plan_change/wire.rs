//! SubscriptionUpdate. Everything the request alone can break is a 422 here; what needs the
//! store (products, their interval and prices, coupons, the cycle the subscription is in) is
//! in `ops`.

use super::super::wire::{dedup, parse_item, parse_overrides};
use super::SubscriptionUpdate;
use crate::error::Result;
use crate::ids::{ConsumerId, CouponId};
use crate::product::RecurringInterval;
use crate::subscription::cycle;
use crate::wire::{uuid_item, Body, MAX_DESCRIPTION};
use serde_json::Value;

/// The largest interval count (as products').
const MAX_INTERVAL_COUNT: i64 = 365;

impl SubscriptionUpdate {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let items = b.req_list("items", parse_item);
        if let Some(items) = &items {
            if items.is_empty() {
                b.fail("too_short", "items", "List should have at least 1 item after validation, not 0");
            } else if items.len() > crate::invoice::MAX_ITEMS {
                b.fail("too_long", "items", format!("List should have at most {} items", crate::invoice::MAX_ITEMS));
            }
        }
        let coupons = if b.present("coupons") && b.raw("coupons").is_none() {
            // `null`: no subscription-level coupon.
            Some(vec![])
        } else {
            b.req_list("coupons", uuid_item::<CouponId>)
        };
        let description = match b.present("description") {
            false => None,
            true if b.raw("description").is_none() => Some(None),
            true => b.opt_free_text("description", MAX_DESCRIPTION).map(Some),
        };
        let until_cycle_number = match b.present("until_cycle_number") {
            false => None,
            true if b.raw("until_cycle_number").is_none() => Some(None),
            true => match b.opt_int("until_cycle_number") {
                Some(n) if (1..=i64::from(cycle::MAX_CYCLE)).contains(&n) => Some(Some(n as u32)),
                Some(_) => {
                    b.fail(
                        "greater_than_equal",
                        "until_cycle_number",
                        format!("Input should be an integer between 1 and {}", cycle::MAX_CYCLE),
                    );
                    None
                }
                None => None,
            },
        };
        let payment_methods = b.raw("override_payment_methods").is_some().then(|| parse_overrides(&mut b));
        let recurring_interval = b.opt_enum("recurring_interval", RecurringInterval::parse, &RecurringInterval::expected());
        let recurring_interval_count = match b.opt_int("recurring_interval_count") {
            Some(n) if (1..=MAX_INTERVAL_COUNT).contains(&n) => Some(n as u32),
            Some(_) => {
                b.fail(
                    "greater_than_equal",
                    "recurring_interval_count",
                    format!("Input should be between 1 and {MAX_INTERVAL_COUNT}"),
                );
                None
            }
            None => None,
        };
        let exclude_coupons_if_installments = b.opt_bool("exclude_coupons_if_installments");
        let consumer_id = b.opt_uuid::<ConsumerId>("organization_consumer_id");
        let currency = b.opt_currency("currency");
        b.finish()?;
        Ok(SubscriptionUpdate {
            items: items.expect("checked"),
            coupons: dedup(coupons.expect("checked")),
            description,
            until_cycle_number,
            payment_methods,
            recurring_interval,
            recurring_interval_count,
            exclude_coupons_if_installments,
            consumer_id,
            currency,
        })
    }
}

/// The document of SubscriptionUpdate (its fields as the reader above reads them).
pub mod request {
    use crate::money::Currency;
    use crate::product::RecurringInterval;
    use crate::schema::{Id, Integer};
    use crate::subscription::wire::request::{SubscriptionItemCreateDto, SubscriptionPaymentMethodDto};
    use schemars::JsonSchema;

    /// SubscriptionUpdate: fields apply at once; items, coupons and the interval are a plan
    /// change scheduled for the period end.
    #[derive(JsonSchema)]
    pub struct SubscriptionUpdate {
        /// The merchant's description (from the next invoice on).
        #[schemars(length(max = 2000))]
        pub description: Option<String>,
        /// The items from the next period (a change is a plan change at the period end).
        pub items: Vec<SubscriptionItemCreateDto>,
        /// The coupons from the next period.
        pub coupons: Vec<String>,
        /// The last cycle billed.
        pub until_cycle_number: Option<Integer>,
        /// Overrides of the organization's payment methods, and auto-renewal.
        pub override_payment_methods: Option<SubscriptionPaymentMethodDto>,
        /// The cycle unit from the next period (the items' products must have it).
        pub recurring_interval: Option<RecurringInterval>,
        /// How many intervals one cycle lasts from the next period (1 to 365).
        pub recurring_interval_count: Option<Integer>,
        /// Whether coupons are dropped when an invoice is paid in installments.
        pub exclude_coupons_if_installments: Option<bool>,
        /// Must be the subscription's own (a subscription keeps its consumer: cancel and create another).
        pub organization_consumer_id: Option<Id>,
        /// Must be the subscription's own currency.
        pub currency: Option<Currency>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::ids::ProductId;
    use serde_json::json;

    fn locs(r: Result<SubscriptionUpdate>) -> Vec<Value> {
        match r {
            Err(Error::Validation(d)) => d.iter().map(|e| serde_json::to_value(&e.loc).unwrap()).collect(),
            other => panic!("expected a 422, got {other:?}"),
        }
    }

    #[test]
    fn absent_fields_keep_their_value_and_null_clears() {
        let p = ProductId::new();
        let u = SubscriptionUpdate::parse(&json!({"items": [{"product_id": p, "quantity": 2}], "coupons": []})).unwrap();
        assert_eq!((u.items[0].quantity, u.description.clone(), u.until_cycle_number), (2, None, None));
        assert_eq!((u.payment_methods, u.recurring_interval, u.exclude_coupons_if_installments), (None, None, None));
        let u = SubscriptionUpdate::parse(&json!({
            "items": [{"product_id": p}], "coupons": null, "description": null, "until_cycle_number": null,
            "override_payment_methods": {"subscription_auto_renewal": false}, "recurring_interval": "QUARTER",
            "recurring_interval_count": 2,
        }))
        .unwrap();
        assert_eq!((u.description, u.until_cycle_number, u.coupons), (Some(None), Some(None), vec![]));
        assert_eq!(u.payment_methods.map(|m| m.auto_renewal()), Some(false));
        assert_eq!((u.recurring_interval, u.recurring_interval_count), (Some(RecurringInterval::Quarter), Some(2)));
    }

    #[test]
    fn refusals() {
        assert_eq!(
            locs(SubscriptionUpdate::parse(&json!({}))),
            vec![json!(["body", "items"]), json!(["body", "coupons"])]
        );
        let bad = json!({
            "items": [{"product_id": "x"}],
            "coupons": ["nope"],
            "description": 5,
            "until_cycle_number": 0,
            "override_payment_methods": {"installment": true},
            "recurring_interval": "DAY",
            "recurring_interval_count": 0,
            "exclude_coupons_if_installments": "y",
            "organization_consumer_id": "z",
            "currency": "XXX",
        });
        assert_eq!(
            locs(SubscriptionUpdate::parse(&bad)),
            vec![
                json!(["body", "items", 0, "product_id"]),
                json!(["body", "coupons", 0]),
                json!(["body", "description"]),
                json!(["body", "until_cycle_number"]),
                json!(["body", "override_payment_methods", "installment"]),
                json!(["body", "recurring_interval"]),
                json!(["body", "recurring_interval_count"]),
                json!(["body", "exclude_coupons_if_installments"]),
                json!(["body", "organization_consumer_id"]),
                json!(["body", "currency"]),
            ]
        );
        assert_eq!(
            locs(SubscriptionUpdate::parse(&json!({"items": [], "coupons": []}))),
            vec![json!(["body", "items"])]
        );
    }
}
