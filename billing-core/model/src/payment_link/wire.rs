//! Payment link requests: CreatePaymentLinkDto, UpdatePaymentLinkStatusDto,
//! UpdatePaymentLinkCouponsDto and the list parameters. Everything a request alone can break
//! is a 422 here; rules that need the store (products, prices, the consumer) are in `ops`.

use super::*;
use crate::clock::parse_datetime;
use crate::error::{FieldError, LocPart, Problems};
use crate::ids::PaymentLinkItemId;
use crate::list::{Query, QueryParams};
use crate::wire::{uuid_item, Body, MAX_DESCRIPTION};

const MAX_NAME: usize = 255;
/// The largest quantity of one line (as invoices).
pub const MAX_QUANTITY: i64 = 1_000_000;

fn dedup<T: PartialEq + Copy>(v: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// A whole number in `1..=max` at `field`, or a 422.
fn count(b: &mut Body<'_>, field: &str, max: i64) -> Option<u32> {
    match b.opt_int(field)? {
        n if (1..=max).contains(&n) => Some(n as u32),
        _ => {
            b.fail("greater_than_equal", field, format!("Input should be an integer between 1 and {max}"));
            None
        }
    }
}

fn parse_item(v: &Value, loc: Vec<LocPart>, problems: &mut Problems) -> Option<LinkItemRequest> {
    let mut b = Body::at(v, loc);
    let product_id = b.req_uuid::<ProductId>("product_id");
    let quantity = if b.raw("quantity").is_some() {
        count(&mut b, "quantity", MAX_QUANTITY)
    } else {
        Some(1)
    };
    let coupons = b.opt_list("coupons", uuid_item::<CouponId>).unwrap_or_default();
    let allow_custom_quantity = b.opt_bool("allow_custom_quantity").unwrap_or(false);
    let min_quantity = count(&mut b, "min_quantity", MAX_QUANTITY);
    let max_quantity = count(&mut b, "max_quantity", MAX_QUANTITY);
    if let (Some(min), Some(max)) = (min_quantity, max_quantity) {
        if min > max {
            b.fail("value_error", "max_quantity", "Value error, max_quantity should be at least min_quantity");
        }
    }
    if let Some(q) = quantity {
        if min_quantity.is_some_and(|m| q < m) || max_quantity.is_some_and(|m| q > m) {
            b.fail(
                "value_error",
                "quantity",
                "Value error, quantity should be between min_quantity and max_quantity",
            );
        }
    }
    let ok = b.problems.is_empty();
    problems.0.extend(b.problems.0);
    match (ok, product_id, quantity) {
        (true, Some(product_id), Some(quantity)) => Some(LinkItemRequest {
            product_id,
            quantity,
            coupons: dedup(coupons),
            allow_custom_quantity,
            min_quantity,
            max_quantity,
        }),
        _ => None,
    }
}

/// PaymentMethodDto (`visa`, `mastercard`, `amex`, `bank_transfer`, `installment`; a flag not
/// sent is false, as the schema's defaults say). mada cards go with visa.
fn parse_payment_methods(b: &mut Body<'_>) -> Option<PaymentMethods> {
    let raw = b.raw("payment_methods")?;
    let mut p = Body::at(raw, b.loc("payment_methods"));
    let visa = p.opt_bool("visa").unwrap_or(false);
    let m = PaymentMethods {
        mada: p.opt_bool("mada").unwrap_or(visa),
        visa,
        mastercard: p.opt_bool("mastercard").unwrap_or(false),
        amex: p.opt_bool("amex").unwrap_or(false),
        bank_transfer: p.opt_bool("bank_transfer").unwrap_or(false),
        installment: p.opt_bool("installment").unwrap_or(false),
        qurrah: false,
    };
    let ok = p.problems.is_empty();
    b.problems.0.extend(p.problems.0);
    ok.then_some(m)
}

/// An absolute http(s) URL (the rule webhook endpoints follow, without their address checks).
fn redirect_url(b: &mut Body<'_>, field: &str) -> Option<String> {
    let s = b.opt_str(field)?;
    match crate::webhook::check_url(&s) {
        Ok(u) => Some(u),
        Err(msg) => {
            b.fail("url_parsing", field, format!("Input should be a valid URL, {msg}"));
            None
        }
    }
}

impl PaymentLinkCreate {
    pub fn parse(v: &Value, default_currency: Currency) -> Result<Self> {
        let mut b = Body::new(v);
        let name = b.req_text("name", MAX_NAME);
        let description = b.opt_free_text("description", MAX_DESCRIPTION);
        let currency = b.opt_currency("currency").unwrap_or(default_currency);
        let items = b.req_list("items", parse_item);
        if let Some(items) = &items {
            if items.is_empty() {
                b.fail("too_short", "items", "List should have at least 1 item after validation, not 0");
            } else if items.len() > MAX_ITEMS {
                b.fail("too_long", "items", format!("List should have at most {MAX_ITEMS} items"));
            }
        }
        let coupons = b.opt_list("coupons", uuid_item::<CouponId>).unwrap_or_default();
        let max_number_of_payments = count(&mut b, "max_number_of_payments", i64::from(u32::MAX));
        let valid_until = b.opt_parsed("valid_until", |s| parse_datetime(s).ok_or("invalid date-time"));
        let confirmation_message = b.opt_free_text("confirmation_message", MAX_DESCRIPTION);
        let payment_methods = parse_payment_methods(&mut b);
        let trial_period_days = match b.opt_int("trial_period_days") {
            Some(n) if (0..=3650).contains(&n) => Some(n as u32),
            Some(_) => {
                b.fail("less_than_equal", "trial_period_days", "Input should be an integer between 0 and 3650");
                None
            }
            None => None,
        };
        let custom_fields = b.opt_object("custom_fields");
        let success_redirect_url = redirect_url(&mut b, "success_redirect_url");
        let failure_redirect_url = redirect_url(&mut b, "failure_redirect_url");
        let consumer_id = b.opt_uuid::<ConsumerId>("organization_consumer_id");
        let custom_metadata = b.opt_object("custom_metadata").unwrap_or_default();
        let contact_information_type = b
            .opt_enum("contact_information_type", ContactInformationType::parse, &ContactInformationType::expected())
            .unwrap_or(ContactInformationType::Phone);
        b.finish()?;
        Ok(PaymentLinkCreate {
            name: name.expect("checked"),
            description,
            currency,
            items: items.expect("checked"),
            coupons: dedup(coupons),
            max_number_of_payments,
            valid_until,
            payment_methods,
            checkout: CheckoutOptions {
                confirmation_message,
                trial_period_days,
                custom_fields,
                success_redirect_url,
                failure_redirect_url,
            },
            consumer_id,
            custom_metadata,
            contact_information_type,
        })
    }
}

impl StatusChange {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let status = b.req_enum("status", PaymentLinkStatus::parse, &PaymentLinkStatus::expected());
        if status == Some(PaymentLinkStatus::Completed) {
            b.fail(
                "value_error",
                "status",
                "Value error, a link becomes COMPLETED by its payments; ask for 'ACTIVE' or 'INACTIVE'",
            );
        }
        let deactivate_message = b.opt_free_text("deactivate_message", MAX_DESCRIPTION);
        b.finish()?;
        Ok(StatusChange {
            status: status.expect("checked"),
            deactivate_message,
        })
    }
}

