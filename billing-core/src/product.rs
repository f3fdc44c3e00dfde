//! Products with prices per currency. Each price is VAT-inclusive, VAT-exclusive or exempt; its
//! `price_excluding_vat` and `vat_amount` are computed from the organization's VAT rate.

use crate::auth::Scope;
use crate::clock::{format_rfc3339, Timestamp};
use crate::engine::Billing;
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::{BranchId, OrgId, PriceId, ProductId};
use crate::list::{ListQuery, Page, Query, QueryParams};
use crate::money::{Currency, Money};
use crate::store::Store;
use crate::wire::Body;
use crate::wire_enum;
use rust_decimal::Decimal;
use serde_json::{json, Map, Value};

wire_enum!(ProductType { Recurring = "RECURRING", OneOff = "ONE_OFF" });
wire_enum!(RecurringInterval { Week = "WEEK", Month = "MONTH", Quarter = "QUARTER", Semester = "SEMESTER", Year = "YEAR" });
wire_enum!(ProductSort { Price = "price", Name = "name", CreatedAt = "created_at" });

/// How VAT applies to a price.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VatMode {
    Inclusive,
    Exclusive,
    Exempt,
}

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

/// The VAT split of an amount: `excluding_vat + vat == gross`, each in minor units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VatBreakdown {
    pub excluding_vat: Money,
    pub vat: Money,
    /// What the payer pays: the amount itself when inclusive or exempt, amount plus VAT when
    /// exclusive.
    pub gross: Money,
}

