//! PendingPlanChange (with its NextInvoicePreview, target items and diff).

use super::diff::{DiffEntry, DiffKind};
use super::{PlanChange, PlanChangeStatus};
use crate::clock::Timestamp;
use crate::ids::{CouponId, PlanChangeId, ProductId};
use crate::money::{Currency, Money};
use crate::product::RecurringInterval;
use crate::schema::{Integer, Number};
use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::Serialize;
use std::borrow::Cow;

/// How many cycles of `count` `interval`s a year has.
fn cycles_per_year(interval: RecurringInterval, count: u32) -> Decimal {
    let count = Decimal::from(count.max(1));
    match interval {
        RecurringInterval::Week => Decimal::from(52) / count,
        RecurringInterval::Month => Decimal::from(12) / count,
        RecurringInterval::Quarter => Decimal::from(4) / count,
        RecurringInterval::Semester => Decimal::from(2) / count,
        RecurringInterval::Year => Decimal::ONE / count,
    }
}

/// What `amount` every `count` `interval`s comes to in a month (a year's worth over 12), not
/// rounded.
pub fn per_month(amount: Money, interval: RecurringInterval, count: u32) -> Decimal {
    amount.amount() * cycles_per_year(interval, count) / Decimal::from(12)
}

/// `delta_amount_per_month`: the target's monthly amount less the current one's, rounded once
/// (half-up to the currency's minor unit).
pub fn delta_per_month(current: (Money, RecurringInterval, u32), target: (Money, RecurringInterval, u32), currency: Currency) -> Money {
    Money::new(per_month(target.0, target.1, target.2) - per_month(current.0, current.1, current.2), currency)
}

impl PlanChange {
    /// `target_amount - current_amount`.
    pub fn delta_amount(&self) -> Money {
        Money::new(self.target.amount.amount() - self.current_amount.amount(), self.currency())
    }

    /// PendingPlanChange.
    pub fn view(&self) -> PendingPlanChange<'_> {
        let t = &self.target;
        let name = |p: ProductId| -> Cow<'_, str> {
            match self.product_names.iter().find(|(id, _)| *id == p) {
                Some((_, n)) => Cow::Borrowed(n.as_str()),
                None => Cow::Owned(p.to_string()),
            }
        };
        let p = &self.preview;
        PendingPlanChange {
            id: self.id,
            status: self.status,
            effective_at: self.effective_at,
            invoice_was_reissued: self.invoice_was_reissued,
            target_items: t
                .items
                .iter()
                .map(|i| PendingPlanChangeItemPreview {
                    product_id: i.line.product_id,
                    product_name: name(i.line.product_id),
                    quantity: i.line.quantity,
                    original_amount: i.line.original_amount,
                    discounted_amount: i.line.discounted_amount,
                })
                .collect(),
            target_subscription_coupon_ids: &t.coupon_ids,
            target_recurring_interval: t.recurring_interval,
            target_recurring_interval_count: t.recurring_interval_count,
            target_amount: t.amount,
            currency: self.currency(),
            current_amount: self.current_amount,
            delta_amount: self.delta_amount(),
            delta_amount_per_month: delta_per_month(
                (self.current_amount, self.current_interval, self.current_interval_count),
                (t.amount, t.recurring_interval, t.recurring_interval_count),
                self.currency(),
            ),
            changes: self.changes.iter().map(DiffEntry::view).collect(),
            next_invoice_preview: NextInvoicePreviewView {
                period_start: p.period_start,
                period_end: p.period_end,
                issue_at: p.issue_at,
                due_at: p.due_at,
                subtotal: p.subtotal,
                discount_total: p.discount_total,
                total_amount: p.total_amount,
                currency: self.currency(),
            },
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

impl DiffEntry {
    /// PendingPlanChangeDiffEntry.
    pub fn view(&self) -> PendingPlanChangeDiffEntry<'_> {
        PendingPlanChangeDiffEntry {
            kind: self.kind,
            label: &self.label,
            product_id: self.product_id,
            from_value: self.from_value.as_deref(),
            to_value: self.to_value.as_deref(),
        }
    }
}

