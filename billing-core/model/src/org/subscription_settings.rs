//! The organization's subscription settings, read and changed by organization admins through
//! `GET/PATCH /api/v2/organization/settings` (as the other admin-level settings):
//!
//! - `subscription_invoice_lead_days` (0 to [`MAX_LEAD_DAYS`], default
//!   [`DEFAULT_LEAD_DAYS`]): how many days before a period end the next cycle's invoice is
//!   prepared (issued, due at the period end). 0 prepares it at the period end, with the
//!   renewal. A change applies to the preparations still to come (a queued one waits for the
//!   new time when the lead time shrinks, and keeps its time when it grows; a cycle that started under a lead time of 0 has no preparation queued, so its next
//!   invoice comes with the renewal); an invoice already prepared stays.
//! - `subscription_renewal_retry_days` (default `[1, 3, 7]`: 3 retries over 7 days): when a
//!   declined auto-renewal charge is tried again, in days after the first attempt; at most
//!   [`MAX_RETRIES`] entries, each 1 to [`MAX_RETRY_DAY`], strictly increasing; `[]` is no
//!   retry. After the last retry fails the subscription becomes INACTIVE. A change applies to
//!   renewals whose first attempt fails after it (a dunning under way keeps its schedule).

use super::OrgSettings;
use crate::wire::Body;
use chrono::Duration;
use serde_json::Value;

/// The default lead time: the next invoice is prepared at the period end, with the renewal (as
/// auto-renewal charges the card at the period end anyway; organizations whose consumers pay
/// by hand set a few days).
pub const DEFAULT_LEAD_DAYS: u32 = 0;
/// The longest lead time, in days.
pub const MAX_LEAD_DAYS: u32 = 30;
/// The most retries of a declined renewal charge.
pub const MAX_RETRIES: usize = 10;
/// The latest retry, in days after the first attempt.
pub const MAX_RETRY_DAY: u32 = 60;

/// The default retries of a declined renewal charge, in days after the first attempt: 3 retries
/// over 7 days (an organization changes them: `subscription_renewal_retry_days`).
pub const RENEWAL_RETRY_DAYS: [i64; 3] = [1, 3, 7];

/// [`RENEWAL_RETRY_DAYS`] as the setting stores them.
pub fn default_retry_days() -> Vec<u32> {
    RENEWAL_RETRY_DAYS.iter().map(|d| *d as u32).collect()
}

impl OrgSettings {
    /// How long before a period end the next cycle's invoice is prepared.
    pub fn invoice_lead(&self) -> Duration {
        Duration::days(i64::from(self.subscription_invoice_lead_days.min(MAX_LEAD_DAYS)))
    }
}

/// A whole number as integer fields take it (`3`, `3.0`, `"3"`).
fn whole(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The subscription fields of an OrganizationSettingsUpdate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubscriptionSettingsPatch {
    pub invoice_lead_days: Option<u32>,
    pub renewal_retry_days: Option<Vec<u32>>,
}

/// The names of the fields, for the list of fields an admin may PATCH.
pub const FIELDS: [&str; 2] = ["subscription_invoice_lead_days", "subscription_renewal_retry_days"];

impl SubscriptionSettingsPatch {
    /// Reads the fields from the body being parsed; problems go to `b` (422 entries).
    pub fn parse(b: &mut Body<'_>) -> Self {
        let invoice_lead_days = match b.opt_int("subscription_invoice_lead_days") {
            Some(n) if (0..=i64::from(MAX_LEAD_DAYS)).contains(&n) => Some(n as u32),
            Some(_) => {
                b.fail(
                    "value_error",
                    "subscription_invoice_lead_days",
                    format!("Value error, the lead time is 0 to {MAX_LEAD_DAYS} days"),
                );
                None
            }
            None => None,
        };
        let renewal_retry_days = b
            .opt_list("subscription_renewal_retry_days", |v, loc, p| match whole(v) {
                Some(n) if (1..=i64::from(MAX_RETRY_DAY)).contains(&n) => Some(n as u32),
                _ => {
                    p.push(crate::error::FieldError::new(
                        "value_error",
                        loc,
                        format!("Value error, a retry is a whole number of days from 1 to {MAX_RETRY_DAY}"),
                    ));
                    None
                }
            })
            .and_then(|days| {
                if days.len() > MAX_RETRIES {
                    b.fail(
                        "too_long",
                        "subscription_renewal_retry_days",
                        format!("List should have at most {MAX_RETRIES} items"),
                    );
                    None
                } else if days.windows(2).any(|w| w[0] >= w[1]) {
                    b.fail(
                        "value_error",
                        "subscription_renewal_retry_days",
                        "Value error, the retry days must be strictly increasing",
                    );
                    None
                } else {
                    Some(days)
                }
            });
        SubscriptionSettingsPatch {
            invoice_lead_days,
            renewal_retry_days,
        }
    }

    pub fn apply(&self, out: &mut OrgSettings) {
        if let Some(n) = self.invoice_lead_days {
            out.subscription_invoice_lead_days = n;
        }
        if let Some(d) = &self.renewal_retry_days {
            out.subscription_renewal_retry_days = d.clone();
        }
    }
}
