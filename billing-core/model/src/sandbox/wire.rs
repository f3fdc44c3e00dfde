//! The body of `POST /sandbox/clock/advance`.

use super::Advance;
use crate::clock::parse_datetime;
use crate::error::Result;
use crate::wire::Body;
use chrono::Duration;
use serde_json::Value;

impl Advance {
    /// `{"seconds": N}` (N ≥ 0) or `{"to": "<date-time>"}`, exactly one of them.
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let seconds = b.opt_int("seconds");
        let to = b.opt_str("to");
        let parsed_to = to.as_deref().map(parse_datetime);
        if parsed_to == Some(None) {
            b.fail("datetime_parsing", "to", "Input should be a valid datetime");
        }
        if let Some(s) = seconds {
            if s < 0 {
                b.fail(
                    "greater_than_equal",
                    "seconds",
                    "Input should be greater than or equal to 0 (the clock never goes back)",
                );
            }
            if s > 100 * 366 * 24 * 3600 {
                b.fail("less_than_equal", "seconds", "Input should be at most a century");
            }
        }
        match (seconds.is_some(), to.is_some()) {
            (false, false) if b.problems.is_empty() => b.fail("missing", "seconds", "Give either 'seconds' or 'to'"),
            (true, true) => b.fail("value_error", "to", "Value error, give either 'seconds' or 'to', not both"),
            _ => {}
        }
        b.finish()?;
        Ok(match (seconds, parsed_to.flatten()) {
            (Some(s), _) => Advance::By(Duration::seconds(s)),
            (_, Some(t)) => Advance::To(t),
            _ => unreachable!("checked above"),
        })
    }
}

/// What the request looks like, for `/openapi.json` (the reader above is the truth; the
/// server's tests check that it reads exactly these fields).
pub mod request {
    use crate::clock::Timestamp;
    use schemars::JsonSchema;

    /// SandboxClockAdvance: exactly one of `seconds` (≥ 0) or `to` (a date-time, never backwards).
    #[derive(JsonSchema)]
    #[schemars(extend("x-exactly-one-of" = ["seconds", "to"]))]
    pub struct SandboxClockAdvance {
        /// How many seconds to move the clock forward (at most a century); counted from the
        /// target of an advance still under way, so that concurrent advances add up.
        #[schemars(with = "Option<crate::schema::Integer>")]
        pub seconds: Option<i64>,
        /// The organization time to move the clock to (RFC 3339; without an offset, UTC); not
        /// before the clock's time now.
        #[schemars(with = "Option<Timestamp>")]
        pub to: Option<Timestamp>,
    }
}
