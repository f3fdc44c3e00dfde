//! Exact money. Amounts are `rust_decimal::Decimal`s rounded half-up to the currency's minor
//! units; a [`Money`] always carries exactly that many decimal places, so it prints as the wire
//! format wants (`"99.00"`, KWD `"1.250"`, JPY `"500"`). Never a float.

use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

macro_rules! currencies {
    ($($code:ident = $digits:expr),* $(,)?) => {
        /// ISO 4217 currencies this service bills in, with their minor-unit digits.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Currency { $($code),* }

        impl Currency {
            pub const ALL: &'static [Currency] = &[$(Currency::$code),*];
            /// Number of digits after the decimal point (SAR 2, KWD 3, JPY 0).
            pub fn minor_digits(self) -> u32 {
                match self { $(Currency::$code => $digits),* }
            }
            pub fn code(self) -> &'static str {
                match self { $(Currency::$code => stringify!($code)),* }
            }
        }

        impl FromStr for Currency {
            type Err = ();
            fn from_str(s: &str) -> Result<Self, ()> {
                match s { $(stringify!($code) => Ok(Currency::$code),)* _ => Err(()) }
            }
        }
    };
}

currencies!(SAR = 2, USD = 2, EUR = 2, GBP = 2, AED = 2, QAR = 2, BHD = 3, KWD = 3, OMR = 3, JPY = 0);

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// The largest amount accepted anywhere (a trillion units of any currency): far beyond any bill,
/// and well inside what stores keep exactly (thousandths in a signed 64-bit integer).
pub const MAX_AMOUNT: Decimal = Decimal::from_parts(3_567_587_328, 232, 0, false, 0);

/// Why a requested amount is not a valid amount of money in a currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AmountError {
    /// More decimals than the currency has.
    TooPrecise,
    /// Beyond [`MAX_AMOUNT`] in size.
    TooLarge,
}

/// An amount in a currency, rounded half-up to its minor units.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Money {
    amount: Decimal,
    currency: Currency,
}

impl Money {
    /// Rounds half-up to the currency's minor units.
    pub fn new(amount: Decimal, currency: Currency) -> Self {
        Self {
            amount: round_to(amount, currency),
            currency,
        }
    }
    pub fn zero(currency: Currency) -> Self {
        Self::new(Decimal::ZERO, currency)
    }
    /// Exact constructor: `None` if the amount has more decimals than the currency allows or is
    /// beyond [`MAX_AMOUNT`].
    pub fn exact(amount: Decimal, currency: Currency) -> Option<Self> {
        Self::checked(amount, currency).ok()
    }

    /// Exact constructor that says why an amount is refused.
    pub fn checked(amount: Decimal, currency: Currency) -> Result<Self, AmountError> {
        if amount.abs() > MAX_AMOUNT {
            return Err(AmountError::TooLarge);
        }
        let rounded = round_to(amount, currency);
        if rounded != amount {
            return Err(AmountError::TooPrecise);
        }
        Ok(Self { amount: rounded, currency })
    }
    pub fn from_minor(minor: i64, currency: Currency) -> Self {
        Self::new(Decimal::new(minor, currency.minor_digits()), currency)
    }
    pub fn amount(&self) -> Decimal {
        self.amount
    }
    pub fn currency(&self) -> Currency {
        self.currency
    }
    /// The integer count of minor units (`"99.00"` SAR → `9900`).
    pub fn minor_units(&self) -> i64 {
        let mut a = self.amount;
        a.rescale(self.currency.minor_digits());
        i64::try_from(a.mantissa()).expect("amount fits in i64 minor units")
    }
    pub fn is_zero(&self) -> bool {
        self.amount.is_zero()
    }
    pub fn is_negative(&self) -> bool {
        self.amount.is_sign_negative() && !self.amount.is_zero()
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.amount)
    }
}

impl fmt::Debug for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.amount, self.currency)
    }
}

impl Serialize for Money {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.amount)
    }
}

/// Half-up rounding to the currency's minor units, with the scale fixed to exactly that many
/// digits so that `Display` prints trailing zeros.
pub fn round_to(amount: Decimal, currency: Currency) -> Decimal {
    let digits = currency.minor_digits();
    let mut r = amount.round_dp_with_strategy(digits, RoundingStrategy::MidpointAwayFromZero);
    r.rescale(digits);
    r
}

/// Stores keep every amount as an integer count of thousandths: exact for every supported
/// currency (none has more than three minor digits) and comparable across currencies, so price
/// filters and sorts work in SQL without knowing the currency.
pub const STORED_SCALE: u32 = 3;

/// `amount` in thousandths, or why it cannot be kept exactly: more than three decimals, or
/// beyond the signed 64-bit range (about ±9.2 × 10^15 units; money the API accepts is far
/// inside it).
pub fn stored(amount: Decimal) -> Result<i64, crate::error::StoreError> {
    let mut a = amount;
    a.rescale(STORED_SCALE);
    if a.scale() != STORED_SCALE || a != amount {
        return Err(crate::error::StoreError::backend(format!("amount {amount} cannot be stored in thousandths")));
    }
    i64::try_from(a.mantissa()).map_err(|_| crate::error::StoreError::backend(format!("amount {amount} is beyond the stored range")))
}

pub fn from_stored(v: i64) -> Decimal {
    Decimal::new(v, STORED_SCALE)
}