/// PendingPlanChange: a change of a subscription's plan scheduled for its period end, with
/// what it changes and what the first invoice it bills will be.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PendingPlanChange<'a> {
    /// The change's id.
    pub id: PlanChangeId,
    /// SCHEDULED until it is applied at the period end (APPLIED) or withdrawn (CANCELED).
    pub status: PlanChangeStatus,
    /// When the target plan takes effect: the start of the first cycle it bills.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub effective_at: Timestamp,
    /// Whether an already prepared next-cycle invoice was canceled and issued again for the
    /// change.
    pub invoice_was_reissued: bool,
    /// The lines of the target plan, priced when the change was made.
    pub target_items: Vec<PendingPlanChangeItemPreview<'a>>,
    /// The subscription-level coupons of the target plan.
    #[schemars(with = "Vec<String>")]
    pub target_subscription_coupon_ids: &'a [CouponId],
    /// The target plan's cycle unit.
    #[schemars(with = "Option<RecurringInterval>")]
    pub target_recurring_interval: RecurringInterval,
    /// How many `target_recurring_interval`s one cycle of the target plan lasts.
    #[schemars(with = "Number")]
    pub target_recurring_interval_count: u32,
    /// What each cycle of the target plan bills (a decimal string in `currency`).
    #[schemars(with = "String")]
    pub target_amount: Money,
    /// The subscription's currency.
    #[schemars(with = "Option<Currency>")]
    pub currency: Currency,
    /// What each cycle billed when the change was scheduled.
    #[schemars(with = "String")]
    pub current_amount: Money,
    /// `target_amount - current_amount` (negative: cheaper).
    #[schemars(with = "String")]
    pub delta_amount: Money,
    /// The target's monthly equivalent less the current one's (a year's worth over 12),
    /// rounded once.
    #[schemars(with = "Option<String>")]
    pub delta_amount_per_month: Money,
    /// What changes, entry by entry (items added, removed or changed, coupons, interval).
    pub changes: Vec<PendingPlanChangeDiffEntry<'a>>,
    /// The first invoice the target plan bills.
    #[schemars(with = "Option<NextInvoicePreviewView>")]
    pub next_invoice_preview: NextInvoicePreviewView,
    /// When the change was made.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When it last changed (applied or withdrawn); `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
}

/// PendingPlanChangeItemPreview: one line of the target plan.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PendingPlanChangeItemPreview<'a> {
    /// The product billed.
    pub product_id: ProductId,
    /// The product's name when the change was made (its id if it had none).
    #[schemars(with = "String")]
    pub product_name: Cow<'a, str>,
    /// How many units.
    #[schemars(with = "Integer")]
    pub quantity: u32,
    /// The line's amount before coupons (a decimal string).
    #[schemars(with = "String")]
    pub original_amount: Money,
    /// The line's amount after its own coupons.
    #[schemars(with = "String")]
    pub discounted_amount: Money,
}

/// PendingPlanChangeDiffEntry: one difference between the current plan and the target.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PendingPlanChangeDiffEntry<'a> {
    /// What kind of difference.
    #[schemars(with = "Option<DiffKind>")]
    pub kind: DiffKind,
    /// The difference in words (`"Pool removed (quantity 2)"`).
    pub label: &'a str,
    /// The product concerned; `null` for a difference of the whole plan.
    pub product_id: Option<ProductId>,
    /// The value before (a quantity, an interval, a coupon); `null` for an addition.
    pub from_value: Option<&'a str>,
    /// The value after; `null` for a removal.
    pub to_value: Option<&'a str>,
}

/// NextInvoicePreview: the first invoice a scheduled plan change bills.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "NextInvoicePreview")]
pub struct NextInvoicePreviewView {
    /// The start of the cycle it bills.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub period_start: Timestamp,
    /// The end of that cycle.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub period_end: Timestamp,
    /// When it is (or was) issued: the period start less the organization's lead time, not
    /// before the change was made.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub issue_at: Timestamp,
    /// When it is due: the period start.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub due_at: Timestamp,
    /// The items' amounts before any coupon (a decimal string).
    #[schemars(with = "String")]
    pub subtotal: Money,
    /// What the coupons take off.
    #[schemars(with = "String")]
    pub discount_total: Money,
    /// What it bills.
    #[schemars(with = "String")]
    pub total_amount: Money,
    /// The subscription's currency.
    #[schemars(with = "Option<Currency>")]
    pub currency: Currency,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use RecurringInterval::*;

    fn sar(minor: i64) -> Money {
        Money::from_minor(minor, Currency::SAR)
    }

    #[test]
    fn monthly_equivalents() {
        assert_eq!(delta_per_month((sar(10_000), Month, 1), (sar(30_000), Quarter, 1), Currency::SAR), sar(0));
        assert_eq!(delta_per_month((sar(10_000), Month, 1), (sar(100_000), Year, 1), Currency::SAR), sar(-1_667));
        assert_eq!(delta_per_month((sar(1_200), Week, 2), (sar(0), Month, 1), Currency::SAR), sar(-2_600));
    }

    fn interval() -> impl Strategy<Value = (RecurringInterval, u32)> {
        (prop_oneof![Just(Week), Just(Month), Just(Quarter), Just(Semester), Just(Year)], 1u32..6)
    }

    proptest! {
        /// For the same interval the monthly delta has the sign of the delta and is zero
        /// exactly when the amounts are equal; a plan against itself is zero.
        #[test]
        fn monthly_delta_follows_the_delta(a in 0i64..10_000_000, b in 0i64..10_000_000, (i, n) in interval(), (j, m) in interval()) {
            let d = delta_per_month((sar(a), i, n), (sar(b), i, n), Currency::SAR);
            prop_assert_eq!(d.amount().is_sign_negative() && !d.is_zero(), b < a && d.amount() != Decimal::ZERO);
            if a == b {
                prop_assert!(d.is_zero());
            }
            prop_assert!(delta_per_month((sar(a), j, m), (sar(a), j, m), Currency::SAR).is_zero());
        }
    }
}
