//! The cycles a subscription has billed, each with its invoice: what `SubscriptionTx` and
//! `PlanChangeTx` read and write of them. A cycle is issued once (the unique index
//! `subscription_cycles_key`): that is what keeps two renewals of one cycle apart.

use crate::deferred::{Pending, Stage};
use crate::prefetch::ReadAhead;
use crate::support::*;
use billing_model::ids::{InvoiceId, SubscriptionId};
use diesel::prelude::*;
use std::collections::HashMap;

diesel::table! {
    subscription_cycles (subscription_id, cycle_number) {
        subscription_id -> Uuid,
        cycle_number -> Int8,
        invoice_id -> Uuid,
    }
}

/// What a batch's first pass defers of cycles (see `deferred`): new cycles, as (subscription,
/// cycle, invoice).
#[derive(Default)]
pub(crate) struct Deferred {
    cycles: Vec<(Uuid, i64, Uuid)>,
}

impl Pending<PgKind> for Deferred {
    fn is_empty(&self) -> bool {
        self.cycles.is_empty()
    }

    fn send(&mut self, tx: &mut PgTx<'_>, stage: Stage) -> StoreResult<()> {
        if stage != Stage::Inserts {
            return Ok(());
        }
        use subscription_cycles::dsl as y;
        for chunk in std::mem::take(&mut self.cycles).chunks(INSERT_CHUNK) {
            let rows: Vec<_> = chunk
                .iter()
                .map(|(s, n, i)| (y::subscription_id.eq(*s), y::cycle_number.eq(*n), y::invoice_id.eq(*i)))
                .collect();
            tx.change_apart(|c| diesel::insert_into(y::subscription_cycles).values(&rows).execute(c))?;
        }
        Ok(())
    }
}

/// What a renewal batch read ahead of cycles: each subscription's, in order.
#[derive(Default)]
pub(crate) struct Ahead {
    cycles: HashMap<Uuid, Vec<(u32, InvoiceId)>>,
}

impl ReadAhead for Ahead {
    fn is_empty(&self) -> bool {
        self.cycles.is_empty()
    }

    fn forget(&mut self, id: Uuid) {
        self.cycles.remove(&id);
    }
}

impl PgTx<'_> {
    /// Reads ahead the cycles of the subscriptions `ids`, in one statement.
    pub(crate) fn cycles_ahead(&mut self, ids: &[Uuid]) -> StoreResult<Ahead> {
        let rows: Vec<(Uuid, i64, Uuid)> = self.read_apart(|c| {
            use subscription_cycles::dsl as y;
            y::subscription_cycles
                .filter(y::subscription_id.eq_any(ids))
                .order_by((y::subscription_id, y::cycle_number))
                .select((y::subscription_id, y::cycle_number, y::invoice_id))
                .load(c)
        })?;
        let mut ahead = Ahead::default();
        for id in ids {
            ahead.cycles.insert(*id, vec![]);
        }
        for (s, n, i) in rows {
            let n = u32::try_from(n).map_err(|_| unreadable("cycle number", n))?;
            ahead.cycles.entry(s).or_default().push((n, i.into()));
        }
        Ok(ahead)
    }

    /// Records `subscription`'s `cycle`, billed by `invoice` (at the end of a batch's first pass).
    pub(crate) fn insert_cycle(&mut self, subscription: SubscriptionId, cycle: u32, invoice: InvoiceId) -> StoreResult<()> {
        use subscription_cycles::dsl as y;
        self.forget_prefetched(Some(subscription.0));
        if let Some(d) = self.deferred::<Deferred>() {
            d.cycles.push((subscription.0, i64::from(cycle), invoice.0));
            return Ok(());
        }
        self.write(|c| {
            diesel::insert_into(y::subscription_cycles)
                .values((
                    y::subscription_id.eq(subscription.0),
                    y::cycle_number.eq(i64::from(cycle)),
                    y::invoice_id.eq(invoice.0),
                ))
                .execute(c)
        })
        .map(drop)
    }

    /// `subscription`'s cycles, in order, each with its invoice.
    pub(crate) fn cycles_of(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<(u32, InvoiceId)>> {
        use subscription_cycles::dsl as y;
        let rows: Vec<(i64, Uuid)> = self.read(|c| {
            y::subscription_cycles
                .filter(y::subscription_id.eq(subscription.0))
                .order_by(y::cycle_number)
                .select((y::cycle_number, y::invoice_id))
                .load(c)
        })?;
        rows.into_iter().map(|(n, id)| Ok((count_of("cycle_number", n)?, id.into()))).collect()
    }

    /// The invoice of `subscription`'s `cycle`, if it was issued.
    pub(crate) fn cycle_invoice(&mut self, subscription: SubscriptionId, cycle: u32) -> StoreResult<Option<InvoiceId>> {
        use subscription_cycles::dsl as y;
        // Sends what is pending when a cycle of `subscription` is among it.
        if self
            .deferred_ref::<Deferred>()
            .is_some_and(|d| d.cycles.iter().any(|(s, _, _)| *s == subscription.0))
        {
            self.flush()?;
        }
        if let Some(cycles) = self.ahead_ref::<Ahead>().and_then(|a| a.cycles.get(&subscription.0)) {
            return Ok(cycles.iter().find(|(n, _)| *n == cycle).map(|(_, i)| *i));
        }
        let id: Option<Uuid> = self.read_apart(|conn| {
            y::subscription_cycles
                .filter(y::subscription_id.eq(subscription.0))
                .filter(y::cycle_number.eq(i64::from(cycle)))
                .select(y::invoice_id)
                .first(conn)
                .optional()
        })?;
        Ok(id.map(Into::into))
    }

    /// Has `subscription`'s `cycle` billed by `new` instead of `old`; `false` when it was not
    /// `old`'s.
    pub(crate) fn replace_cycle_invoice(&mut self, subscription: SubscriptionId, cycle: u32, old: InvoiceId, new: InvoiceId) -> StoreResult<bool> {
        use subscription_cycles::dsl as y;
        let n = self.write(|conn| {
            diesel::update(
                y::subscription_cycles
                    .filter(y::subscription_id.eq(subscription.0))
                    .filter(y::cycle_number.eq(i64::from(cycle)))
                    .filter(y::invoice_id.eq(old.0)),
            )
            .set(y::invoice_id.eq(new.0))
            .execute(conn)
        })?;
        Ok(n == 1)
    }

    /// Deletes `subscription`'s `cycle` if `invoice` billed it.
    pub(crate) fn delete_cycle(&mut self, subscription: SubscriptionId, cycle: u32, invoice: InvoiceId) -> StoreResult<bool> {
        use subscription_cycles::dsl as y;
        let n = self.write(|conn| {
            diesel::delete(
                y::subscription_cycles
                    .filter(y::subscription_id.eq(subscription.0))
                    .filter(y::cycle_number.eq(i64::from(cycle)))
                    .filter(y::invoice_id.eq(invoice.0)),
            )
            .execute(conn)
        })?;
        Ok(n == 1)
    }
}
