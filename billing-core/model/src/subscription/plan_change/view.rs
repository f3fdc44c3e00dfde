//! PendingPlanChange (with its NextInvoicePreview, target items and diff).

use super::PlanChange;
use crate::clock::format_rfc3339;
use crate::money::{Currency, Money};
use crate::product::RecurringInterval;
use rust_decimal::Decimal;
use serde_json::{json, Value};

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

    pub fn to_json(&self) -> Value {
        let t = &self.target;
        let name = |p| {
            self.product_names
                .iter()
                .find(|(id, _)| *id == p)
                .map(|(_, n)| n.clone())
                .unwrap_or_else(|| p.to_string())
        };
        let p = &self.preview;
        json!({
            "id": self.id,
            "status": self.status,
            "effective_at": format_rfc3339(&self.effective_at),
            "invoice_was_reissued": self.invoice_was_reissued,
            "target_items": t.items.iter().map(|i| json!({
                "product_id": i.line.product_id,
                "product_name": name(i.line.product_id),
                "quantity": i.line.quantity,
                "original_amount": i.line.original_amount,
                "discounted_amount": i.line.discounted_amount,
            })).collect::<Vec<_>>(),
            "target_subscription_coupon_ids": t.coupon_ids,
            "target_recurring_interval": t.recurring_interval,
            "target_recurring_interval_count": t.recurring_interval_count,
            "target_amount": t.amount,
            "currency": self.currency(),
            "current_amount": self.current_amount,
            "delta_amount": self.delta_amount(),
            "delta_amount_per_month": delta_per_month(
                (self.current_amount, self.current_interval, self.current_interval_count),
                (t.amount, t.recurring_interval, t.recurring_interval_count),
                self.currency(),
            ),
            "changes": self.changes.iter().map(|c| c.to_json()).collect::<Vec<_>>(),
            "next_invoice_preview": {
                "period_start": format_rfc3339(&p.period_start),
                "period_end": format_rfc3339(&p.period_end),
                "issue_at": format_rfc3339(&p.issue_at),
                "due_at": format_rfc3339(&p.due_at),
                "subtotal": p.subtotal,
                "discount_total": p.discount_total,
                "total_amount": p.total_amount,
                "currency": self.currency(),
            },
            "created_at": format_rfc3339(&self.created_at),
            "updated_at": self.updated_at.as_ref().map(format_rfc3339),
        })
    }
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
