//! Product requests (ProductCreate, ProductUpdate, prices, list parameters): their readers, and
//! their documentation.

use super::{PriceInput, PriceUpdate, ProductFields, ProductFilter, ProductSort, ProductType, RecurringInterval, VatMode};
use crate::error::Result;
use crate::list::{ListQuery, Query, QueryParams};
use crate::money::Currency;
use crate::wire::Body;
use rust_decimal::Decimal;
use serde_json::Value;

fn vat_flags(b: &mut Body<'_>, inclusive_default: bool) -> Option<VatMode> {
    let inclusive = b.opt_bool("is_price_inclusive_of_vat");
    let exempt = b.opt_bool("is_price_exempt_from_vat");
    if inclusive == Some(true) && exempt == Some(true) {
        b.fail(
            "value_error",
            "is_price_exempt_from_vat",
            "Value error, a price cannot be both VAT-exempt and VAT-inclusive",
        );
        return None;
    }
    Some(VatMode::from_flags(inclusive.unwrap_or(inclusive_default), exempt.unwrap_or(false)))
}

/// Reads one price object at `loc`.
fn parse_price(v: &Value, loc: Vec<crate::error::LocPart>, problems: &mut crate::error::Problems) -> Option<PriceInput> {
    let mut b = Body::at(v, loc);
    let currency = b.opt_currency("currency");
    if currency.is_none() && b.raw("currency").is_none() {
        b.fail("missing", "currency", "Field required");
    }
    let amount = b.req_decimal("amount");
    let vat = vat_flags(&mut b, true);
    let money = match (currency, amount) {
        (Some(c), Some(a)) => {
            if a <= Decimal::ZERO {
                b.fail("greater_than", "amount", "Input should be greater than 0");
                None
            } else {
                b.money_in("amount", a, c)
            }
        }
        _ => None,
    };
    let ok = b.problems.is_empty();
    problems.0.extend(b.problems.0);
    match (ok, money, vat) {
        (true, Some(amount), Some(vat_mode)) => Some(PriceInput { amount, vat_mode }),
        _ => None,
    }
}

/// ProductPriceCreate / ProductPriceUpdate bodies for the price endpoints.
pub fn parse_price_body(v: &Value) -> Result<PriceInput> {
    let mut problems = crate::error::Problems::default();
    let p = parse_price(v, vec!["body".into()], &mut problems);
    problems.into_result()?;
    Ok(p.expect("no problems"))
}

pub fn parse_price_update(v: &Value) -> Result<PriceUpdate> {
    let mut b = Body::new(v);
    let u = PriceUpdate {
        amount: b.opt_decimal("amount"),
        inclusive: b.opt_bool("is_price_inclusive_of_vat"),
        exempt: b.opt_bool("is_price_exempt_from_vat"),
    };
    if let Some(a) = u.amount {
        if a <= Decimal::ZERO {
            b.fail("greater_than", "amount", "Input should be greater than 0");
        }
    }
    if u.inclusive == Some(true) && u.exempt == Some(true) {
        b.fail(
            "value_error",
            "is_price_exempt_from_vat",
            "Value error, a price cannot be both VAT-exempt and VAT-inclusive",
        );
    }
    b.finish()?;
    Ok(u)
}

pub const MAX_NAME: usize = 255;

