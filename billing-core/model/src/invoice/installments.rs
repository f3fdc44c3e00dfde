//! Installment plans: a total split into 2, 3 or 4 parts, each `total / n` rounded half-up to
//! the minor unit, the rounding difference on the last, so that the parts sum exactly to the
//! total. The first part is due at payment time, each later one a split period after the
//! previous.

use crate::clock::Timestamp;
use crate::money::{Currency, Money};
use crate::org::OrgSettings;
use chrono::Months;
use rust_decimal::Decimal;

/// How the payer pays an invoice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentPlan {
    Full,
    Installments(u8),
}

pub const INSTALLMENT_OPTIONS: [u8; 3] = [2, 3, 4];

#[derive(Debug, Clone, PartialEq)]
pub struct InstallmentPlan {
    pub parts: Vec<(Money, Timestamp)>,
}

/// The parts of `total` in `n` installments.
pub fn split(total: Money, n: u8) -> Vec<Money> {
    let c = total.currency();
    let n = n.max(1);
    let part = Money::new(total.amount() / Decimal::from(n), c);
    let mut parts = vec![part; usize::from(n - 1)];
    let rest = total.amount() - part.amount() * Decimal::from(n - 1);
    parts.push(Money::new(rest, c));
    parts
}

/// The smallest installment allowed in `currency`; `None` means no installments in it.
pub fn minimum(settings: &OrgSettings, currency: Currency) -> Option<Money> {
    settings.installment_minimums.get(currency.code()).map(|m| Money::new(*m, currency))
}

/// Whether `n` installments of `total` are available under the organization's settings.
pub fn available(settings: &OrgSettings, total: Money, n: u8) -> bool {
    if !INSTALLMENT_OPTIONS.contains(&n) {
        return false;
    }
    let Some(min) = minimum(settings, total.currency()) else { return false };
    split(total, n).iter().all(|p| p.amount() >= min.amount())
}

/// One installment plan a payer may choose: the number of parts and each part's amount.
#[derive(Debug, Clone, PartialEq)]
pub struct InstallmentOption {
    pub count: u8,
    pub parts: Vec<Money>,
}

/// The installment plans `total` may be paid in under the organization's settings (those of
/// [`INSTALLMENT_OPTIONS`] that are [`available`]), each with its parts; none when `offered` is
/// false (the link or invoice does not allow installments).
pub fn options(settings: &OrgSettings, total: Money, offered: bool) -> Vec<InstallmentOption> {
    if !offered {
        return vec![];
    }
    INSTALLMENT_OPTIONS
        .iter()
        .filter(|n| available(settings, total, **n))
        .map(|n| InstallmentOption {
            count: *n,
            parts: split(total, *n),
        })
        .collect()
}

impl InstallmentPlan {
    pub fn new(total: Money, n: u8, first_due: Timestamp, split_months: u32) -> Self {
        let parts = split(total, n)
            .into_iter()
            .enumerate()
            .map(|(i, m)| (m, first_due.checked_add_months(Months::new(split_months * i as u32)).unwrap_or(first_due)))
            .collect();
        InstallmentPlan { parts }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn thirds_put_the_difference_last() {
        let p = split(Money::new(Decimal::new(10000, 2), Currency::SAR), 3);
        let s: Vec<String> = p.iter().map(|m| m.to_string()).collect();
        assert_eq!(s, vec!["33.33", "33.33", "33.34"]);
    }

    #[test]
    fn minimum_per_currency() {
        let s = OrgSettings::default();
        assert!(available(&s, Money::new(Decimal::new(300, 0), Currency::SAR), 3));
        assert!(!available(&s, Money::new(Decimal::new(299, 0), Currency::SAR), 3));
        assert!(
            !available(&s, Money::new(Decimal::new(1000, 0), Currency::USD), 2),
            "no minimum, no installments"
        );
        assert!(!available(&s, Money::new(Decimal::new(1000, 0), Currency::SAR), 5));
    }

    #[test]
    fn options_are_the_available_plans() {
        let s = OrgSettings::default();
        let sar = |v: i64| Money::new(Decimal::new(v, 0), Currency::SAR);
        let counts = |total, offered| options(&s, total, offered).iter().map(|o| o.count).collect::<Vec<_>>();
        assert_eq!(counts(sar(400), true), vec![2, 3, 4]);
        assert_eq!(counts(sar(350), true), vec![2, 3], "4 × 87.50 is below the minimum");
        assert_eq!(counts(sar(400), false), Vec::<u8>::new());
        let three = &options(&s, sar(400), true)[1];
        let parts: Vec<String> = three.parts.iter().map(|m| m.to_string()).collect();
        assert_eq!(parts, ["133.33", "133.33", "133.34"]);
    }

    #[test]
    fn due_dates_are_a_split_period_apart() {
        let t0 = crate::clock::parse_datetime("2026-01-31T10:00:00Z").unwrap();
        let p = InstallmentPlan::new(Money::new(Decimal::new(400, 0), Currency::SAR), 3, t0, 1);
        assert_eq!(crate::clock::format_rfc3339(&p.parts[1].1), "2026-02-28T10:00:00.000000Z");
        assert_eq!(crate::clock::format_rfc3339(&p.parts[2].1), "2026-03-31T10:00:00.000000Z");
    }

    proptest! {
        #[test]
        fn parts_sum_exactly_in_minor_units(minor in 0i64..1_000_000_000_000, n in 2u8..=4, c in 0usize..Currency::ALL.len()) {
            let cur = Currency::ALL[c];
            let total = Money::from_minor(minor, cur);
            let parts = split(total, n);
            prop_assert_eq!(parts.len(), usize::from(n));
            let sum: i64 = parts.iter().map(Money::minor_units).sum();
            prop_assert_eq!(sum, total.minor_units());
            for p in &parts {
                prop_assert_eq!(Money::new(p.amount(), cur), *p);
            }
            // Every part but the last is the same rounded share; only the last differs.
            let share = Money::new(total.amount() / Decimal::from(n), cur);
            for p in &parts[..parts.len() - 1] {
                prop_assert_eq!(*p, share);
            }
            prop_assert!((parts[parts.len() - 1].minor_units() - share.minor_units()).abs() < i64::from(n));
        }
    }
}
