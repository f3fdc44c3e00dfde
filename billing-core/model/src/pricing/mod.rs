//! Pricing: what a list of products, quantities and coupons costs in a currency, exactly. One
//! module for every place that prices: invoices now, payment links and subscription previews
//! next ("the preview is the issued invoice"), so that an amount shown is the amount billed.
//!
//! - [`price`] is pure: it checks that what was loaded can be priced (active products with an
//!   active price in the currency, active coupons in that currency) and computes the lines and
//!   totals ([`totals`]: coupon chains, the invoice-level discount spread, VAT per line).
//! - [`load`] reads the products and coupons of a request inside the operation's transaction.
//!
//! Refusals are 422s located at the request's `items[i].product_id`, `items[i].coupons[k]` and
//! `coupons[k]`, the shape every priced request shares.

pub mod totals;
pub mod view;

pub use crate::product::vat::VatBreakdown;
pub use totals::{CouponLine, InvoiceTotals, ItemAmounts, ItemInput};
pub use view::{coupon_calculation, CouponApplied, CouponCalculation};

use crate::coupon::{Coupon, Discount};
use crate::error::{Error, FieldError, LocPart, Result};
use crate::ids::{CouponId, PriceId, ProductId};
use crate::money::{Currency, Money, MAX_AMOUNT};
use crate::product::{Product, ProductType, VatMode};
use rust_decimal::Decimal;

/// One requested line (InvoiceItemCreateDto and its kin): a product, a quantity and the
/// line's own coupons, applied in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemRequest {
    pub product_id: ProductId,
    pub quantity: u32,
    pub coupons: Vec<CouponId>,
}

/// The products and coupons of a request, as loaded: `products[i]` and `item_coupons[i]` for
/// `items[i]`, `coupons` for the request-level coupons, each list in request order.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub products: Vec<Product>,
    pub item_coupons: Vec<Vec<Coupon>>,
    pub coupons: Vec<Coupon>,
}

/// One priced line.
#[derive(Debug, Clone, PartialEq)]
pub struct PricedItem {
    pub product_id: ProductId,
    pub price_id: PriceId,
    pub quantity: u32,
    pub unit_price: Money,
    pub vat_mode: VatMode,
    /// Whether the product is one-time (installments are for one-time products only).
    pub one_time: bool,
    pub coupon_ids: Vec<CouponId>,
    pub amounts: ItemAmounts,
}

/// A priced request: its lines and the totals over them.
#[derive(Debug, Clone, PartialEq)]
pub struct Priced {
    pub items: Vec<PricedItem>,
    pub totals: InvoiceTotals,
    /// Every coupon used (on lines or on the whole), each once: each counts one redemption.
    pub redeemed: Vec<CouponId>,
}

/// A 422 at `["body", "items", index, field]`.
pub fn item_problem(kind: &str, index: usize, field: &str, msg: impl Into<String>) -> Error {
    Error::invalid(FieldError::new(kind, vec!["body".into(), "items".into(), index.into(), field.into()], msg))
}

/// Whether line `index` can be priced in `currency`: an active product with an active price in
/// it.
pub fn check_product(p: &Product, currency: Currency, index: usize) -> Result<()> {
    if !p.is_active {
        return Err(item_problem(
            "value_error",
            index,
            "product_id",
            format!("Value error, product '{}' is not active", p.id),
        ));
    }
    if p.active_price(currency).is_none() {
        return Err(item_problem(
            "value_error",
            index,
            "product_id",
            format!("Value error, product '{}' has no active price in {currency}", p.id),
        ));
    }
    Ok(())
}

/// Whether a coupon (requested at `loc`) applies in `currency`: active, and a fixed amount only
/// in that currency.
pub fn check_coupon(c: &Coupon, currency: Currency, loc: Vec<LocPart>) -> Result<()> {
    if !c.is_active {
        return Err(Error::invalid(FieldError::new(
            "value_error",
            loc,
            format!("Value error, coupon '{}' is not active", c.id),
        )));
    }
    if let Discount::Fixed(m) = c.discount {
        if m.currency() != currency {
            return Err(Error::invalid(FieldError::new(
                "value_error",
                loc,
                format!("Value error, coupon '{}' is in {}, the invoice in {currency}", c.id, m.currency()),
            )));
        }
    }
    Ok(())
}

/// Where the `k`-th coupon of line `i` (or of the request, `i = None`) was asked for.
pub fn coupon_loc(item: Option<usize>, k: usize) -> Vec<LocPart> {
    match item {
        Some(i) => vec!["body".into(), "items".into(), i.into(), "coupons".into(), k.into()],
        None => vec!["body".into(), "coupons".into(), k.into()],
    }
}

/// Prices `items` with what [`load`] read for them. Pure: the same input gives the same lines
/// and totals wherever it runs.
pub fn price(items: &[ItemRequest], loaded: &Loaded, currency: Currency, vat_rate: Decimal) -> Result<Priced> {
    for (i, (p, cs)) in loaded.products.iter().zip(&loaded.item_coupons).enumerate() {
        check_product(p, currency, i)?;
        for (k, c) in cs.iter().enumerate() {
            check_coupon(c, currency, coupon_loc(Some(i), k))?;
        }
    }
    for (k, c) in loaded.coupons.iter().enumerate() {
        check_coupon(c, currency, coupon_loc(None, k))?;
    }
    let prices: Vec<_> = loaded.products.iter().map(|p| p.active_price(currency).expect("checked")).collect();
    let inputs: Vec<ItemInput> = items
        .iter()
        .zip(&prices)
        .zip(&loaded.item_coupons)
        .map(|((it, price), cs)| ItemInput {
            unit_price: price.amount,
            quantity: it.quantity,
            vat_mode: price.vat_mode,
            coupons: cs.iter().collect(),
        })
        .collect();
    let request_coupons: Vec<&Coupon> = loaded.coupons.iter().collect();
    // Quantities multiply prices: keep every amount within what money accepts anywhere
    // (checked before computing, and again after VAT is added).
    let gross: Decimal = inputs.iter().map(|i| i.unit_price.amount() * Decimal::from(i.quantity)).sum();
    let totals = (gross <= MAX_AMOUNT).then(|| InvoiceTotals::compute(currency, &inputs, &request_coupons, vat_rate));
    let Some(totals) = totals.filter(|t| t.total_amount.amount() <= MAX_AMOUNT) else {
        return Err(Error::invalid(FieldError::new(
            "less_than_equal",
            vec!["body".into(), "items".into()],
            format!("The invoice total should be less than or equal to {MAX_AMOUNT}"),
        )));
    };
    let lines = items
        .iter()
        .zip(&loaded.products)
        .zip(&prices)
        .zip(&totals.items)
        .map(|(((it, p), price), a)| PricedItem {
            product_id: p.id,
            price_id: price.id,
            quantity: it.quantity,
            unit_price: price.amount,
            vat_mode: price.vat_mode,
            one_time: p.product_type == ProductType::OneOff,
            coupon_ids: it.coupons.clone(),
            amounts: a.clone(),
        })
        .collect();
    let mut redeemed: Vec<CouponId> = loaded.item_coupons.iter().flatten().chain(&loaded.coupons).map(|c| c.id).collect();
    redeemed.sort();
    redeemed.dedup();
    Ok(Priced {
        items: lines,
        totals,
        redeemed,
    })
}