impl ProductFields {
    pub fn parse(v: &Value, create: bool, default_currency: Currency) -> Result<Self> {
        let mut b = Body::new(v);
        let name = if create { b.req_text("name", MAX_NAME) } else { b.opt_text("name", MAX_NAME) };
        let description = b.opt_free_text("description", crate::wire::MAX_DESCRIPTION);
        let is_one_time = b.opt_bool("is_one_time");
        let mut product_type = b.opt_enum("type", ProductType::parse, &ProductType::expected());
        if product_type.is_none() && create && b.raw("type").is_none() {
            // `type` is required by the schema; `is_one_time` is the older spelling of it.
            match is_one_time {
                Some(true) => product_type = Some(ProductType::OneOff),
                Some(false) => product_type = Some(ProductType::Recurring),
                None => b.fail("missing", "type", "Field required"),
            }
        }
        let recurring_interval = b.opt_enum("recurring_interval", RecurringInterval::parse, &RecurringInterval::expected());
        let count = b.opt_int("recurring_interval_count");
        let recurring_interval_count = match count {
            Some(n) if !(1..=365).contains(&n) => {
                b.fail("greater_than_equal", "recurring_interval_count", "Input should be between 1 and 365");
                None
            }
            Some(n) => Some(n as u32),
            None => None,
        };
        if create && product_type == Some(ProductType::Recurring) && recurring_interval.is_none() {
            b.fail("missing", "recurring_interval", "Field required for RECURRING products");
        }
        if product_type == Some(ProductType::OneOff) && recurring_interval.is_some() {
            b.fail("value_error", "recurring_interval", "Value error, ONE_OFF products have no recurring interval");
        }
        let is_active = b.opt_bool("is_active");
        let external_metadata = b.opt_object("external_metadata");

        let top_vat = vat_flags(&mut b, true);
        let mut price = None;
        if let Some(amount) = b.opt_decimal("price") {
            if amount <= Decimal::ZERO {
                b.fail("greater_than", "price", "Input should be greater than 0");
            } else if let (Some(m), Some(vat_mode)) = (b.money_in("price", amount, default_currency), top_vat) {
                price = Some(PriceInput { amount: m, vat_mode });
            }
        }
        let mut prices = None;
        if let Some(list) = b.opt_list("prices", parse_price) {
            // `price` is the default currency's price: naming that currency in `prices` too is
            // a contradiction.
            let mut seen: Vec<Currency> = price.iter().map(|p: &PriceInput| p.amount.currency()).collect();
            for p in &list {
                if seen.contains(&p.amount.currency()) {
                    b.fail("value_error", "prices", format!("Value error, more than one price in {}", p.amount.currency()));
                }
                seen.push(p.amount.currency());
            }
            prices = Some(list);
        }
        b.finish()?;
        Ok(ProductFields {
            name,
            description,
            product_type,
            recurring_interval,
            recurring_interval_count,
            is_active,
            external_metadata,
            price,
            prices,
        })
    }
}

pub fn parse_product_list(params: &QueryParams) -> Result<(ListQuery<ProductSort>, ProductFilter)> {
    let mut q = Query::new(params);
    let list = q.list(ProductSort::CreatedAt, ProductSort::parse, &ProductSort::expected());
    let active = q.bool("active");
    let product_type = match params.get("type") {
        Some(t) => {
            let v = ProductType::parse(t.trim());
            if v.is_none() {
                q.fail("enum", "type", format!("Input should be {}", ProductType::expected()));
            }
            v
        }
        None => None,
    };
    let currency = match params.get("currency") {
        Some(c) if c.trim().chars().count() != 3 => {
            q.fail("string_length", "currency", "String should have exactly 3 characters");
            None
        }
        // A well-formed code this service does not bill in simply matches no product.
        Some(c) => Some(c.trim().to_ascii_uppercase()),
        None => None,
    };
    let filter = ProductFilter {
        active,
        product_type,
        currency,
        metadata: params.with_prefix("external_metadata.").map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    };
    q.finish()?;
    Ok((list, filter))
}

/// What the requests look like, for `/openapi.json` (the readers above are the truth; the
/// server's tests check that each reads exactly these fields).
pub mod request {
    use super::{ProductSort, ProductType, RecurringInterval};
    use crate::money::Currency;
    use crate::schema::{Amount, Integer, JsonObject};
    use schemars::JsonSchema;

