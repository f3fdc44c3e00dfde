//! Freeze periods: a span of time during which a subscription is not billed.
//!
//! A freeze runs from `freeze_start_datetime` to `freeze_end_datetime` (none: until it is ended
//! by an update or a delete). While it is in force the subscription is FROZEN and no invoice is
//! issued; when it ends the subscription is ACTIVE again by itself.
//!
//! **What a freeze does to the period boundaries: time stops.** The period in which a freeze
//! falls is extended by the time the subscription was frozen (end − start; for a freeze ended
//! early, the time until then), so the consumer keeps every day paid for; the next cycle starts
//! at that moved period end, and the cycles are re-anchored there: they follow the calendar from
//! the moved end as they followed `period_start` before (monthly: the same day of the month,
//! clamped in shorter months, without drift; a subscription billed on the 1st and frozen for 10
//! days is billed on the 11th from then on). A boundary that falls inside a freeze is never
//! billed there: the renewal due at it waits ([`holds_renewal`]) and happens at the moved
//! boundary. Cycle numbers go on (a freeze adds no cycle and skips none), so
//! `until_cycle_number` still counts billed cycles.
//!
//! Rules:
//! - Only an ACTIVE or FROZEN subscription takes a new freeze (a FROZEN one: a later,
//!   non-overlapping freeze); any other status is 400 `INVALID_STATUS`.
//! - A start earlier than now by more than [`NOW_GRACE`] is a 422; a start within it means now
//!   (the freeze starts at once). An end at or before the start is a 422. At most
//!   [`MAX_DAYS`] days ahead, and at most that long.
//! - Freezes of one subscription never overlap (an open end overlaps everything after the
//!   start): 400 `FREEZE_OVERLAP`.
//! - Starting and ending are items of the due-work queue ([`FREEZE_START_KIND`],
//!   [`FREEZE_END_KIND`]), due at the freeze's start and end in the organization's time, done
//!   once whichever process runs them (each transition changes the freeze's state in the
//!   transaction that completes the item). Every operation on a subscription's freezes first
//!   applies the transitions already due ([`catch_up`]), so an answer never depends on how late
//!   the background work runs.
//!
//! Events (subscription events with `data.freeze`, the FreezeSubscriptionBase):
//! - `SUBSCRIPTION_FROZEN`: a freeze was created, or a freeze's dates were changed while it
//!   had not started (or its end was removed while in force).
//! - `SUBSCRIPTION_FREEZE_NOW`: a freeze came into force (the subscription is FROZEN now), at
//!   its start or at once when created or moved to start now.
//! - `SUBSCRIPTION_UNFREEZE_NOW`: a freeze in force ended (the subscription is ACTIVE again):
//!   at its end, or at once by a delete or an update ending it now.
//! - `SUBSCRIPTION_UNFREEZE_FUTURE`: a freeze in force was given a (new) end in the future.
//! - `SUBSCRIPTION_FREEZE_CANCEL`: a freeze that had not started was deleted.

use super::SubscriptionId;
use crate::clock::{format_rfc3339, parse_datetime, Timestamp};
use crate::error::StoreResult;
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::{BranchId, FreezeId, InvoiceId, OrgId};
use crate::list::{Direction, ListQuery, Query, QueryParams};
use crate::wire::{Body, MAX_NOTE};
use crate::wire_enum;
use chrono::Duration;
use serde_json::Value;

/// How far in the past a start (or an end of a freeze in force) may be and still mean "now":
/// a client's clock and the request's travel make "now" arrive a little late.
pub const NOW_GRACE: Duration = Duration::minutes(5);
/// A freeze starts at most this many days ahead and lasts at most this long.
pub const MAX_DAYS: i64 = 3650;

wire_enum!(
    /// Where a freeze is in its life.
    FreezeState {
        Scheduled = "SCHEDULED",
        InForce = "IN_FORCE",
        Ended = "ENDED",
    }
);

wire_enum!(FreezeSort {
    CreatedAt = "created_at",
    UpdatedAt = "updated_at",
    Start = "freeze_start_datetime",
    End = "freeze_end_datetime",
});

