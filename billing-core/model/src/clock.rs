//! Time is injected. Nothing in the core reads the system clock directly: operations ask a
//! [`Clock`], and a sandbox organization shifts it by its own test-clock offset (see
//! [`crate::org::Organization::now`]).

use chrono::{DateTime, Duration, DurationRound, Utc};
use std::sync::Mutex;

pub type Timestamp = DateTime<Utc>;

pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The wall clock, truncated to microseconds: that is what both stores keep, so a value read back
/// equals the value written.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        truncate_micros(Utc::now())
    }
}

/// A clock that only moves when told to; for tests and embedders that simulate time.
#[derive(Debug)]
pub struct ManualClock(Mutex<Timestamp>);

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        Self(Mutex::new(truncate_micros(start)))
    }
    pub fn advance(&self, by: Duration) {
        let mut t = self.0.lock().unwrap();
        *t += by;
    }
    pub fn set(&self, to: Timestamp) {
        *self.0.lock().unwrap() = truncate_micros(to);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap()
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

pub fn truncate_micros(t: Timestamp) -> Timestamp {
    t.duration_trunc(Duration::microseconds(1)).unwrap_or(t)
}

/// Microseconds since the UNIX epoch: how timestamps are stored.
pub fn to_micros(t: Timestamp) -> i64 {
    t.timestamp_micros()
}

pub fn from_micros(us: i64) -> Timestamp {
    DateTime::from_timestamp_micros(us).expect("timestamp in range")
}

/// RFC 3339 in UTC with microseconds and `Z`, the wire format of every date-time.
pub fn format_rfc3339(t: &Timestamp) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// Serde helpers for the wire format of date-times.
pub mod wire_time {
    use super::*;
    use serde::Serializer;

    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_rfc3339(t))
    }

    pub mod option {
        use super::*;
        pub fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => s.serialize_str(&format_rfc3339(t)),
                None => s.serialize_none(),
            }
        }
    }
}

/// Parses an RFC 3339 date-time; a value without an offset (or a bare date) is read as UTC.
pub fn parse_datetime(s: &str) -> Option<Timestamp> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(truncate_micros(t.with_timezone(&Utc)));
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(n) = chrono::NaiveDateTime::parse_from_str(s, fmt) {
            return Some(truncate_micros(n.and_utc()));
        }
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some(d.and_hms_opt(0, 0, 0)?.and_utc());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_micros_and_z() {
        let t = parse_datetime("2026-11-21T13:15:30.123456789+03:00").unwrap();
        assert_eq!(format_rfc3339(&t), "2026-11-21T10:15:30.123456Z");
    }

    #[test]
    fn naive_values_are_utc() {
        let t = parse_datetime("2026-11-21T10:15:30").unwrap();
        assert_eq!(format_rfc3339(&t), "2026-11-21T10:15:30.000000Z");
        assert!(parse_datetime("yesterday").is_none());
    }

    #[test]
    fn micros_round_trip() {
        let t = SystemClock.now();
        assert_eq!(from_micros(to_micros(t)), t);
    }
}