impl CouponsChange {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let coupons = b.opt_list("coupons", uuid_item::<CouponId>).map(dedup);
        let items = b
            .opt_list("items", |v, loc, problems| {
                let mut i = Body::at(v, loc);
                let id = i.req_uuid::<PaymentLinkItemId>("payment_link_item_id");
                let coupons = i.opt_list("coupons", uuid_item::<CouponId>).unwrap_or_default();
                let ok = i.problems.is_empty();
                problems.0.extend(i.problems.0);
                match (ok, id) {
                    (true, Some(id)) => Some((id, dedup(coupons))),
                    _ => None,
                }
            })
            .unwrap_or_default();
        for (k, (id, _)) in items.iter().enumerate() {
            if items[..k].iter().any(|(other, _)| other == id) {
                b.problems.push(FieldError::new(
                    "value_error",
                    vec!["body".into(), "items".into(), k.into(), "payment_link_item_id".into()],
                    "Value error, the item is listed twice",
                ));
            }
        }
        b.finish()?;
        Ok(CouponsChange { coupons, items })
    }
}

pub fn parse_payment_link_list(params: &QueryParams) -> Result<PaymentLinkListRequest> {
    let mut q = Query::new(params);
    let list = q.list(PaymentLinkSort::CreatedAt, PaymentLinkSort::parse, &PaymentLinkSort::expected());
    let filter = PaymentLinkFilter {
        statuses: q.enums("statuses", PaymentLinkStatus::parse, &PaymentLinkStatus::expected()),
        from_date: q.datetime("from_date"),
        to_date: q.datetime("to_date"),
        from_price: q.decimal("from_price"),
        to_price: q.decimal("to_price"),
        product_ids: q.uuids("product_ids"),
        consumer_id: q.uuid("organization_consumer_id"),
    };
    q.finish()?;
    Ok(PaymentLinkListRequest { query: list, filter })
}

