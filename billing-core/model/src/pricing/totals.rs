//! Amounts, exact: item amounts from product prices, item-level coupons, then
//! invoice-level coupons in order, then VAT per item (inclusive, exclusive or exempt).
//!
//! - `original_amount`: the sum of `unit price × quantity` over items.
//! - `item_level_discounted_amount`: the same after item-level coupons.
//! - Invoice-level coupons apply in order to that sum; their total discount is spread over the
//!   items in proportion to their amounts (in minor units, remainder on the last item that can
//!   take it), so that VAT can be computed per item with the item's own VAT mode.
//! - `total_vat_amount`, `total_price_excluding_vat`: sums of the items' VAT splits;
//!   `total_amount` = the sum of the items' gross amounts (what the payer pays).
//!
//! No amount is ever below zero: a coupon takes off at most what is left.

use super::VatBreakdown;
use crate::coupon::{Coupon, Discount};
use crate::ids::CouponId;
use crate::money::{Currency, Money};
use crate::product::VatMode;
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// One coupon's effect in a chain (CouponMetadataDto).
#[derive(Debug, Clone, PartialEq)]
pub struct CouponLine {
    pub coupon_id: CouponId,
    pub name: String,
    pub is_percentage: bool,
    /// As the coupon shows it (`"10.00"`).
    pub discount_value: String,
    pub currency: Option<Currency>,
    pub order: u32,
    pub before: Money,
    pub discount: Money,
    pub after: Money,
}

impl CouponLine {
    /// The stored form: amounts as integer thousandths.
    pub fn to_stored(&self) -> Result<Value, crate::error::StoreError> {
        Ok(json!({
            "coupon_id": self.coupon_id,
            "name": self.name,
            "is_percentage": self.is_percentage,
            "discount_value": self.discount_value,
            "currency": self.currency.map(|c| c.code()),
            "order": self.order,
            "before": self.before.to_stored()?,
            "discount": self.discount.to_stored()?,
            "after": self.after.to_stored()?,
        }))
    }

    pub fn from_stored(v: &Value, currency: Currency) -> Option<Self> {
        let m = |k: &str| v.get(k).and_then(Value::as_i64).map(|x| Money::from_stored(x, currency));
        Some(CouponLine {
            coupon_id: v.get("coupon_id")?.as_str()?.parse().ok()?,
            name: v.get("name")?.as_str()?.to_string(),
            is_percentage: v.get("is_percentage")?.as_bool()?,
            discount_value: v.get("discount_value")?.as_str()?.to_string(),
            currency: v.get("currency").and_then(Value::as_str).and_then(|c| c.parse().ok()),
            order: v.get("order")?.as_u64()? as u32,
            before: m("before")?,
            discount: m("discount")?,
            after: m("after")?,
        })
    }
}

pub fn lines_to_stored(lines: &[CouponLine]) -> Result<Value, crate::error::StoreError> {
    Ok(Value::Array(lines.iter().map(CouponLine::to_stored).collect::<Result<_, _>>()?))
}

pub fn lines_from_stored(v: &Value, currency: Currency) -> Vec<CouponLine> {
    v.as_array()
        .map(|a| a.iter().filter_map(|x| CouponLine::from_stored(x, currency)).collect())
        .unwrap_or_default()
}

/// CouponCalculationMetadataDto as a JSON value (for the views still built with `json!`).
pub fn metadata_json(lines: &[CouponLine]) -> Value {
    serde_json::to_value(super::view::coupon_calculation(lines)).expect("serializable")
}

/// What a coupon takes off `amount`: never more than `amount`.
pub fn discount_of(d: &Discount, amount: Money) -> Money {
    let c = amount.currency();
    let raw = match d {
        Discount::Percentage(p) => Money::new(amount.amount() * *p / Decimal::ONE_HUNDRED, c),
        Discount::Fixed(m) => Money::new(m.amount(), c),
    };
    if raw.amount() > amount.amount() {
        amount
    } else if raw.is_negative() {
        Money::zero(c)
    } else {
        raw
    }
}

/// Applies coupons in order to `amount`; returns the amount after all of them and the lines.
pub fn apply_chain(amount: Money, coupons: &[&Coupon]) -> (Money, Vec<CouponLine>) {
    let c = amount.currency();
    let mut cur = amount;
    let mut lines = Vec::with_capacity(coupons.len());
    for (i, cp) in coupons.iter().enumerate() {
        let d = discount_of(&cp.discount, cur);
        let after = Money::new(cur.amount() - d.amount(), c);
        lines.push(CouponLine {
            coupon_id: cp.id,
            name: cp.name.clone(),
            is_percentage: cp.discount.is_percentage(),
            discount_value: cp.discount.display_value(),
            currency: cp.discount.currency(),
            order: i as u32 + 1,
            before: cur,
            discount: d,
            after,
        });
        cur = after;
    }
    (cur, lines)
}

