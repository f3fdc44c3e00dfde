//! The store side of delivery attempts, shared by the attempts in flight: each attempt reads
//! its delivery before the call and records its outcome after it, and attempts that do so at
//! the same time share one statement and one transaction ([`Batcher`]). Under load that is a
//! few round trips per batch of attempts rather than about six per attempt; a lone attempt
//! still runs at once.
//!
//! Recording keeps the guarantees of one attempt alone: the outcome is written only if the
//! item's lease is still the one it was claimed with, checked by the statement that completes
//! or reschedules the item, in the transaction that writes the delivery. An attempt whose
//! lease was lost gets `LeaseLost` and writes nothing; the others in its batch are kept.

use super::batches::{Made, Mode};
use super::{Attempt, Delivery, DeliveryContext, DeliveryStatus, RESPONSE_EXCERPT_CHARS, RETRY_DELAYS_MINUTES};
use crate::clock::{format_rfc3339, Timestamp};
use crate::engine::Engine;
use crate::error::{Error, Result, StoreError};
use crate::ids::{OrgId, WorkId};
use crate::store::{Store, Tx};
use crate::work::Reschedule;
use chrono::Duration;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// What happens to the item once the attempt is recorded.
enum Next {
    Complete,
    Reschedule(Timestamp),
}

fn batch_failed() -> Error {
    StoreError::backend("the batch of webhook attempts this one was in failed").into()
}

/// What the log keeps of a response body: the first characters of a 2xx, 4xx or 5xx answer.
/// A 1xx or 3xx answer's body is not kept (a redirect's body can carry what an internal
/// service at its target said).
fn excerpt(status: Option<u16>, s: &str) -> Option<String> {
    let kept = status.is_some_and(|c| (200..300).contains(&c) || (400..600).contains(&c));
    if s.is_empty() || !kept {
        return None;
    }
    Some(s.chars().take(RESPONSE_EXCERPT_CHARS).collect())
}

/// The delivery with the attempt added, and what becomes of its item; `offset` is the
/// organization's clock offset (its times are organization times).
fn settle(m: &Made, offset: Duration) -> (Delivery, Next) {
    let mut d = m.delivery.clone();
    let ok = m.outcome.succeeded();
    let now = m.ended + offset;
    // The attempt's time is when it started; retries count from it.
    let at = (m.started + offset).min(now);
    let manual = matches!(m.mode, Mode::Manual { .. });
    d.attempts.push(Attempt {
        number: d.attempts.len() as u32 + 1,
        at: format_rfc3339(&at),
        response_status: m.outcome.status,
        response_body: excerpt(m.outcome.status, &m.outcome.body),
        error: m
            .outcome
            .error
            .clone()
            .or_else(|| (!ok).then(|| format!("HTTP status {}", m.outcome.status.unwrap_or(0)))),
        duration_ms: m.outcome.duration.as_millis() as u64,
        manual,
    });
    d.updated_at = now;
    if ok {
        d.status = DeliveryStatus::Delivered;
        d.next_attempt_at = None;
        return (d, Next::Complete);
    }
    let next = match m.mode {
        Mode::Manual { prior_due: Some(due) } => {
            d.next_attempt_at = Some(due);
            Next::Reschedule(due)
        }
        Mode::Manual { prior_due: None } => Next::Complete,
        Mode::Scheduled => {
            let scheduled = d.attempts.iter().filter(|a| !a.manual).count();
            match RETRY_DELAYS_MINUTES.get(scheduled - 1) {
                Some(minutes) => {
                    let next = at + Duration::minutes(*minutes);
                    d.status = DeliveryStatus::Retrying;
                    d.next_attempt_at = Some(next);
                    Next::Reschedule(next)
                }
                None => {
                    d.status = DeliveryStatus::Failed;
                    d.next_attempt_at = None;
                    Next::Complete
                }
            }
        }
    };
    (d, next)
}

