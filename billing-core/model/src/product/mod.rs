//! Products with prices per currency. Each price is VAT-inclusive, VAT-exclusive or exempt; its
//! `price_excluding_vat` and `vat_amount` are computed from the organization's VAT rate
//! ([`crate::pricing::VatBreakdown`]).
//!
//! - [`ops`]: create, get, list, update, delete, and the price operations.
//! - [`store`]: the [`ProductTx`] slice of the store contract.
//! - [`wire`]: request parsing and the requests' documentation.
//! - [`view`]: the ProductDto and ProductPriceInlineDto views.

pub mod store;
pub mod vat;
pub mod view;
pub mod wire;

pub use store::ProductTx;
pub use vat::VatBreakdown;
pub use view::{PriceView, ProductView};
pub use wire::{parse_price_body, parse_price_update, parse_product_list, MAX_NAME};

use crate::clock::Timestamp;
use crate::ids::{BranchId, OrgId, PriceId, ProductId};
use crate::money::{Currency, Money};
use crate::wire_enum;
use rust_decimal::Decimal;
use serde_json::{Map, Value};

wire_enum!(ProductType { Recurring = "RECURRING", OneOff = "ONE_OFF" });
wire_enum!(RecurringInterval { Week = "WEEK", Month = "MONTH", Quarter = "QUARTER", Semester = "SEMESTER", Year = "YEAR" });
wire_enum!(ProductSort { Price = "price", Name = "name", CreatedAt = "created_at" });

wire_enum!(
    /// How VAT applies to a price (its stored name is the wire text).
    VatMode { Inclusive = "INCLUSIVE", Exclusive = "EXCLUSIVE", Exempt = "EXEMPT" }
);

impl VatMode {
    /// From the two public flags; both set is refused by the caller.
    pub fn from_flags(inclusive: bool, exempt: bool) -> Self {
        if exempt {
            VatMode::Exempt
        } else if inclusive {
            VatMode::Inclusive
        } else {
            VatMode::Exclusive
        }
    }
    pub fn is_inclusive(self) -> bool {
        self == VatMode::Inclusive
    }
    pub fn is_exempt(self) -> bool {
        self == VatMode::Exempt
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProductPrice {
    pub id: PriceId,
    pub product_id: ProductId,
    pub amount: Money,
    pub vat_mode: VatMode,
    pub is_active: bool,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

impl ProductPrice {
    pub fn currency(&self) -> Currency {
        self.amount.currency()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Product {
    pub id: ProductId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub name: String,
    pub description: Option<String>,
    pub product_type: ProductType,
    pub recurring_interval: Option<RecurringInterval>,
    pub recurring_interval_count: u32,
    pub is_active: bool,
    pub external_metadata: Map<String, Value>,
    /// Every price ever set; inactive ones stay for the invoices that used them.
    pub prices: Vec<ProductPrice>,
    /// Set once a finalised invoice uses the product; from then on it cannot change.
    pub used_in_finalized_invoice: bool,
    pub is_deleted: bool,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

impl Product {
    pub fn active_price(&self, currency: Currency) -> Option<&ProductPrice> {
        self.prices.iter().find(|p| p.is_active && p.currency() == currency)
    }

    /// The price shown in ProductDto's top-level fields: the default currency's, else the
    /// first active one.
    pub fn primary_price(&self, default: Currency) -> Option<&ProductPrice> {
        self.active_price(default).or_else(|| self.prices.iter().find(|p| p.is_active))
    }
}

/// A price as requested (ProductPriceInlineCreate / ProductPriceCreate).
#[derive(Debug, Clone, PartialEq)]
pub struct PriceInput {
    pub amount: Money,
    pub vat_mode: VatMode,
}

/// ProductCreate / ProductUpdate, parsed. On update `None` leaves a field as is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProductFields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub product_type: Option<ProductType>,
    pub recurring_interval: Option<RecurringInterval>,
    pub recurring_interval_count: Option<u32>,
    pub is_active: Option<bool>,
    pub external_metadata: Option<Map<String, Value>>,
    /// `price`: the price in the organization's default currency.
    pub price: Option<PriceInput>,
    /// `prices`: the complete set of prices per currency.
    pub prices: Option<Vec<PriceInput>>,
}

impl ProductFields {
    /// The complete price set a create starts with: `prices`, plus `price` in the default
    /// currency unless `prices` names that currency too.
    pub fn initial_prices(&self) -> Vec<PriceInput> {
        let mut all = self.prices.clone().unwrap_or_default();
        if let Some(p) = &self.price {
            if !all.iter().any(|q| q.amount.currency() == p.amount.currency()) {
                all.insert(0, p.clone());
            }
        }
        all
    }
}

/// ProductPriceUpdate: every field optional; applied to an existing price.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceUpdate {
    pub amount: Option<Decimal>,
    pub inclusive: Option<bool>,
    pub exempt: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProductFilter {
    pub active: Option<bool>,
    pub product_type: Option<ProductType>,
    /// Only products with an active price in this currency (an upper-case 3-letter code).
    pub currency: Option<String>,
    pub metadata: Vec<(String, String)>,
}
