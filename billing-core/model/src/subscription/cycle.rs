//! Cycle arithmetic: where each billing cycle of a subscription starts and ends.
//!
//! Cycle `n` (from 1) starts at the anchor (the subscription's `period_start`) plus `n - 1`
//! intervals and ends where cycle `n + 1` starts, so the cycles tile time with no gap and no
//! overlap. Every boundary is computed from the anchor, never from the previous boundary, so
//! month-based cycles do not drift: anchored on January 31, the cycles start on Jan 31,
//! Feb 28 (29 in a leap year), Mar 31, Apr 30, May 31, … (a month without the anchor's day
//! ends on its last day). WEEK is 7 days; MONTH, QUARTER, SEMESTER and YEAR are 1, 3, 6 and
//! 12 calendar months; `count` multiplies the interval. The time of day (UTC) is the anchor's.

use crate::clock::Timestamp;
use crate::product::RecurringInterval;
use chrono::{Duration, Months};

/// The largest cycle number the arithmetic takes (far beyond any real subscription: 100,000
/// weekly cycles are about 1,900 years).
pub const MAX_CYCLE: u32 = 100_000;

/// How many calendar months one interval is, or `None` for a week-based interval.
fn months_of(interval: RecurringInterval) -> Option<u32> {
    match interval {
        RecurringInterval::Week => None,
        RecurringInterval::Month => Some(1),
        RecurringInterval::Quarter => Some(3),
        RecurringInterval::Semester => Some(6),
        RecurringInterval::Year => Some(12),
    }
}

/// The start of cycle `n` (1-based) of a subscription anchored at `anchor` that renews every
/// `count` `interval`s. `None` only when the date would leave chrono's range.
pub fn cycle_start(anchor: Timestamp, interval: RecurringInterval, count: u32, n: u32) -> Option<Timestamp> {
    let steps = n.checked_sub(1)?.checked_mul(count.max(1))?;
    match months_of(interval) {
        None => anchor.checked_add_signed(Duration::weeks(i64::from(steps))),
        Some(m) => anchor.checked_add_months(Months::new(steps.checked_mul(m)?)),
    }
}

/// The end of cycle `n`: the start of cycle `n + 1`.
pub fn cycle_end(anchor: Timestamp, interval: RecurringInterval, count: u32, n: u32) -> Option<Timestamp> {
    cycle_start(anchor, interval, count, n.checked_add(1)?)
}