/// The documents of the requests' fields (for `/openapi.json` and the MCP tools); the readers
/// above are the truth, and the server's openapi tests check that they read exactly these.
pub mod request {
    use super::super::view::PaymentMethodDto;
    use super::{ContactInformationType, PaymentLinkSort, PaymentLinkStatus};
    use crate::money::Currency;
    use crate::schema::{Amount, DateTime, Id, Integer, JsonObject, Url};
    use schemars::JsonSchema;

    /// CreatePaymentLinkDto: a new payment link, ACTIVE and priced now.
    #[derive(JsonSchema)]
    pub struct CreatePaymentLinkDto {
        /// The link's name, shown to the payer.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub name: String,
        /// A description shown to the payer.
        #[schemars(length(max = 2000))]
        pub description: Option<String>,
        /// The currency of the link (default: the organization's); every product needs an
        /// active price in it.
        pub currency: Option<Currency>,
        /// What the link sells (1 to 100 items): one-time products, or recurring products of
        /// one interval (the payment then makes a subscription).
        pub items: Vec<CreatePaymentLinkItemDto>,
        /// Coupon ids applied to the items' total, in order.
        pub coupons: Option<Vec<String>>,
        /// How many payments the link accepts (at least 1); left out: unlimited.
        pub max_number_of_payments: Option<Integer>,
        /// After this time the link takes no payment; must be in the future.
        pub valid_until: Option<DateTime>,
        /// The message the payer sees after paying.
        pub confirmation_message: Option<String>,
        /// The payment methods the checkout offers (default: the organization's); installments
        /// are never offered for recurring products.
        pub payment_methods: Option<PaymentMethodDto>,
        /// Days of free trial (0 to 3650) before the first charge of a recurring link.
        pub trial_period_days: Option<Integer>,
        /// Free fields for the checkout, kept as given.
        pub custom_fields: Option<JsonObject>,
        /// An absolute http(s) URL the payer is sent to after paying (with the outcome in the
        /// query); left out: the hosted result page.
        pub success_redirect_url: Option<Url>,
        /// An absolute http(s) URL the payer is sent to after a failed payment.
        pub failure_redirect_url: Option<Url>,
        /// The consumer who pays (the checkout then asks for no details); left out: the checkout
        /// collects the payer's name and contact.
        pub organization_consumer_id: Option<Id>,
        /// Free key/value pairs kept with the link (sent as `metadata` in its webhook events).
        pub custom_metadata: Option<JsonObject>,
        /// What the checkout asks besides the name: PHONE (default) or EMAIL.
        pub contact_information_type: Option<ContactInformationType>,
    }

    /// CreatePaymentLinkItemDto: one line of a new link.
    #[derive(JsonSchema)]
    pub struct CreatePaymentLinkItemDto {
        /// The product sold (one of the branch's).
        pub product_id: Id,
        /// How many units (1 to a million, default 1).
        pub quantity: Option<Integer>,
        /// Coupon ids applied to this line, in order.
        pub coupons: Option<Vec<String>>,
        /// Whether the payer may choose the quantity (default false).
        pub allow_custom_quantity: Option<bool>,
        /// The least quantity the payer may choose (default 1).
        pub min_quantity: Option<Integer>,
        /// The most quantity the payer may choose (default a million).
        pub max_quantity: Option<Integer>,
    }