#[derive(Debug, Clone, PartialEq)]
pub struct Freeze {
    pub id: FreezeId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub subscription_id: SubscriptionId,
    pub start: Timestamp,
    /// `None`: until ended by an update or a delete. Once ENDED, when it actually ended.
    pub end: Option<Timestamp>,
    pub notes: Option<String>,
    /// The subscription's latest invoice when the freeze was made, then when it came into
    /// force: the invoice of the period the freeze extends.
    pub invoice_id: Option<InvoiceId>,
    pub state: FreezeState,
    /// A freeze deleted before it started: kept, but no longer listed or counted.
    pub deleted_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

impl Freeze {
    /// Whether `[start, end)` (an open end: forever) overlaps this freeze.
    pub fn overlaps(&self, start: Timestamp, end: Option<Timestamp>) -> bool {
        let before = |a: Timestamp, b: Option<Timestamp>| b.is_none_or(|b| a < b);
        before(start, self.end) && before(self.start, end)
    }

    /// Whether the instant `t` is inside this freeze.
    pub fn covers(&self, t: Timestamp) -> bool {
        self.start <= t && self.end.is_none_or(|e| t < e)
    }

    /// Its length in whole days, rounded up; `None` while it has no end.
    pub fn duration_days(&self) -> Option<i64> {
        Some(ceil_days(self.end? - self.start))
    }
}

/// FreezeSubscriptionCreateRequest / FreezeSubscriptionUpdateRequest, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct FreezeRequest {
    pub start: Timestamp,
    pub end: Option<Timestamp>,
    /// `None`: not sent (an update keeps the notes); `Some(None)`: `null` (cleared).
    pub notes: Option<Option<String>>,
}

impl FreezeRequest {
    /// FreezeSubscriptionCreateRequest: `freeze_start_datetime` required, `freeze_end_datetime`
    /// optional (none: open-ended), `notes` optional.
    pub fn parse_create(v: &Value) -> Result<Self> {
        Self::parse(v, false)
    }

    /// FreezeSubscriptionUpdateRequest: both dates required (the end may be `null`).
    pub fn parse_update(v: &Value) -> Result<Self> {
        Self::parse(v, true)
    }

    fn parse(v: &Value, end_required: bool) -> Result<Self> {
        let mut b = Body::new(v);
        let date = |s: &str| parse_datetime(s).ok_or("invalid date-time");
        let start = if b.raw("freeze_start_datetime").is_none() {
            b.missing("freeze_start_datetime");
            None
        } else {
            b.opt_parsed("freeze_start_datetime", date)
        };
        if end_required && !b.present("freeze_end_datetime") {
            b.missing("freeze_end_datetime");
        }
        let end = b.opt_parsed("freeze_end_datetime", date);
        let notes = if b.present("notes") { Some(b.opt_free_text("notes", MAX_NOTE)) } else { None };
        if let (Some(s), Some(e)) = (start, end) {
            if e <= s {
                b.fail(
                    "value_error",
                    "freeze_end_datetime",
                    "Value error, freeze_end_datetime must be after freeze_start_datetime",
                );
            }
        }
        b.finish()?;
        Ok(FreezeRequest {
            start: start.expect("checked"),
            end,
            notes,
        })
    }
}

/// `GET /subscriptions/{id}/freeze`: page, limit, sort_field (created_at, updated_at,
/// freeze_start_datetime, freeze_end_datetime), sort_direction.
pub fn parse_freeze_list(params: &QueryParams) -> Result<ListQuery<FreezeSort>> {
    let mut q = Query::new(params);
    let list = q.list(FreezeSort::CreatedAt, FreezeSort::parse, &FreezeSort::expected());
    q.finish()?;
    Ok(list)
}