/// One item's input to the computation.
#[derive(Debug, Clone)]
pub struct ItemInput<'a> {
    pub unit_price: Money,
    pub quantity: u32,
    pub vat_mode: VatMode,
    pub coupons: Vec<&'a Coupon>,
}

/// One item's computed amounts.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemAmounts {
    pub original_amount: Money,
    /// After item-level coupons.
    pub discounted_amount: Money,
    pub coupons: Vec<CouponLine>,
    /// Its share of the invoice-level discount.
    pub invoice_discount_share: Money,
    pub vat: VatBreakdown,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InvoiceTotals {
    pub items: Vec<ItemAmounts>,
    pub original_amount: Money,
    pub item_level_discounted_amount: Money,
    pub coupons: Vec<CouponLine>,
    pub total_vat_amount: Money,
    pub total_price_excluding_vat: Money,
    pub total_amount: Money,
}

impl InvoiceTotals {
    pub fn compute(currency: Currency, items: &[ItemInput<'_>], invoice_coupons: &[&Coupon], vat_rate: Decimal) -> Self {
        let zero = Money::zero(currency);
        let add = |a: Money, b: Money| Money::new(a.amount() + b.amount(), currency);
        let mut out_items = Vec::with_capacity(items.len());
        let mut original = zero;
        let mut item_level = zero;
        for it in items {
            let orig = Money::new(it.unit_price.amount() * Decimal::from(it.quantity), currency);
            let (after, lines) = apply_chain(orig, &it.coupons);
            original = add(original, orig);
            item_level = add(item_level, after);
            out_items.push(ItemAmounts {
                original_amount: orig,
                discounted_amount: after,
                coupons: lines,
                invoice_discount_share: zero,
                vat: VatBreakdown::of(after, it.vat_mode, vat_rate),
            });
        }
        let (after_all, lines) = apply_chain(item_level, invoice_coupons);
        let discount = Money::new(item_level.amount() - after_all.amount(), currency);
        let bases: Vec<Money> = out_items.iter().map(|i| i.discounted_amount).collect();
        let shares = allocate(discount, &bases);
        let mut vat_total = zero;
        let mut excl_total = zero;
        let mut gross_total = zero;
        for ((item, share), input) in out_items.iter_mut().zip(shares).zip(items) {
            item.invoice_discount_share = share;
            let net = Money::new(item.discounted_amount.amount() - share.amount(), currency);
            item.vat = VatBreakdown::of(net, input.vat_mode, vat_rate);
            vat_total = add(vat_total, item.vat.vat);
            excl_total = add(excl_total, item.vat.excluding_vat);
            gross_total = add(gross_total, item.vat.gross);
        }
        InvoiceTotals {
            items: out_items,
            original_amount: original,
            item_level_discounted_amount: item_level,
            coupons: lines,
            total_vat_amount: vat_total,
            total_price_excluding_vat: excl_total,
            total_amount: gross_total,
        }
    }
}

/// Spreads `total` (≤ the sum of `bases`) over `bases` in proportion, in minor units, each share
/// at most its base, the shares summing exactly to `total`.
pub fn allocate(total: Money, bases: &[Money]) -> Vec<Money> {
    let c = total.currency();
    let sum: i64 = bases.iter().map(Money::minor_units).sum();
    let t = total.minor_units().min(sum).max(0);
    if bases.is_empty() {
        return vec![];
    }
    if sum == 0 {
        return bases.iter().map(|_| Money::zero(c)).collect();
    }
    let mut shares: Vec<i64> = bases
        .iter()
        .map(|b| {
            let b = b.minor_units();
            // floor(t * b / sum) in i128 to stay exact.
            ((i128::from(t) * i128::from(b)) / i128::from(sum)) as i64
        })
        .collect();
    let mut left = t - shares.iter().sum::<i64>();
    // The remainder (fewer than bases.len() minor units) goes from the last item backwards.
    for (i, b) in bases.iter().enumerate().rev() {
        if left == 0 {
            break;
        }
        let room = b.minor_units() - shares[i];
        let take = room.min(left);
        shares[i] += take;
        left -= take;
    }
    shares.into_iter().map(|m| Money::from_minor(m, c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{BranchId, OrgId};
    use proptest::prelude::*;

    fn coupon(d: Discount) -> Coupon {
        Coupon {
            id: CouponId::new(),
            org_id: OrgId::new(),
            branch_id: BranchId::new(),
            name: "c".into(),
            discount: d,
            is_active: true,
            used_in_finalized_invoice: false,
            redemptions: 0,
            is_deleted: false,
            created_at: crate::clock::from_micros(0),
            updated_at: None,
        }
    }

    fn sar(s: &str) -> Money {
        Money::new(s.parse().unwrap(), Currency::SAR)
    }

    #[test]
    fn items_then_invoice_coupons_then_vat() {
        let ten = coupon(Discount::Percentage(Decimal::new(10, 0)));
        let five = coupon(Discount::Fixed(sar("5")));
        let items = vec![
            ItemInput {
                unit_price: sar("115"),
                quantity: 2,
                vat_mode: VatMode::Inclusive,
                coupons: vec![&ten],
            },
            ItemInput {
                unit_price: sar("100"),
                quantity: 1,
                vat_mode: VatMode::Exclusive,
                coupons: vec![],
            },
        ];
        let t = InvoiceTotals::compute(Currency::SAR, &items, &[&five], Decimal::new(15, 2));
        assert_eq!(t.original_amount, sar("330"));
        assert_eq!(t.items[0].discounted_amount, sar("207"));
        assert_eq!(t.item_level_discounted_amount, sar("307"));
        assert_eq!(t.coupons[0].after, sar("302"));
        let shares: Vec<Money> = t.items.iter().map(|i| i.invoice_discount_share).collect();
        assert_eq!(shares[0].amount() + shares[1].amount(), sar("5").amount());
        assert_eq!(t.total_amount.amount(), t.total_price_excluding_vat.amount() + t.total_vat_amount.amount());
    }

    #[test]
    fn fixed_coupon_larger_than_amount_stops_at_zero() {
        let big = coupon(Discount::Fixed(sar("1000")));
        let items = vec![ItemInput {
            unit_price: sar("10"),
            quantity: 1,
            vat_mode: VatMode::Exclusive,
            coupons: vec![&big],
        }];
        let t = InvoiceTotals::compute(Currency::SAR, &items, &[&big], Decimal::new(15, 2));
        assert!(t.total_amount.is_zero());
        assert!(!t.total_vat_amount.is_negative());
    }

    fn discount_strategy() -> impl Strategy<Value = Discount> {
        prop_oneof![
            (1i64..=10000).prop_map(|bp| Discount::Percentage(Decimal::new(bp, 2))),
            (1i64..10_000_000).prop_map(|m| Discount::Fixed(Money::from_minor(m, Currency::SAR))),
        ]
    }

    proptest! {
        #[test]
        fn coupon_chains_never_go_negative(
            prices in prop::collection::vec((1i64..10_000_000, 1u32..20, 0u8..3), 1..5),
            item_d in prop::collection::vec(discount_strategy(), 0..3),
            inv_d in prop::collection::vec(discount_strategy(), 0..4),
        ) {
            let item_coupons: Vec<Coupon> = item_d.into_iter().map(coupon).collect();
            let inv_coupons: Vec<Coupon> = inv_d.into_iter().map(coupon).collect();
            let items: Vec<ItemInput> = prices.iter().map(|(p, q, m)| ItemInput {
                unit_price: Money::from_minor(*p, Currency::SAR),
                quantity: *q,
                vat_mode: [VatMode::Inclusive, VatMode::Exclusive, VatMode::Exempt][*m as usize],
                coupons: item_coupons.iter().collect(),
            }).collect();
            let refs: Vec<&Coupon> = inv_coupons.iter().collect();
            let t = InvoiceTotals::compute(Currency::SAR, &items, &refs, Decimal::new(15, 2));
            for l in t.coupons.iter().chain(t.items.iter().flat_map(|i| i.coupons.iter())) {
                prop_assert!(!l.after.is_negative());
                prop_assert!(!l.discount.is_negative());
                prop_assert_eq!(l.before.amount() - l.discount.amount(), l.after.amount());
            }
            prop_assert!(!t.total_amount.is_negative());
            prop_assert!(!t.total_vat_amount.is_negative());
            prop_assert!(t.item_level_discounted_amount <= t.original_amount);
            let shares: Decimal = t.items.iter().map(|i| i.invoice_discount_share.amount()).sum();
            let after = t.coupons.last().map(|l| l.after).unwrap_or(t.item_level_discounted_amount);
            prop_assert_eq!(t.item_level_discounted_amount.amount() - shares, after.amount());
        }

        #[test]
        fn vat_reconciles_on_invoices(
            prices in prop::collection::vec((1i64..10_000_000, 1u32..20, 0u8..3), 1..6),
            rate_bp in 0i64..3000,
        ) {
            let items: Vec<ItemInput> = prices.iter().map(|(p, q, m)| ItemInput {
                unit_price: Money::from_minor(*p, Currency::SAR),
                quantity: *q,
                vat_mode: [VatMode::Inclusive, VatMode::Exclusive, VatMode::Exempt][*m as usize],
                coupons: vec![],
            }).collect();
            let t = InvoiceTotals::compute(Currency::SAR, &items, &[], Decimal::new(rate_bp, 4));
            prop_assert_eq!(t.total_price_excluding_vat.amount() + t.total_vat_amount.amount(), t.total_amount.amount());
            // Inclusive and exempt items are paid at their price; exclusive ones at price + VAT.
            let mut expected = Decimal::ZERO;
            for (i, it) in items.iter().enumerate() {
                let a = t.items[i].original_amount.amount();
                expected += if it.vat_mode == VatMode::Exclusive { a + t.items[i].vat.vat.amount() } else { a };
            }
            prop_assert_eq!(expected, t.total_amount.amount());
        }
    }
}
