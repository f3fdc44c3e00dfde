//! The VAT split of an amount.

use super::VatMode;
use crate::money::Money;
use rust_decimal::Decimal;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Currency;
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