    /// UpdatePaymentLinkCouponItemDto: one item's new coupons.
    #[derive(JsonSchema)]
    pub struct UpdatePaymentLinkCouponItemDto {
        /// The item (its `id` in the link's `items`).
        pub payment_link_item_id: Id,
        /// The item's coupon ids, in order (replacing its coupons; left out: none).
        pub coupons: Option<Vec<String>>,
    }

    /// UpdatePaymentLinkCouponsDto: the link's coupons and its items' (the link is priced again
    /// with the products' current prices).
    #[derive(JsonSchema)]
    pub struct UpdatePaymentLinkCouponsDto {
        /// The link-level coupon ids, in order (replacing them; left out: kept).
        pub coupons: Option<Vec<String>>,
        /// Items whose coupons change (others keep theirs).
        pub items: Option<Vec<UpdatePaymentLinkCouponItemDto>>,
    }

    /// UpdatePaymentLinkStatusDto: deactivate or reactivate a link.
    #[derive(JsonSchema)]
    pub struct UpdatePaymentLinkStatusDto {
        /// INACTIVE (deactivate) or ACTIVE (reactivate); COMPLETED is refused.
        pub status: PaymentLinkStatus,
        /// The message the payer sees on the deactivated link (cleared on reactivation).
        pub deactivate_message: Option<String>,
    }

    crate::list_query! {
        /// Payment links.
        PaymentLinkListQuery(PaymentLinkSort) {
            /// Only links in these statuses (repeated).
            statuses: Vec<PaymentLinkStatus>,
            /// Created at or after this time.
            from_date: DateTime,
            /// Created at or before this time.
            to_date: DateTime,
            /// `amount` at least this.
            from_price: Amount,
            /// `amount` at most this.
            to_price: Amount,
            /// Links with an item of one of these products (repeated).
            product_ids: Vec<Id>,
            /// Links paid by this consumer.
            organization_consumer_id: Id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn locs(r: Result<PaymentLinkCreate>) -> Vec<Value> {
        match r {
            Err(Error::Validation(d)) => d.iter().map(|e| serde_json::to_value(&e.loc).unwrap()).collect(),
            other => panic!("expected a 422, got {other:?}"),
        }
    }

    #[test]
    fn create_defaults_and_refusals() {
        let p = ProductId::new();
        let ok = PaymentLinkCreate::parse(&json!({"name": " Gym ", "items": [{"product_id": p}]}), Currency::SAR).unwrap();
        assert_eq!((ok.name.as_str(), ok.items[0].quantity, ok.currency), ("Gym", 1, Currency::SAR));
        assert_eq!(ok.contact_information_type, ContactInformationType::Phone);
        assert_eq!(ok.payment_methods, None);
        let bad = json!({
            "name": "x",
            "items": [{"product_id": p, "quantity": 5, "min_quantity": 1, "max_quantity": 3}],
            "max_number_of_payments": 0,
            "success_redirect_url": "/relative",
            "failure_redirect_url": "ftp://x.example",
            "custom_metadata": [1],
            "contact_information_type": "FAX",
        });
        assert_eq!(
            locs(PaymentLinkCreate::parse(&bad, Currency::SAR)),
            vec![
                json!(["body", "items", 0, "quantity"]),
                json!(["body", "max_number_of_payments"]),
                json!(["body", "success_redirect_url"]),
                json!(["body", "failure_redirect_url"]),
                json!(["body", "custom_metadata"]),
                json!(["body", "contact_information_type"]),
            ]
        );
        assert_eq!(
            locs(PaymentLinkCreate::parse(&json!({"name": "x", "items": []}), Currency::SAR)),
            vec![json!(["body", "items"])]
        );
        let nested = json!({"name": "x", "items": [{"product_id": p}], "custom_metadata": {"a": {"b": [1, {"c": null}]}}});
        let got = PaymentLinkCreate::parse(&nested, Currency::SAR).unwrap();
        assert_eq!(Value::Object(got.custom_metadata), nested["custom_metadata"]);
    }

    #[test]
    fn status_change_takes_active_or_inactive() {
        assert!(StatusChange::parse(&json!({"status": "INACTIVE", "deactivate_message": "sold out"})).is_ok());
        assert!(StatusChange::parse(&json!({"status": "COMPLETED"})).is_err());
        assert!(StatusChange::parse(&json!({})).is_err());
    }
}