/// Freeze reads and writes inside one transaction (part of [`crate::store::Tx`]).
///
/// - `freeze` finds a freeze of `branch` (deleted ones too: the caller looks at `deleted_at`).
/// - `update_freeze` replaces every stored field (a missing row is `StoreError::NotFound`).
/// - `subscription_freezes` lists a subscription's freezes that are not deleted, by start,
///   then id.
pub trait FreezeTx {
    fn insert_freeze(&mut self, f: &Freeze) -> StoreResult<()>;
    fn freeze(&mut self, branch: BranchId, id: FreezeId) -> StoreResult<Option<Freeze>>;
    fn update_freeze(&mut self, f: &Freeze) -> StoreResult<()>;
    fn subscription_freezes(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<Freeze>>;
}

/// What SubscriptionDetailed shows as `latest_freeze` of `all` (a subscription's freezes by
/// start): the freeze in force, else the next one scheduled, else the one that ended last.
pub fn pick_latest(all: &[Freeze]) -> Option<&Freeze> {
    all.iter()
        .find(|f| f.state == FreezeState::InForce)
        .or_else(|| all.iter().find(|f| f.state == FreezeState::Scheduled))
        .or_else(|| all.iter().rev().find(|f| f.state == FreezeState::Ended))
}

/// A duration in whole days, rounded up (a negative one is 0).
pub fn ceil_days(d: Duration) -> i64 {
    let us = d.num_microseconds().unwrap_or(i64::MAX).max(0) as u64;
    us.div_ceil(86_400_000_000) as i64
}

pub fn field_error(field: &str, msg: impl Into<String>) -> Error {
    Error::invalid(FieldError::body("value_error", field, format!("Value error, {}", msg.into())))
}

/// The start a request asks for, checked against now: not in the past (beyond the grace,
/// which means now), not too far ahead.
pub fn start_at(now: Timestamp, start: Timestamp) -> Result<Timestamp> {
    if start < now - NOW_GRACE {
        return Err(field_error(
            "freeze_start_datetime",
            format!("a freeze cannot start in the past (it is {} now)", format_rfc3339(&now)),
        ));
    }
    if start > now + Duration::days(MAX_DAYS) {
        return Err(field_error("freeze_start_datetime", format!("a freeze starts at most {MAX_DAYS} days ahead")));
    }
    Ok(start.max(now))
}

pub fn end_at(start: Timestamp, end: Option<Timestamp>) -> Result<Option<Timestamp>> {
    let Some(end) = end else { return Ok(None) };
    if end <= start {
        return Err(field_error("freeze_end_datetime", "freeze_end_datetime must be after the freeze's start"));
    }
    if end - start > Duration::days(MAX_DAYS) {
        return Err(field_error("freeze_end_datetime", format!("a freeze lasts at most {MAX_DAYS} days")));
    }
    Ok(Some(end))
}

pub fn refuse_overlap(others: &[Freeze], except: Option<FreezeId>, start: Timestamp, end: Option<Timestamp>) -> Result<()> {
    if let Some(o) = others.iter().find(|o| Some(o.id) != except && o.overlaps(start, end)) {
        let until = o.end.as_ref().map_or("no end".to_string(), format_rfc3339);
        return Err(Error::rule(
            Code::FREEZE_OVERLAP,
            format!("it overlaps freeze '{}' ({} to {until})", o.id, format_rfc3339(&o.start)),
        ));
    }
    Ok(())
}

pub fn sort_freezes(all: &mut [Freeze], q: &ListQuery<FreezeSort>) {
    all.sort_by(|a, b| {
        let by = match q.sort {
            FreezeSort::CreatedAt => a.created_at.cmp(&b.created_at),
            // A missing value sorts first ascending (so last descending).
            FreezeSort::UpdatedAt => a.updated_at.cmp(&b.updated_at),
            FreezeSort::Start => a.start.cmp(&b.start),
            FreezeSort::End => a.end.cmp(&b.end),
        };
        let o = by.then(a.id.cmp(&b.id));
        if q.direction == Direction::Desc {
            o.reverse()
        } else {
            o
        }
    });
}

/// The documents of the freeze requests (their fields as [`FreezeRequest`]'s readers read them).
pub mod request {
    use super::FreezeSort;
    use crate::schema::{DateTime, NullableDateTime};
    use schemars::JsonSchema;

    /// FreezeSubscriptionCreateRequest: a new freeze period of an ACTIVE or FROZEN subscription.
    #[derive(JsonSchema)]
    pub struct FreezeSubscriptionCreateRequest {
        /// When it starts: now (within 5 minutes of now) or later, at most 3650 days ahead.
        pub freeze_start_datetime: DateTime,
        /// When it ends (after the start); absent or `null`: until ended by an update or a delete.
        pub freeze_end_datetime: Option<DateTime>,
        /// The merchant's note.
        pub notes: Option<String>,
    }