impl VatBreakdown {
    pub fn of(amount: Money, mode: VatMode, rate: Decimal) -> Self {
        let c = amount.currency();
        match mode {
            VatMode::Exempt => VatBreakdown {
                excluding_vat: amount,
                vat: Money::zero(c),
                gross: amount,
            },
            VatMode::Inclusive => {
                let excl = Money::new(amount.amount() / (Decimal::ONE + rate), c);
                VatBreakdown {
                    excluding_vat: excl,
                    vat: Money::new(amount.amount() - excl.amount(), c),
                    gross: amount,
                }
            }
            VatMode::Exclusive => {
                let vat = Money::new(amount.amount() * rate, c);
                VatBreakdown {
                    excluding_vat: amount,
                    vat,
                    gross: Money::new(amount.amount() + vat.amount(), c),
                }
            }
        }
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

    /// ProductPriceDto (and the inline form).
    pub fn to_json(&self, vat_rate: Decimal) -> Value {
        let vat = VatBreakdown::of(self.amount, self.vat_mode, vat_rate);
        json!({
            "id": self.id,
            "currency": self.currency(),
            "amount": self.amount,
            "amount_in_smallest_unit": self.amount.minor_units(),
            "is_active": self.is_active,
            "is_price_inclusive_of_vat": self.vat_mode.is_inclusive(),
            "is_price_exempt_from_vat": self.vat_mode.is_exempt(),
            "price_excluding_vat": vat.excluding_vat,
            "vat_amount": vat.vat,
            "created_at": format_rfc3339(&self.created_at),
            "updated_at": self.updated_at.as_ref().map(format_rfc3339),
        })
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

    /// ProductDto.
    pub fn to_json(&self, settings: &crate::org::OrgSettings) -> Value {
        let rate = settings.vat_rate;
        let primary = self.primary_price(settings.default_currency);
        let vat = primary.map(|p| VatBreakdown::of(p.amount, p.vat_mode, rate));
        json!({
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "type": self.product_type,
            "recurring_interval": self.recurring_interval,
            "recurring_interval_count": self.recurring_interval_count,
            "price": primary.map(|p| p.amount),
            "currency": primary.map(|p| p.currency()).unwrap_or(settings.default_currency),
            "amount_in_smallest_unit": primary.map(|p| p.amount.minor_units()),
            "is_price_exempt_from_vat": primary.map(|p| p.vat_mode.is_exempt()).unwrap_or(false),
            "is_price_inclusive_of_vat": primary.map(|p| p.vat_mode.is_inclusive()).unwrap_or(true),
            "price_excluding_vat": vat.map(|v| v.excluding_vat),
            "vat_amount": vat.map(|v| v.vat),
            "prices": self.prices.iter().filter(|p| p.is_active).map(|p| p.to_json(rate)).collect::<Vec<_>>(),
            "is_active": self.is_active,
            "is_one_time": self.product_type == ProductType::OneOff,
            "is_used_in_finalized_invoice": self.used_in_finalized_invoice,
            "external_metadata": self.external_metadata,
            "created_at": format_rfc3339(&self.created_at),
            "updated_at": self.updated_at.as_ref().map(format_rfc3339),
        })
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
    fn initial_prices(&self) -> Vec<PriceInput> {
        let mut all = self.prices.clone().unwrap_or_default();
        if let Some(p) = &self.price {
            if !all.iter().any(|q| q.amount.currency() == p.amount.currency()) {
                all.insert(0, p.clone());
            }
        }
        all
    }
}

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

/// ProductPriceUpdate: every field optional; applied to an existing price.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceUpdate {
    pub amount: Option<Decimal>,
    pub inclusive: Option<bool>,
    pub exempt: Option<bool>,
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
        let description = b.opt_str("description");
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

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProductFilter {
    pub active: Option<bool>,
    pub product_type: Option<ProductType>,
    /// Only products with an active price in this currency (an upper-case 3-letter code).
    pub currency: Option<String>,
    pub metadata: Vec<(String, String)>,
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

fn check_not_frozen(p: &Product) -> Result<()> {
    if p.used_in_finalized_invoice {
        return Err(Error::rule(
            Code::PRODUCT_USED_IN_FINALIZED_INVOICE,
            format!("Product '{}' is used by a finalized invoice", p.id),
        ));
    }
    Ok(())
}

/// Makes `inputs` the active prices: a currency already priced is updated in place, a new one is
/// added, and a currency no longer listed is deactivated (kept for the invoices that used it).
fn apply_prices(p: &mut Product, inputs: Vec<PriceInput>, now: Timestamp) {
    for price in p.prices.iter_mut() {
        if price.is_active && !inputs.iter().any(|i| i.amount.currency() == price.currency()) {
            price.is_active = false;
            price.updated_at = Some(now);
        }
    }
    for i in inputs {
        match p.prices.iter_mut().find(|x| x.is_active && x.currency() == i.amount.currency()) {
            Some(existing) => {
                if existing.amount != i.amount || existing.vat_mode != i.vat_mode {
                    existing.amount = i.amount;
                    existing.vat_mode = i.vat_mode;
                    existing.updated_at = Some(now);
                }
            }
            None => p.prices.push(ProductPrice {
                id: PriceId::new(),
                product_id: p.id,
                amount: i.amount,
                vat_mode: i.vat_mode,
                is_active: true,
                created_at: now,
                updated_at: None,
            }),
        }
    }
}

impl<S: Store> Billing<S> {
    pub fn create_product(&self, scope: &Scope, f: ProductFields) -> Result<Product> {
        let now = self.now(scope);
        let initial = f.initial_prices();
        let product_type = f
            .product_type
            .ok_or_else(|| Error::invalid(FieldError::body("missing", "type", "Field required")))?;
        let mut p = Product {
            id: ProductId::new(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            name: f.name.ok_or_else(|| Error::invalid(FieldError::body("missing", "name", "Field required")))?,
            description: f.description,
            product_type,
            recurring_interval: f.recurring_interval,
            recurring_interval_count: f.recurring_interval_count.unwrap_or(1),
            is_active: f.is_active.unwrap_or(true),
            external_metadata: f.external_metadata.unwrap_or_default(),
            prices: vec![],
            used_in_finalized_invoice: false,
            is_deleted: false,
            created_at: now,
            updated_at: None,
        };
        apply_prices(&mut p, initial, now);
        self.store.write(|tx| {
            tx.insert_product(&p, scope.org.settings.default_currency)?;
            Ok(p.clone())
        })
    }

    pub fn get_product(&self, scope: &Scope, id: ProductId) -> Result<Product> {
        self.store
            .read(|tx| Ok(tx.product(scope.branch_id(), id)?))?
            .ok_or_else(|| Error::not_found("Product", id))
    }

    pub fn list_products(&self, scope: &Scope, q: &ListQuery<ProductSort>, f: &ProductFilter) -> Result<Page<Product>> {
        self.store.read(|tx| Ok(tx.list_products(scope.branch_id(), q, f)?))
    }

    /// Applies `change` to a live product of the request's branch, unless a finalised invoice
    /// froze it.
    fn change_product(&self, scope: &Scope, id: ProductId, change: impl Fn(&mut Product, Timestamp) -> Result<()>) -> Result<Product> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut p = tx.product(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Product", id))?;
            check_not_frozen(&p)?;
            change(&mut p, now)?;
            p.updated_at = Some(now);
            tx.update_product(&p, scope.org.settings.default_currency)?;
            Ok(p)
        })
    }

    pub fn update_product(&self, scope: &Scope, id: ProductId, f: ProductFields) -> Result<Product> {
        self.change_product(scope, id, |p, now| {
            let f = f.clone();
            let full_set = f.prices.is_some().then(|| f.initial_prices());
            if let Some(n) = f.name {
                p.name = n;
            }
            if f.description.is_some() {
                p.description = f.description;
            }
            if let Some(t) = f.product_type {
                p.product_type = t;
                if t == ProductType::OneOff {
                    p.recurring_interval = None;
                }
            }
            if f.recurring_interval.is_some() {
                p.recurring_interval = f.recurring_interval;
            }
            if let Some(c) = f.recurring_interval_count {
                p.recurring_interval_count = c;
            }
            if p.product_type == ProductType::Recurring && p.recurring_interval.is_none() {
                return Err(Error::invalid(FieldError::body(
                    "missing",
                    "recurring_interval",
                    "Field required for RECURRING products",
                )));
            }
            if let Some(a) = f.is_active {
                p.is_active = a;
            }
            if let Some(m) = f.external_metadata {
                p.external_metadata = m;
            }
            // `prices` replaces the whole set; `price` alone changes only the default currency's.
            match (full_set, &f.price) {
                (Some(set), _) => apply_prices(p, set, now),
                (None, Some(one)) => {
                    let mut set: Vec<PriceInput> = p
                        .prices
                        .iter()
                        .filter(|x| x.is_active && x.currency() != one.amount.currency())
                        .map(|x| PriceInput {
                            amount: x.amount,
                            vat_mode: x.vat_mode,
                        })
                        .collect();
                    set.insert(0, one.clone());
                    apply_prices(p, set, now);
                }
                (None, None) => {}
            }
            Ok(())
        })
    }

    pub fn delete_product(&self, scope: &Scope, id: ProductId) -> Result<()> {
        self.change_product(scope, id, |p, _| {
            p.is_deleted = true;
            Ok(())
        })
        .map(|_| ())
    }

    /// Adds a price in a currency the product has no active price in.
    pub fn add_product_price(&self, scope: &Scope, id: ProductId, input: PriceInput) -> Result<(Product, PriceId)> {
        let mut new_id = None;
        let p = self.change_product(scope, id, |p, now| {
            if p.active_price(input.amount.currency()).is_some() {
                return Err(Error::rule(
                    Code::RESOURCE_ALREADY_EXISTS,
                    format!("Product already has an active price in {}", input.amount.currency()),
                ));
            }
            let price = ProductPrice {
                id: PriceId::new(),
                product_id: p.id,
                amount: input.amount,
                vat_mode: input.vat_mode,
                is_active: true,
                created_at: now,
                updated_at: None,
            };
            p.prices.push(price);
            Ok(())
        })?;
        if let Some(last) = p.prices.last() {
            new_id = Some(last.id);
        }
        Ok((p.clone(), new_id.expect("price added")))
    }

    pub fn update_product_price(&self, scope: &Scope, id: ProductId, price_id: PriceId, u: PriceUpdate) -> Result<Product> {
        self.change_product(scope, id, |p, now| {
            let price = p
                .prices
                .iter_mut()
                .find(|x| x.id == price_id && x.is_active)
                .ok_or_else(|| Error::not_found("Price", price_id))?;
            if let Some(a) = u.amount {
                let currency = price.currency();
                price.amount = Money::checked(a, currency).map_err(|e| {
                    let (kind, msg) = crate::wire::amount_problem(e, currency);
                    Error::invalid(FieldError::body(kind, "amount", msg))
                })?;
            }
            price.vat_mode = match (u.exempt, u.inclusive) {
                (Some(true), _) => VatMode::Exempt,
                (_, Some(true)) => VatMode::Inclusive,
                (_, Some(false)) => VatMode::Exclusive,
                (Some(false), None) if price.vat_mode.is_exempt() => VatMode::Inclusive,
                _ => price.vat_mode,
            };
            price.updated_at = Some(now);
            Ok(())
        })
    }

    pub fn delete_product_price(&self, scope: &Scope, id: ProductId, price_id: PriceId) -> Result<Product> {
        self.change_product(scope, id, |p, now| {
            let price = p
                .prices
                .iter_mut()
                .find(|x| x.id == price_id && x.is_active)
                .ok_or_else(|| Error::not_found("Price", price_id))?;
            price.is_active = false;
            price.updated_at = Some(now);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn vat_modes() {
        let rate = Decimal::new(15, 2);
        let m = Money::new(Decimal::new(115, 0), Currency::SAR);
        let inc = VatBreakdown::of(m, VatMode::Inclusive, rate);
        assert_eq!(
            (inc.excluding_vat.to_string(), inc.vat.to_string(), inc.gross.to_string()),
            ("100.00".into(), "15.00".into(), "115.00".into())
        );
        let exc = VatBreakdown::of(Money::new(Decimal::new(100, 0), Currency::SAR), VatMode::Exclusive, rate);
        assert_eq!((exc.vat.to_string(), exc.gross.to_string()), ("15.00".into(), "115.00".into()));
        let ex = VatBreakdown::of(m, VatMode::Exempt, rate);
        assert!(ex.vat.is_zero());
    }

    proptest! {
        #[test]
        fn vat_reconciles(minor in 1i64..100_000_000, rate_bp in 0i64..3000, mode in 0u8..3, c in 0usize..Currency::ALL.len()) {
            let cur = Currency::ALL[c];
            let m = Money::from_minor(minor, cur);
            let mode = [VatMode::Inclusive, VatMode::Exclusive, VatMode::Exempt][mode as usize];
            let v = VatBreakdown::of(m, mode, Decimal::new(rate_bp, 4));
            prop_assert_eq!(v.excluding_vat.amount() + v.vat.amount(), v.gross.amount());
            prop_assert!(!v.vat.is_negative());
            prop_assert_eq!(Money::new(v.vat.amount(), cur), v.vat);
        }
    }
}