/// Records `made` in `tx`: one read per organization (its clock offset), one statement
/// completing the items, one rescheduling those to retry, one updating the deliveries whose
/// lease held. Says, for each attempt, whether it was kept (its lease held).
fn record_in(tx: &mut dyn Tx, made: &[Made]) -> Result<Vec<bool>> {
    let mut offsets: HashMap<OrgId, Duration> = HashMap::new();
    let mut settled = Vec::with_capacity(made.len());
    for m in made {
        let org = m.delivery.org_id;
        let offset = match offsets.get(&org) {
            Some(o) => *o,
            None => {
                let o = Duration::microseconds(tx.org(org)?.map(|o| o.clock_offset_us).unwrap_or(0));
                *offsets.entry(org).or_insert(o)
            }
        };
        settled.push(settle(m, offset));
    }
    let lease = |m: &Made| (m.item.id, m.item.leased_until);
    let mut completes = Vec::new();
    let mut reschedules = Vec::new();
    for (m, (_, next)) in made.iter().zip(&settled) {
        match next {
            Next::Complete => completes.push(lease(m)),
            Next::Reschedule(due) => reschedules.push(Reschedule {
                id: m.item.id,
                lease: m.item.leased_until,
                due_at: *due,
            }),
        }
    }
    let mut held: HashSet<(WorkId, Option<Timestamp>)> = HashSet::new();
    if !completes.is_empty() {
        held.extend(tx.complete_works(&completes)?);
    }
    if !reschedules.is_empty() {
        held.extend(tx.reschedule_works(&reschedules)?);
    }
    let kept: Vec<bool> = made.iter().map(|m| held.contains(&lease(m))).collect();
    let updates: Vec<Delivery> = settled.into_iter().zip(&kept).filter(|(_, k)| **k).map(|((d, _), _)| d).collect();
    if !updates.is_empty() {
        tx.update_webhook_deliveries(&updates)?;
    }
    Ok(kept)
}

impl<S: Store> Engine<S> {
    /// What an attempt of delivery `id` needs (see [`super::WebhookTx::webhook_delivery_context`]),
    /// read together with the other attempts starting now.
    pub(crate) fn delivery_context(&self, id: Uuid) -> Result<Option<DeliveryContext>> {
        self.attempt_batches.contexts.run(
            id,
            |ids| match self.store.read_one(|tx| Ok(tx.webhook_delivery_contexts(&ids)?)) {
                Ok(found) => {
                    let by_id: HashMap<Uuid, &DeliveryContext> = found.iter().map(|c| (c.0.id, c)).collect();
                    // An id may come twice (an expired claim and its successor): each gets it.
                    ids.iter().map(|id| Ok(by_id.get(id).map(|c| (*c).clone()))).collect()
                }
                Err(e) => ids.iter().map(|_| Err(e.clone())).collect(),
            },
            || Err(batch_failed()),
        )
    }

    /// Records an attempt made (with the other attempts ending now): `Some(success)`, or
    /// `LeaseLost` when the item's lease was lost and nothing was written.
    pub(crate) fn record_attempt(&self, made: Made) -> Result<Option<bool>> {
        self.attempt_batches
            .records
            .run(made, |batch| self.record_attempts(&batch), || Err(batch_failed()))
    }

    /// Records a batch in one transaction. When that fails, each attempt is recorded alone, so
    /// that one bad attempt holds up only itself.
    pub(crate) fn record_attempts(&self, made: &[Made]) -> Vec<Result<Option<bool>>> {
        let answer = |m: &Made, kept: bool| match kept {
            true => Ok(Some(m.outcome.succeeded())),
            false => Err(StoreError::LeaseLost(m.item.id).into()),
        };
        match self.store.write_leased(|tx| record_in(tx, made)) {
            Ok(kept) => made.iter().zip(kept).map(|(m, k)| answer(m, k)).collect(),
            Err(e) if made.len() == 1 => vec![Err(e)],
            Err(_) => made
                .iter()
                .map(|m| {
                    let kept = self.store.write_leased(|tx| record_in(tx, std::slice::from_ref(m)))?;
                    answer(m, kept[0])
                })
                .collect(),
        }
    }
}