    /// FreezeSubscriptionUpdateRequest: new dates (and notes, when sent) for a freeze.
    #[derive(JsonSchema)]
    pub struct FreezeSubscriptionUpdateRequest {
        /// When it starts (a freeze in force keeps its start).
        pub freeze_start_datetime: DateTime,
        /// `null`: open-ended.
        pub freeze_end_datetime: NullableDateTime,
        /// The merchant's note (`null` clears it; absent keeps it).
        pub notes: Option<String>,
    }

    crate::list_query! {
        /// A subscription's freezes (not the deleted ones).
        FreezeListQuery(FreezeSort) {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    fn ts(s: &str) -> crate::clock::Timestamp {
        crate::clock::parse_datetime(s).unwrap()
    }

    fn f(start: &str, end: Option<&str>) -> Freeze {
        Freeze {
            id: FreezeId::new(),
            org_id: OrgId::new(),
            branch_id: BranchId::new(),
            subscription_id: SubscriptionId::new(),
            start: ts(start),
            end: end.map(ts),
            notes: None,
            invoice_id: None,
            state: FreezeState::Scheduled,
            deleted_at: None,
            created_at: ts(start),
            updated_at: None,
        }
    }

    #[test]
    fn overlaps_and_covers_are_half_open() {
        let a = f("2027-02-01T00:00:00Z", Some("2027-02-10T00:00:00Z"));
        assert!(a.overlaps(ts("2027-02-09T23:59:59Z"), Some(ts("2027-03-01T00:00:00Z"))));
        assert!(!a.overlaps(ts("2027-02-10T00:00:00Z"), None), "touching is not overlapping");
        assert!(!a.overlaps(ts("2027-01-01T00:00:00Z"), Some(ts("2027-02-01T00:00:00Z"))));
        assert!(a.overlaps(ts("2027-01-01T00:00:00Z"), None));
        let open = f("2027-02-01T00:00:00Z", None);
        assert!(open.overlaps(ts("2030-01-01T00:00:00Z"), Some(ts("2030-01-02T00:00:00Z"))));
        assert!(a.covers(ts("2027-02-01T00:00:00Z")) && !a.covers(ts("2027-02-10T00:00:00Z")));
        assert_eq!(a.duration_days(), Some(9));
        assert_eq!(f("2027-02-01T00:00:00Z", Some("2027-02-02T00:00:01Z")).duration_days(), Some(2));
        assert_eq!(open.duration_days(), None);
    }

    #[test]
    fn requests() {
        let ok = FreezeRequest::parse_create(&json!({"freeze_start_datetime": "2027-02-01T00:00:00+03:00"})).unwrap();
        assert_eq!((ok.start, ok.end, ok.notes), (ts("2027-01-31T21:00:00Z"), None, None));
        let locs = |v: Value, update: bool| match if update {
            FreezeRequest::parse_update(&v)
        } else {
            FreezeRequest::parse_create(&v)
        } {
            Err(Error::Validation(d)) => d.iter().map(|e| serde_json::to_value(&e.loc).unwrap()).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(locs(json!({}), false), vec![json!(["body", "freeze_start_datetime"])]);
        assert_eq!(
            locs(json!({"freeze_start_datetime": "2027-02-01T00:00:00Z"}), true),
            vec![json!(["body", "freeze_end_datetime"])]
        );
        assert_eq!(
            locs(
                json!({"freeze_start_datetime": "2027-02-01T00:00:00Z", "freeze_end_datetime": "2027-02-01T00:00:00Z"}),
                false
            ),
            vec![json!(["body", "freeze_end_datetime"])]
        );
        assert_eq!(
            locs(json!({"freeze_start_datetime": "soon", "notes": 5}), false),
            vec![json!(["body", "freeze_start_datetime"]), json!(["body", "notes"])]
        );
        assert_eq!(locs(json!([1]), false), vec![json!(["body"])]);
        let upd = FreezeRequest::parse_update(&json!({"freeze_start_datetime": "2027-02-01T00:00:00Z", "freeze_end_datetime": null, "notes": null})).unwrap();
        assert_eq!((upd.end, upd.notes), (None, Some(None)));
    }
}