    /// ProductCreate: a new product in the request's branch, with its prices.
    #[derive(JsonSchema)]
    pub struct ProductCreate {
        /// Whether the product can be sold (default true).
        pub is_active: Option<bool>,
        /// Free key/value pairs kept with the product (filterable in the list).
        pub external_metadata: Option<JsonObject>,
        /// The product's name.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub name: String,
        /// A longer description.
        #[schemars(length(max = 2000))]
        pub description: Option<String>,
        /// The price in the organization's default currency (greater than 0); its VAT flags are
        /// the top-level `is_price_*` ones.
        pub price: Option<Amount>,
        /// Prices in other currencies (or all of them), one per currency; naming the default
        /// currency here and in `price` too is refused.
        pub prices: Option<Vec<ProductPriceInlineCreate>>,
        /// The older spelling of `type` (true: ONE_OFF), read when `type` is left out.
        pub is_one_time: Option<bool>,
        /// `ONE_OFF` or `RECURRING`.
        pub r#type: ProductType,
        /// How often a recurring product is billed (required for RECURRING, refused for
        /// ONE_OFF).
        pub recurring_interval: Option<RecurringInterval>,
        /// How many intervals one billing period lasts (1 to 365, default 1).
        pub recurring_interval_count: Option<Integer>,
        /// Whether `price` is exempt from VAT (default false).
        pub is_price_exempt_from_vat: Option<bool>,
        /// Whether `price` includes VAT (default true); both flags true is refused.
        pub is_price_inclusive_of_vat: Option<bool>,
    }

    /// ProductPriceInlineCreate: a price in one currency.
    #[derive(JsonSchema)]
    pub struct ProductPriceInlineCreate {
        /// The price's currency.
        pub currency: Currency,
        /// The price (greater than 0, at most the currency's minor digits).
        pub amount: Amount,
        /// Whether `amount` includes VAT (default true).
        pub is_price_inclusive_of_vat: Option<bool>,
        /// Whether the price is exempt from VAT (default false); both flags true is refused.
        pub is_price_exempt_from_vat: Option<bool>,
    }

    /// ProductUpdate: the fields to change (a field left out is kept). Refused once a
    /// finalized invoice uses the product.
    #[derive(JsonSchema)]
    pub struct ProductUpdate {
        /// The older spelling of `type` (true: ONE_OFF).
        pub is_one_time: Option<bool>,
        /// Replaces the product's key/value pairs.
        pub external_metadata: Option<JsonObject>,
        /// The product's name.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub name: Option<String>,
        /// A longer description.
        #[schemars(length(max = 2000))]
        pub description: Option<String>,
        /// A new price in the default currency (the other currencies' prices are kept).
        pub price: Option<Amount>,
        /// The complete set of prices: a currency left out is retired.
        pub prices: Option<Vec<ProductPriceInlineCreate>>,
        /// Whether the product can be sold.
        pub is_active: Option<bool>,
        /// `ONE_OFF` or `RECURRING`.
        pub r#type: Option<ProductType>,
        /// How often a recurring product is billed.
        pub recurring_interval: Option<RecurringInterval>,
        /// How many intervals one billing period lasts (1 to 365).
        pub recurring_interval_count: Option<Integer>,
        /// Whether `price` is exempt from VAT.
        pub is_price_exempt_from_vat: Option<bool>,
        /// Whether `price` includes VAT.
        pub is_price_inclusive_of_vat: Option<bool>,
    }

    /// ProductPriceCreate: a price in a currency the product has no active price in.
    #[derive(JsonSchema)]
    pub struct ProductPriceCreate {
        /// The price's currency.
        pub currency: Currency,
        /// The price (greater than 0, at most the currency's minor digits).
        pub amount: Amount,
        /// Default true.
        pub is_price_inclusive_of_vat: Option<bool>,
        /// Default false; both flags set is a 422.
        pub is_price_exempt_from_vat: Option<bool>,
    }

    /// ProductPriceUpdate: the given fields of a price change (its currency cannot).
    #[derive(JsonSchema)]
    pub struct ProductPriceUpdate {
        /// The new amount (greater than 0).
        pub amount: Option<Amount>,
        /// Whether the amount includes VAT.
        pub is_price_inclusive_of_vat: Option<bool>,
        /// Whether the price is exempt from VAT; both flags true is refused.
        pub is_price_exempt_from_vat: Option<bool>,
    }

    crate::list_query! {
        /// Products. Also `external_metadata.<key>=<value>`.
        ProductListQuery(ProductSort) {
            /// true: active only; false: inactive only.
            active: bool,
            /// `ONE_OFF` or `RECURRING` products only.
            r#type: ProductType,
            /// Only products with an active price in this currency (3 letters).
            currency: String,
        }
    }
}
