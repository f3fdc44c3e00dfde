//! Freeze periods' operations ([`Freezes`]): create, list, update, delete. Each is one
//! transaction that first applies the transitions already due ([`super::catch_up`]).

use super::*;
use crate::auth::Scope;
use crate::clock::{format_rfc3339, Timestamp};
use crate::engine::Engine;
use crate::error::{Code, Error, Result};
use crate::event::EventType;
use crate::ids::{FreezeId, SubscriptionId};
use crate::lane::Lane;
use crate::list::{ListQuery, Page};
use crate::store::{Store, Tx};

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const CREATE: Lane = Lane::Write;
    pub const LIST: Lane = Lane::Read;
    pub const UPDATE: Lane = Lane::Write;
    pub const DELETE: Lane = Lane::Write;
}

crate::service!(
    /// A subscription's freeze periods: create, list, update, delete. Each is one transaction.
    Freezes
);

impl<S: Store> Freezes<'_, S> {
    /// `POST /subscriptions/{id}/freeze`: a new freeze period (see the module's rules). It starts
    /// at once when its start is now (SUBSCRIPTION_FROZEN then SUBSCRIPTION_FREEZE_NOW), or at its
    /// start (SUBSCRIPTION_FROZEN now).
    pub fn create(&self, scope: &Scope, id: SubscriptionId, req: FreezeRequest) -> Result<Freeze> {
        let now = self.now(scope);
        let url = self.public_url();
        self.store.write(|tx| {
            let mut s = self.freeze_target(tx, scope, id, now)?;
            if !matches!(s.status, SubscriptionStatus::Active | SubscriptionStatus::Frozen) {
                return Err(Error::rule(
                    Code::INVALID_STATUS,
                    format!("Subscription '{id}' is {}: only an ACTIVE or FROZEN subscription can be frozen", s.status),
                ));
            }
            let start = start_at(now, req.start)?;
            let end = end_at(start, req.end)?;
            refuse_overlap(&tx.subscription_freezes(id)?, None, start, end)?;
            let mut f = Freeze {
                id: FreezeId::new(),
                org_id: s.org_id,
                branch_id: s.branch_id,
                subscription_id: s.id,
                start,
                end,
                notes: req.notes.clone().flatten(),
                invoice_id: s.latest_invoice_id,
                state: FreezeState::Scheduled,
                deleted_at: None,
                created_at: now,
                updated_at: None,
            };
            tx.insert_freeze(&f)?;
            self.withdraw_moved_invoice(tx, scope, &s, &f)?;
            emit_freeze(tx, url, EventType::SubscriptionFrozen, &s, &f, now)?;
            if start <= now {
                begin(tx, url, &mut s, &mut f, now)?;
            } else {
                queue(tx, &f, FREEZE_START_KIND, start)?;
            }
            if let Some(end) = end {
                queue(tx, &f, FREEZE_END_KIND, end)?;
            }
            Ok(f)
        })
    }

    /// `GET /subscriptions/{id}/freeze`: the subscription's freezes (not the deleted ones), paged
    /// and sorted (default `created_at` descending).
    pub fn list(&self, scope: &Scope, id: SubscriptionId, q: &ListQuery<FreezeSort>) -> Result<Page<Freeze>> {
        self.store.read(|tx| {
            tx.subscription(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Subscription", id))?;
            let mut all = tx.subscription_freezes(id)?;
            sort_freezes(&mut all, q);
            let total = all.len() as u64;
            let items = all.into_iter().skip(q.offset() as usize).take(q.limit as usize).collect();
            Ok(Page {
                items,
                total,
                page: q.page,
                limit: q.limit,
            })
        })
    }

    /// `PUT /subscriptions/{id}/freeze/{freeze_id}`: new dates (and notes, when sent).
    ///
    /// - Not started: as a new freeze (the same checks, overlaps with the others refused);
    ///   SUBSCRIPTION_FROZEN, and SUBSCRIPTION_FREEZE_NOW when it now starts at once.
    /// - In force: the start stays (a different one, beyond [`NOW_GRACE`], is a 422). A future
    ///   end: SUBSCRIPTION_UNFREEZE_FUTURE; an end now (within the grace): it ends now,
    ///   SUBSCRIPTION_UNFREEZE_NOW; no end: SUBSCRIPTION_FROZEN; an end in the past: 422.
    /// - Ended: 400 `INVALID_STATUS`.
    pub fn update(&self, scope: &Scope, id: SubscriptionId, freeze: FreezeId, req: FreezeRequest) -> Result<Freeze> {
        let now = self.now(scope);
        let url = self.public_url();
        self.store.write(|tx| {
            let mut s = self.freeze_target(tx, scope, id, now)?;
            let mut f = self.load_freeze(tx, &s, freeze)?;
            if s.status.is_terminal() || f.state == FreezeState::Ended {
                return Err(Error::rule(
                    Code::INVALID_STATUS,
                    format!("Freeze '{freeze}' is over: a freeze that ended cannot be changed"),
                ));
            }
            if let Some(notes) = &req.notes {
                f.notes = notes.clone();
            }
            f.updated_at = Some(now);
            let others = tx.subscription_freezes(id)?;
            if f.state == FreezeState::Scheduled {
                let start = start_at(now, req.start)?;
                let end = end_at(start, req.end)?;
                refuse_overlap(&others, Some(f.id), start, end)?;
                f.start = start;
                f.end = end;
                tx.update_freeze(&f)?;
                self.withdraw_moved_invoice(tx, scope, &s, &f)?;
                emit_freeze(tx, url, EventType::SubscriptionFrozen, &s, &f, now)?;
                match end {
                    Some(end) => queue(tx, &f, FREEZE_END_KIND, end)?,
                    None => unqueue(tx, &f, FREEZE_END_KIND)?,
                }
                if start <= now {
                    begin(tx, url, &mut s, &mut f, now)?;
                } else {
                    queue(tx, &f, FREEZE_START_KIND, start)?;
                    if s.status == SubscriptionStatus::Active {
                        // A renewal held by the freeze's old dates may be due now.
                        requeue_renewal(tx, &s)?;
                    }
                }
                return Ok(f);
            }
            // In force.
            if (req.start - f.start).abs() > NOW_GRACE {
                return Err(field_error(
                    "freeze_start_datetime",
                    format!("the freeze is in force since {}: its start cannot change", format_rfc3339(&f.start)),
                ));
            }
            match req.end {
                None => {
                    refuse_overlap(&others, Some(f.id), f.start, None)?;
                    f.end = None;
                    tx.update_freeze(&f)?;
                    unqueue(tx, &f, FREEZE_END_KIND)?;
                    emit_freeze(tx, url, EventType::SubscriptionFrozen, &s, &f, now)?;
                }
                Some(end) if end < now - NOW_GRACE => {
                    return Err(field_error(
                        "freeze_end_datetime",
                        format!("a freeze cannot end in the past (it is {} now)", format_rfc3339(&now)),
                    ));
                }
                Some(end) if end <= now => finish(tx, url, &mut s, &mut f, now, now)?,
                Some(end) => {
                    let end = end_at(f.start, Some(end))?;
                    refuse_overlap(&others, Some(f.id), f.start, end)?;
                    f.end = end;
                    tx.update_freeze(&f)?;
                    queue(tx, &f, FREEZE_END_KIND, end.expect("checked"))?;
                    emit_freeze(tx, url, EventType::SubscriptionUnfreezeFuture, &s, &f, now)?;
                }
            }
            Ok(f)
        })
    }

    /// `DELETE /subscriptions/{id}/freeze/{freeze_id}`. Not started: dropped (no longer listed),
    /// SUBSCRIPTION_FREEZE_CANCEL. In force: it ends now (it stays listed, as a freeze that
    /// happened), the subscription is ACTIVE again and its next invoice is issued at the period
    /// end moved by the time it was frozen, SUBSCRIPTION_UNFREEZE_NOW. Ended: 400
    /// `INVALID_STATUS`.
    pub fn delete(&self, scope: &Scope, id: SubscriptionId, freeze: FreezeId) -> Result<()> {
        let now = self.now(scope);
        let url = self.public_url();
        self.store.write(|tx| {
            let mut s = self.freeze_target(tx, scope, id, now)?;
            let mut f = self.load_freeze(tx, &s, freeze)?;
            match f.state {
                FreezeState::Ended => Err(Error::rule(
                    Code::INVALID_STATUS,
                    format!("Freeze '{freeze}' is over: a freeze that ended cannot be deleted"),
                )),
                FreezeState::Scheduled => {
                    f.deleted_at = Some(now);
                    f.updated_at = Some(now);
                    tx.update_freeze(&f)?;
                    unqueue(tx, &f, FREEZE_START_KIND)?;
                    unqueue(tx, &f, FREEZE_END_KIND)?;
                    emit_freeze(tx, url, EventType::SubscriptionFreezeCancel, &s, &f, now)?;
                    if s.status == SubscriptionStatus::Active {
                        requeue_renewal(tx, &s)?;
                    }
                    Ok(())
                }
                FreezeState::InForce => finish(tx, url, &mut s, &mut f, now, now),
            }
        })
    }
}

impl<S: Store> Engine<S> {
    fn freeze_target(&self, tx: &mut dyn Tx, scope: &Scope, id: SubscriptionId, now: Timestamp) -> Result<Subscription> {
        let mut s = tx.subscription(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Subscription", id))?;
        catch_up(tx, self.public_url(), &mut s, now)?;
        Ok(s)
    }

    fn load_freeze(&self, tx: &mut dyn Tx, s: &Subscription, id: FreezeId) -> Result<Freeze> {
        tx.freeze(s.branch_id, id)?
            .filter(|f| f.subscription_id == s.id && f.deleted_at.is_none())
            .ok_or_else(|| not_found(id))
    }

    /// A freeze starting before the current period's end, or at it, moves that end: a
    /// next-cycle invoice prepared ahead for the old end is voided (if still open) and its cycle
    /// freed; the freeze's end prepares it again for the moved one.
    fn withdraw_moved_invoice(&self, tx: &mut dyn Tx, scope: &Scope, s: &Subscription, f: &Freeze) -> Result<()> {
        if f.start <= s.current_period_end {
            self.withdraw_cycle_invoice(tx, scope, s, s.current_cycle_number + 1)?;
        }
        Ok(())
    }
}
