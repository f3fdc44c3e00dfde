//! What the API answers of a product: ProductDto (with its active prices) and
//! ProductPriceInlineDto (a price, also the answer of the price endpoints), borrowed from the
//! product. The VAT split of each price is computed with the organization's VAT rate.

use super::{Product, ProductPrice, ProductType, RecurringInterval, VatBreakdown};
use crate::clock::Timestamp;
use crate::ids::{PriceId, ProductId};
use crate::money::{Currency, Money};
use crate::org::OrgSettings;
use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// ProductDto: a product (or service) the merchant sells, with its prices per currency.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "ProductDto")]
pub struct ProductView<'a> {
    /// When the product was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the product (or one of its prices) was last changed; `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
    /// The product's id.
    pub id: ProductId,
    /// The product's name, as invoices and payment pages show it.
    pub name: &'a str,
    /// A longer description of the product.
    pub description: Option<&'a str>,
    /// `ONE_OFF` (sold once) or `RECURRING` (billed every `recurring_interval`, for
    /// subscriptions).
    #[serde(rename = "type")]
    pub product_type: ProductType,
    /// How often a recurring product is billed; `null` for a one-off product.
    pub recurring_interval: Option<RecurringInterval>,
    /// How many `recurring_interval`s one billing period lasts (1 to 365).
    #[schemars(with = "crate::schema::Integer")]
    pub recurring_interval_count: u32,
    /// The price in the default currency (else the first active price), as a decimal string
    /// with the currency's minor digits; `null` without an active price.
    #[schemars(with = "Option<String>")]
    pub price: Option<Money>,
    /// The currency of `price` (the organization's default currency when the product has no
    /// active price).
    pub currency: Currency,
    /// `price` in the currency's smallest unit (halalas, fils, cents); `null` without a price.
    #[schemars(with = "Option<crate::schema::Integer>")]
    pub amount_in_smallest_unit: Option<i64>,
    /// Whether `price` is exempt from VAT (false without a price).
    pub is_price_exempt_from_vat: bool,
    /// Whether `price` includes VAT (true without a price).
    pub is_price_inclusive_of_vat: bool,
    /// `price` without VAT, at the organization's VAT rate; `null` without a price.
    #[schemars(with = "Option<String>")]
    pub price_excluding_vat: Option<Money>,
    /// The VAT in `price`, or added to it when it excludes VAT; `null` without a price.
    #[schemars(with = "Option<String>")]
    pub vat_amount: Option<Money>,
    /// The active prices, one per currency.
    pub prices: Vec<PriceView>,
    /// Whether the product can be put on new invoices, links and subscriptions.
    pub is_active: bool,
    /// Whether the product is `ONE_OFF` (the older spelling of `type`).
    pub is_one_time: bool,
    /// Whether a finalized invoice uses the product: from then on it cannot be changed or
    /// deleted.
    pub is_used_in_finalized_invoice: bool,
    /// Free key/value pairs the merchant keeps with the product (filterable in the list as
    /// `external_metadata.<key>=<value>`).
    pub external_metadata: &'a Map<String, Value>,
}

/// ProductPriceInlineDto: a product's price in one currency.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "ProductPriceInlineDto")]
pub struct PriceView {
    /// The price's id.
    pub id: PriceId,
    /// The price's currency.
    pub currency: Currency,
    /// The price, as a decimal string with the currency's minor digits (`"115.00"`).
    #[schemars(with = "String")]
    pub amount: Money,
    /// `amount` in the currency's smallest unit (halalas, fils, cents).
    #[schemars(with = "crate::schema::Integer")]
    pub amount_in_smallest_unit: i64,
    /// Whether the price is active (a retired price is kept for the invoices that used it).
    pub is_active: bool,
    /// Whether `amount` includes VAT.
    pub is_price_inclusive_of_vat: bool,
    /// Whether the price is exempt from VAT.
    pub is_price_exempt_from_vat: bool,
    /// `amount` without VAT, at the organization's VAT rate.
    #[schemars(with = "String")]
    pub price_excluding_vat: Money,
    /// The VAT in `amount`, or added to it when it excludes VAT (`"0.00"` when exempt).
    #[schemars(with = "String")]
    pub vat_amount: Money,
    /// When the price was set.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the price was last changed or retired; `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
}

impl ProductPrice {
    /// ProductPriceInlineDto, with the VAT split at `vat_rate`.
    pub fn view(&self, vat_rate: Decimal) -> PriceView {
        let vat = VatBreakdown::of(self.amount, self.vat_mode, vat_rate);
        PriceView {
            id: self.id,
            currency: self.currency(),
            amount: self.amount,
            amount_in_smallest_unit: self.amount.minor_units(),
            is_active: self.is_active,
            is_price_inclusive_of_vat: self.vat_mode.is_inclusive(),
            is_price_exempt_from_vat: self.vat_mode.is_exempt(),
            price_excluding_vat: vat.excluding_vat,
            vat_amount: vat.vat,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

impl Product {
    /// ProductDto, borrowed from the product; prices and VAT as the organization's settings
    /// say (default currency, VAT rate).
    pub fn view(&self, settings: &OrgSettings) -> ProductView<'_> {
        let rate = settings.vat_rate;
        let primary = self.primary_price(settings.default_currency);
        let vat = primary.map(|p| VatBreakdown::of(p.amount, p.vat_mode, rate));
        ProductView {
            created_at: self.created_at,
            updated_at: self.updated_at,
            id: self.id,
            name: &self.name,
            description: self.description.as_deref(),
            product_type: self.product_type,
            recurring_interval: self.recurring_interval,
            recurring_interval_count: self.recurring_interval_count,
            price: primary.map(|p| p.amount),
            currency: primary.map(|p| p.currency()).unwrap_or(settings.default_currency),
            amount_in_smallest_unit: primary.map(|p| p.amount.minor_units()),
            is_price_exempt_from_vat: primary.map(|p| p.vat_mode.is_exempt()).unwrap_or(false),
            is_price_inclusive_of_vat: primary.map(|p| p.vat_mode.is_inclusive()).unwrap_or(true),
            price_excluding_vat: vat.map(|v| v.excluding_vat),
            vat_amount: vat.map(|v| v.vat),
            prices: self.prices.iter().filter(|p| p.is_active).map(|p| p.view(rate)).collect(),
            is_active: self.is_active,
            is_one_time: self.product_type == ProductType::OneOff,
            is_used_in_finalized_invoice: self.used_in_finalized_invoice,
            external_metadata: &self.external_metadata,
        }
    }

    /// ProductDto as a JSON value (for the views still built as values, which embed it).
    pub fn to_json(&self, settings: &OrgSettings) -> Value {
        serde_json::to_value(self.view(settings)).expect("serializable")
    }
}