/// A bound of a filter on stored amounts (`from_price`, `to_price`), in thousandths: a lower
/// bound rounds up and an upper bound rounds down to the stored precision, so that the filter
/// keeps exactly the amounts within the bounds; a bound beyond the stored range is clamped
/// (it still compares correctly with every amount).
pub fn stored_bound(bound: Decimal, lower: bool) -> i64 {
    let strategy = if lower {
        rust_decimal::RoundingStrategy::ToPositiveInfinity
    } else {
        rust_decimal::RoundingStrategy::ToNegativeInfinity
    };
    let mut x = bound.round_dp_with_strategy(STORED_SCALE, strategy);
    x.rescale(STORED_SCALE);
    i64::try_from(x.mantissa()).unwrap_or(if x.is_sign_negative() { i64::MIN } else { i64::MAX })
}

impl Money {
    /// The amount in thousandths ([`stored`]).
    pub fn to_stored(&self) -> Result<i64, crate::error::StoreError> {
        stored(self.amount)
    }
    pub fn from_stored(v: i64, currency: Currency) -> Self {
        Self::new(from_stored(v), currency)
    }
}

/// Parses a request amount given as a JSON number or a numeric string (`99`, `"99.5"`).
/// JSON numbers are read from their text, never through a float.
pub fn parse_decimal(v: &serde_json::Value) -> Option<Decimal> {
    let text = match v {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => s.trim().to_string(),
        _ => return None,
    };
    if text.is_empty() {
        return None;
    }
    Decimal::from_str_exact(&text)
        .or_else(|_| Decimal::from_scientific(&text))
        .ok()
        .map(|d| d.normalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_form_refuses_what_it_cannot_keep() {
        assert_eq!(stored("1.25".parse().unwrap()), Ok(1250));
        assert_eq!(stored("-9223372036854775.808".parse().unwrap()), Ok(i64::MIN));
        assert!(stored("9223372036854775.808".parse().unwrap()).is_err());
        assert!(stored("10000000000000000".parse().unwrap()).is_err());
        assert!(stored("0.0001".parse().unwrap()).is_err(), "more digits than thousandths");
        assert_eq!(stored_bound("1.0001".parse().unwrap(), true), 1001);
        assert_eq!(stored_bound("1.0009".parse().unwrap(), false), 1000);
        assert_eq!(stored_bound("1e20".parse::<Decimal>().unwrap(), false), i64::MAX);
    }
    use proptest::prelude::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn rounds_half_up_to_minor_units() {
        assert_eq!(Money::new(d("10.005"), Currency::SAR).to_string(), "10.01");
        assert_eq!(Money::new(d("10.004"), Currency::SAR).to_string(), "10.00");
        assert_eq!(Money::new(d("1.2505"), Currency::KWD).to_string(), "1.251");
        assert_eq!(Money::new(d("499.5"), Currency::JPY).to_string(), "500");
        assert_eq!(Money::new(d("99"), Currency::SAR).to_string(), "99.00");
    }

    #[test]
    fn exact_refuses_extra_digits() {
        assert!(Money::exact(d("1.001"), Currency::SAR).is_none());
        assert!(Money::exact(d("1.001"), Currency::KWD).is_some());
        assert!(Money::exact(d("1.50"), Currency::JPY).is_none());
    }

    #[test]
    fn max_amount_is_a_trillion_and_fits_the_stored_form() {
        assert_eq!(MAX_AMOUNT, d("1000000000000"));
        assert_eq!(Money::checked(d("1000000000000.001"), Currency::KWD), Err(AmountError::TooLarge));
        assert_eq!(Money::checked(d("1.001"), Currency::SAR), Err(AmountError::TooPrecise));
        let max = Money::checked(MAX_AMOUNT, Currency::KWD).unwrap();
        assert_eq!(Money::from_stored(max.to_stored().unwrap(), Currency::KWD), max);
        assert_eq!(Money::checked(-MAX_AMOUNT, Currency::SAR).unwrap().to_stored().unwrap(), -1_000_000_000_000_000);
    }

    #[test]
    fn minor_units() {
        assert_eq!(Money::new(d("99"), Currency::SAR).minor_units(), 9900);
        assert_eq!(Money::new(d("1.25"), Currency::KWD).minor_units(), 1250);
    }

    #[test]
    fn parses_numbers_and_strings_without_floats() {
        assert_eq!(parse_decimal(&serde_json::json!(99)), Some(d("99")));
        assert_eq!(parse_decimal(&serde_json::json!("99.50")), Some(d("99.5")));
        assert_eq!(parse_decimal(&serde_json::json!(0.1)), Some(d("0.1")));
        assert_eq!(parse_decimal(&serde_json::json!("abc")), None);
        assert_eq!(parse_decimal(&serde_json::json!(true)), None);
    }

    proptest! {
        #[test]
        fn stored_form_round_trips(minor in -1_000_000_000_000i64..1_000_000_000_000i64, c in 0usize..Currency::ALL.len()) {
            let cur = Currency::ALL[c];
            let m = Money::from_minor(minor, cur);
            let back = Money::from_stored(m.to_stored().unwrap(), cur);
            prop_assert_eq!(back, m);
            prop_assert_eq!(back.to_string(), m.to_string());
        }
    }
}