/// Cycle `n` as `(start, end)`; panics beyond chrono's range (cycle numbers are bounded by
/// [`MAX_CYCLE`] and anchors by the API's date range, so this never happens in practice).
pub fn cycle(anchor: Timestamp, interval: RecurringInterval, count: u32, n: u32) -> (Timestamp, Timestamp) {
    let start = cycle_start(anchor, interval, count, n).expect("cycle start within range");
    let end = cycle_end(anchor, interval, count, n).expect("cycle end within range");
    (start, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_datetime;
    use chrono::{Datelike, NaiveDate, TimeZone, Timelike, Utc};
    use proptest::prelude::*;
    use RecurringInterval::*;

    fn at(s: &str) -> Timestamp {
        parse_datetime(s).unwrap()
    }

    fn starts(anchor: &str, interval: RecurringInterval, count: u32, n: u32) -> Vec<String> {
        (1..=n)
            .map(|k| cycle_start(at(anchor), interval, count, k).unwrap().format("%Y-%m-%d").to_string())
            .collect()
    }

    #[test]
    fn month_end_anchors_clamp_without_drifting() {
        assert_eq!(
            starts("2027-01-31T10:00:00Z", Month, 1, 6),
            ["2027-01-31", "2027-02-28", "2027-03-31", "2027-04-30", "2027-05-31", "2027-06-30"]
        );
        // A leap year's February has a 29th.
        assert_eq!(starts("2028-01-31T10:00:00Z", Month, 1, 3), ["2028-01-31", "2028-02-29", "2028-03-31"]);
        // The 30th stays the 30th after February.
        assert_eq!(
            starts("2027-01-30T00:00:00Z", Month, 1, 4),
            ["2027-01-30", "2027-02-28", "2027-03-30", "2027-04-30"]
        );
        // Every two months from Dec 31.
        assert_eq!(
            starts("2026-12-31T00:00:00Z", Month, 2, 4),
            ["2026-12-31", "2027-02-28", "2027-04-30", "2027-06-30"]
        );
    }

    #[test]
    fn each_interval() {
        assert_eq!(starts("2027-01-01T00:00:00Z", Week, 1, 3), ["2027-01-01", "2027-01-08", "2027-01-15"]);
        assert_eq!(starts("2027-01-01T00:00:00Z", Week, 2, 3), ["2027-01-01", "2027-01-15", "2027-01-29"]);
        assert_eq!(
            starts("2027-01-31T00:00:00Z", Quarter, 1, 4),
            ["2027-01-31", "2027-04-30", "2027-07-31", "2027-10-31"]
        );
        assert_eq!(starts("2027-08-31T00:00:00Z", Semester, 1, 3), ["2027-08-31", "2028-02-29", "2028-08-31"]);
        assert_eq!(
            starts("2028-02-29T00:00:00Z", Year, 1, 5),
            ["2028-02-29", "2029-02-28", "2030-02-28", "2031-02-28", "2032-02-29"]
        );
        assert_eq!(starts("2027-03-15T00:00:00Z", Year, 2, 3), ["2027-03-15", "2029-03-15", "2031-03-15"]);
    }

    #[test]
    fn time_of_day_is_kept_and_cycle_zero_has_no_start() {
        let (s, e) = cycle(at("2027-01-31T23:59:59.123456Z"), Month, 1, 2);
        assert_eq!((s, e), (at("2027-02-28T23:59:59.123456Z"), at("2027-03-31T23:59:59.123456Z")));
        assert_eq!(cycle_start(at("2027-01-01T00:00:00Z"), Month, 1, 0), None);
    }

    fn interval() -> impl Strategy<Value = RecurringInterval> {
        prop_oneof![Just(Week), Just(Month), Just(Quarter), Just(Semester), Just(Year)]
    }

    fn anchor() -> impl Strategy<Value = Timestamp> {
        // 2000-01-01 .. 2100-01-01, to the microsecond.
        (946_684_800_000_000i64..4_102_444_800_000_000i64).prop_map(|us| Utc.timestamp_micros(us).unwrap())
    }

    fn days_in_month(y: i32, m: u32) -> u32 {
        let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
        NaiveDate::from_ymd_opt(ny, nm, 1).unwrap().pred_opt().unwrap().day()
    }

    proptest! {
        /// Cycles tile time: each ends where the next starts, and each is non-empty.
        #[test]
        fn cycles_are_contiguous_and_increasing(a in anchor(), i in interval(), count in 1u32..5, n in 1u32..200) {
            let (s1, e1) = cycle(a, i, count, n);
            let (s2, _) = cycle(a, i, count, n + 1);
            prop_assert!(s1 < e1);
            prop_assert_eq!(e1, s2);
            prop_assert_eq!(cycle_start(a, i, count, 1), Some(a));
        }

        /// A cycle lasts what its interval says: 7·count days for weeks, between 28·m and
        /// 31·m days for m months.
        #[test]
        fn cycle_lengths(a in anchor(), i in interval(), count in 1u32..5, n in 1u32..200) {
            let (s, e) = cycle(a, i, count, n);
            let days = (e - s).num_days();
            match months_of(i) {
                None => prop_assert_eq!(e - s, Duration::weeks(i64::from(count))),
                Some(m) => {
                    let months = i64::from(m * count);
                    prop_assert!(days >= 28 * months - 3 && days <= 31 * months + 1, "{} days for {} months", days, months);
                }
            }
        }

        /// Month-based starts fall on the anchor's day of the month, or on the last day of a
        /// shorter month, at the anchor's time of day; the month is the anchor's plus the
        /// cycles elapsed (no drift).
        #[test]
        fn months_keep_the_anchor_day(a in anchor(), i in interval(), count in 1u32..5, n in 1u32..200) {
            prop_assume!(i != Week);
            let s = cycle_start(a, i, count, n).unwrap();
            let want_day = a.day().min(days_in_month(s.year(), s.month()));
            prop_assert_eq!(s.day(), want_day);
            prop_assert_eq!((s.hour(), s.minute(), s.second(), s.nanosecond()), (a.hour(), a.minute(), a.second(), a.nanosecond()));
            let elapsed = i64::from(s.year() - a.year()) * 12 + i64::from(s.month()) - i64::from(a.month());
            prop_assert_eq!(elapsed, i64::from((n - 1) * count * months_of(i).unwrap()));
        }
    }
}
