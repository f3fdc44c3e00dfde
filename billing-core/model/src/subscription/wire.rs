//! Subscription requests: SubscriptionCreate, SubscriptionCancel and the list parameters.
//! Everything a request alone can break is a 422 here; rules that need the store (products,
//! their interval, prices, the consumer) are in `ops`.

use super::*;
use crate::clock::parse_datetime;
use crate::error::{LocPart, Problems, Result};
use crate::list::{Query, QueryParams};
use crate::wire::{uuid_item, Body, MAX_DESCRIPTION};
use serde_json::Value;

/// The largest quantity of one line (as invoices).
const MAX_QUANTITY: i64 = 1_000_000;

pub(super) fn dedup<T: PartialEq + Copy>(v: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

pub(super) fn parse_item(v: &Value, loc: Vec<LocPart>, problems: &mut Problems) -> Option<SubscriptionItemRequest> {
    let mut b = Body::at(v, loc);
    let product_id = b.req_uuid::<ProductId>("product_id");
    let quantity = match b.opt_int("quantity") {
        Some(n) if (1..=MAX_QUANTITY).contains(&n) => Some(n as u32),
        Some(_) => {
            b.fail(
                "greater_than_equal",
                "quantity",
                format!("Input should be an integer between 1 and {MAX_QUANTITY}"),
            );
            None
        }
        None if b.present("quantity") => None,
        None => Some(1),
    };
    let coupons = b.opt_list("coupons", uuid_item::<CouponId>).unwrap_or_default();
    let ok = b.problems.is_empty();
    problems.0.extend(b.problems.0);
    match (ok, product_id, quantity) {
        (true, Some(product_id), Some(quantity)) => Some(SubscriptionItemRequest {
            product_id,
            quantity,
            coupons: dedup(coupons),
        }),
        _ => None,
    }
}

/// SubscriptionPaymentMethodDto: each flag optional (`null` or absent: the organization's
/// default; auto-renewal: on).
pub(super) fn parse_overrides(b: &mut Body<'_>) -> PaymentMethodOverrides {
    let Some(raw) = b.raw("override_payment_methods") else {
        return PaymentMethodOverrides::default();
    };
    let mut p = Body::at(raw, b.loc("override_payment_methods"));
    let o = PaymentMethodOverrides {
        visa: p.opt_bool("visa"),
        mastercard: p.opt_bool("mastercard"),
        amex: p.opt_bool("amex"),
        bank_transfer: p.opt_bool("bank_transfer"),
        installment: p.opt_bool("installment"),
        qurrah: p.opt_bool("qurrah"),
        subscription_auto_renewal: p.opt_bool("subscription_auto_renewal"),
    };
    if o.installment == Some(true) {
        p.fail(
            "value_error",
            "installment",
            "Value error, installments are not available for recurring products",
        );
    }
    b.problems.0.extend(p.problems.0);
    o
}

impl SubscriptionCreate {
    pub fn parse(v: &Value, default_currency: Currency) -> Result<Self> {
        let mut b = Body::new(v);
        let notify_consumer = b.opt_bool("notify_consumer").unwrap_or(true);
        let description = b.opt_free_text("description", MAX_DESCRIPTION);
        let items = b.req_list("items", parse_item);
        if let Some(items) = &items {
            if items.is_empty() {
                b.fail("too_short", "items", "List should have at least 1 item after validation, not 0");
            } else if items.len() > crate::invoice::MAX_ITEMS {
                b.fail("too_long", "items", format!("List should have at most {} items", crate::invoice::MAX_ITEMS));
            }
        }
        let coupons = b.opt_list("coupons", uuid_item::<CouponId>).unwrap_or_default();
        let consumer_id = b.req_uuid::<ConsumerId>("organization_consumer_id");
        let period_start = if b.raw("period_start").is_none() {
            b.fail("missing", "period_start", "Field required");
            None
        } else {
            b.opt_parsed("period_start", |s| parse_datetime(s).ok_or("invalid date-time"))
        };
        let until_cycle_number = match b.opt_int("until_cycle_number") {
            Some(n) if (1..=i64::from(cycle::MAX_CYCLE)).contains(&n) => Some(n as u32),
            Some(_) => {
                b.fail(
                    "greater_than_equal",
                    "until_cycle_number",
                    format!("Input should be an integer between 1 and {}", cycle::MAX_CYCLE),
                );
                None
            }
            None => None,
        };
        let payment_methods = parse_overrides(&mut b);
        let exclude_coupons_if_installments = b.opt_bool("exclude_coupons_if_installments").unwrap_or(false);
        let currency = b.opt_currency("currency").unwrap_or(default_currency);
        let trial = b.opt_bool("trial").unwrap_or(false);
        b.finish()?;
        Ok(SubscriptionCreate {
            notify_consumer,
            description,
            items: items.expect("checked"),
            coupons: dedup(coupons),
            consumer_id: consumer_id.expect("checked"),
            period_start: period_start.expect("checked"),
            until_cycle_number,
            payment_methods,
            exclude_coupons_if_installments,
            currency,
            trial,
        })
    }
}

impl SubscriptionCancel {
    /// SubscriptionCancel; an empty body is `cancel_related_invoices: false`.
    pub fn parse(v: &Value) -> Result<Self> {
        if v.is_null() {
            return Ok(SubscriptionCancel::default());
        }
        let mut b = Body::new(v);
        let cancel_related_invoices = b.opt_bool("cancel_related_invoices").unwrap_or(false);
        b.finish()?;
        Ok(SubscriptionCancel { cancel_related_invoices })
    }
}

pub fn parse_subscription_list(params: &QueryParams) -> Result<SubscriptionListRequest> {
    let mut q = Query::new(params);
    let list = q.list(SubscriptionSort::CreatedAt, SubscriptionSort::parse, &SubscriptionSort::expected());
    let filter = SubscriptionFilter {
        statuses: q.enums("statuses", SubscriptionStatus::parse, &SubscriptionStatus::expected()),
        latest_invoice_is_paid: q.bool("latest_invoice_is_paid"),
        from_date: q.datetime("from_date"),
        to_date: q.datetime("to_date"),
        current_period_start_from: q.datetime("current_period_start_from_date"),
        current_period_start_to: q.datetime("current_period_start_to_date"),
        current_period_end_from: q.datetime("current_period_end_from_date"),
        current_period_end_to: q.datetime("current_period_end_to_date"),
        from_price: q.decimal("from_price"),
        to_price: q.decimal("to_price"),
        consumer_id: q.uuid("organization_consumer_id"),
        product_ids: q.uuids("product_ids"),
        currencies: q.currencies("currencies"),
    };
    q.finish()?;
    Ok(SubscriptionListRequest { query: list, filter })
}

/// The documents of the subscription requests (their fields as the readers above read them).
pub mod request {
    use super::{SubscriptionSort, SubscriptionStatus};
    use crate::money::Currency;
    use crate::schema::{Amount, DateTime, Id, Integer};
    use schemars::JsonSchema;

    /// SubscriptionCreate: a consumer billed repeatedly for recurring products; the first
    /// cycle's invoice is issued at once.
    #[derive(JsonSchema)]
    pub struct SubscriptionCreate {
        /// Whether the consumer is notified of its invoices (default true).
        pub notify_consumer: Option<bool>,
        /// The merchant's description, copied onto each cycle's invoice.
        #[schemars(length(max = 2000))]
        pub description: Option<String>,
        /// The lines each cycle bills: recurring products sharing one interval (1 to 100 lines).
        pub items: Vec<SubscriptionItemCreateDto>,
        /// Subscription-level coupons (ids), applied in this order after the items' own.
        pub coupons: Option<Vec<String>>,
        /// The consumer billed (one of the branch's live consumers).
        pub organization_consumer_id: Id,
        /// When cycle 1 starts (its invoice is due then); the cycles follow the calendar from it.
        pub period_start: DateTime,
        /// The last cycle billed (default: no end).
        pub until_cycle_number: Option<Integer>,
        /// Overrides of the organization's payment methods for its invoices, and auto-renewal.
        pub override_payment_methods: Option<SubscriptionPaymentMethodDto>,
        /// Whether coupons are dropped when an invoice is paid in installments (default false).
        pub exclude_coupons_if_installments: Option<bool>,
        /// The currency every cycle is billed in (default: the organization's).
        pub currency: Option<Currency>,
        /// A trial until `period_start`: nothing is billed before it (default false).
        pub trial: Option<bool>,
    }

    /// SubscriptionItemCreateDto: one line of a subscription.
    #[derive(JsonSchema)]
    pub struct SubscriptionItemCreateDto {
        /// A RECURRING product of the branch with an active price in the currency.
        pub product_id: Id,
        /// How many units (1 to 1000000; default 1).
        pub quantity: Integer,
        /// The line's own coupons (ids), applied in this order.
        pub coupons: Option<Vec<String>>,
    }

    /// SubscriptionCancel: an ACTIVE subscription ends at its period end; any other ends now.
    #[derive(JsonSchema)]
    pub struct SubscriptionCancel {
        /// Also void its invoices that are not finalised (default false).
        pub cancel_related_invoices: Option<bool>,
    }

    /// SubscriptionPaymentMethodDto: the overrides of the organization's payment methods for a
    /// subscription's invoices (the document of [`super::PaymentMethodOverrides`], in requests and
    /// responses).
    #[derive(JsonSchema)]
    pub struct SubscriptionPaymentMethodDto {
        /// Visa cards (and mada); `null`: the organization's default.
        pub visa: Option<bool>,
        /// Mastercard; `null`: the organization's default.
        pub mastercard: Option<bool>,
        /// American Express; `null`: the organization's default.
        pub amex: Option<bool>,
        /// Bank transfer; `null`: the organization's default.
        pub bank_transfer: Option<bool>,
        /// Installments: never offered for recurring products (`true` is refused).
        pub installment: Option<bool>,
        /// Qurrah; `null`: the organization's default.
        pub qurrah: Option<bool>,
        /// Whether renewals charge the consumer's latest active card (`null`: yes).
        pub subscription_auto_renewal: Option<bool>,
    }

    crate::list_query! {
        /// Subscriptions.
        SubscriptionListQuery(SubscriptionSort) {
            /// Only these statuses (repeated).
            statuses: Vec<SubscriptionStatus>,
            /// Latest invoice paid or partially paid.
            latest_invoice_is_paid: bool,
            /// Created at or after.
            from_date: DateTime,
            /// Created at or before.
            to_date: DateTime,
            /// Current period started at or after.
            current_period_start_from_date: DateTime,
            /// Current period started at or before.
            current_period_start_to_date: DateTime,
            /// Current period ends at or after.
            current_period_end_from_date: DateTime,
            /// Current period ends at or before.
            current_period_end_to_date: DateTime,
            /// `amount` at least.
            from_price: Amount,
            /// `amount` at most.
            to_price: Amount,
            /// Only this consumer's.
            organization_consumer_id: Id,
            /// Having an item of one of these products (repeated).
            product_ids: Vec<Id>,
            /// Only in these currencies (repeated or comma-separated).
            currencies: Vec<Currency>,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use serde_json::json;

    fn locs(r: Result<SubscriptionCreate>) -> Vec<Value> {
        match r {
            Err(Error::Validation(d)) => d.iter().map(|e| serde_json::to_value(&e.loc).unwrap()).collect(),
            other => panic!("expected a 422, got {other:?}"),
        }
    }

    #[test]
    fn create_defaults_and_refusals() {
        let p = ProductId::new();
        let c = ConsumerId::new();
        let ok = SubscriptionCreate::parse(
            &json!({"items": [{"product_id": p}], "organization_consumer_id": c, "period_start": "2027-01-31T10:00:00+03:00"}),
            Currency::SAR,
        )
        .unwrap();
        assert_eq!((ok.items[0].quantity, ok.currency, ok.notify_consumer), (1, Currency::SAR, true));
        assert_eq!(ok.period_start, parse_datetime("2027-01-31T07:00:00Z").unwrap());
        assert!(ok.payment_methods.auto_renewal());
        assert_eq!(ok.until_cycle_number, None);
        let bad = json!({
            "items": [{"product_id": p, "quantity": 0}],
            "until_cycle_number": 0,
            "override_payment_methods": {"installment": true, "visa": "x"},
            "trial": "yes",
        });
        assert_eq!(
            locs(SubscriptionCreate::parse(&bad, Currency::SAR)),
            vec![
                json!(["body", "items", 0, "quantity"]),
                json!(["body", "organization_consumer_id"]),
                json!(["body", "period_start"]),
                json!(["body", "until_cycle_number"]),
                json!(["body", "override_payment_methods", "visa"]),
                json!(["body", "override_payment_methods", "installment"]),
                json!(["body", "trial"]),
            ]
        );
    }

    #[test]
    fn cancel_body_is_optional() {
        assert_eq!(SubscriptionCancel::parse(&Value::Null).unwrap(), SubscriptionCancel::default());
        assert!(
            SubscriptionCancel::parse(&json!({"cancel_related_invoices": true}))
                .unwrap()
                .cancel_related_invoices
        );
        assert!(SubscriptionCancel::parse(&json!({"cancel_related_invoices": "maybe"})).is_err());
    }
}
