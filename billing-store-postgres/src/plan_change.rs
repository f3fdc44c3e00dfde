//! Subscriptions' plan changes (a target plan, scheduled for a cycle, at most one scheduled
//! per subscription): `billing_model::subscription::PlanChangeTx`, whose cycle lookups are the
//! cycles' (`subscription_cycle`).

use crate::prefetch::ReadAhead;
use crate::support::*;
use billing_model::ids::{InvoiceId, SubscriptionId};
use billing_model::subscription::{PlanChange, PlanChangeStatus, PlanChangeTx};
use diesel::prelude::*;
use std::collections::HashMap;

diesel::table! {
    subscription_plan_changes (id) {
        id -> Uuid,
        subscription_id -> Uuid,
        status -> Text,
        currency -> Text,
        effective_cycle -> Int8,
        effective_at -> Timestamptz,
        body -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

/// A row of `subscription_plan_changes`: the target plan, diff and preview are its `body`.
#[derive(Queryable, Selectable, Insertable, AsChangeset, Debug)]
#[diesel(table_name = subscription_plan_changes, treat_none_as_null = true, treat_none_as_default_value = false)]
pub(crate) struct PlanChangeRow {
    id: Uuid,
    subscription_id: Uuid,
    status: String,
    currency: String,
    effective_cycle: i64,
    effective_at: Ts,
    body: Value,
    created_at: Ts,
    updated_at: Option<Ts>,
}

impl PlanChangeRow {
    fn new(c: &PlanChange) -> StoreResult<Self> {
        Ok(PlanChangeRow {
            id: c.id.0,
            subscription_id: c.subscription_id.0,
            status: c.status.as_str().into(),
            currency: c.currency().code().into(),
            effective_cycle: i64::from(c.effective_cycle),
            effective_at: c.effective_at,
            body: c.body_to_stored()?,
            created_at: c.created_at,
            updated_at: c.updated_at,
        })
    }

    pub(crate) fn into_domain(self) -> StoreResult<PlanChange> {
        PlanChange::from_stored(
            self.id.into(),
            self.subscription_id.into(),
            &self.status,
            currency(&self.currency)?,
            count_of("effective_cycle", self.effective_cycle)?,
            self.effective_at,
            &self.body,
            self.created_at,
            self.updated_at,
        )
        .ok_or_else(|| unreadable("plan change", self.id))
    }
}

/// What a renewal batch read ahead of plan changes: each subscription's scheduled one.
#[derive(Default)]
pub(crate) struct Ahead {
    changes: HashMap<Uuid, Option<PlanChange>>,
}

impl ReadAhead for Ahead {
    fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    fn forget(&mut self, id: Uuid) {
        self.changes.remove(&id);
    }
}

impl PgTx<'_> {
    /// Reads ahead the scheduled plan changes of the subscriptions `ids`, in one statement.
    pub(crate) fn plan_changes_ahead(&mut self, ids: &[Uuid]) -> StoreResult<Ahead> {
        let rows: Vec<PlanChangeRow> = self.read_apart(|c| {
            use subscription_plan_changes::dsl as pc;
            pc::subscription_plan_changes
                .filter(pc::subscription_id.eq_any(ids))
                .filter(pc::status.eq(PlanChangeStatus::Scheduled.as_str()))
                .select(PlanChangeRow::as_select())
                .load(c)
        })?;
        let mut ahead = Ahead::default();
        for id in ids {
            ahead.changes.insert(*id, None);
        }
        for c in rows {
            let c = c.into_domain()?;
            ahead.changes.insert(c.subscription_id.0, Some(c));
        }
        Ok(ahead)
    }
}

impl PlanChangeTx for PgTx<'_> {
    fn insert_plan_change(&mut self, c: &PlanChange) -> StoreResult<()> {
        let row = PlanChangeRow::new(c)?;
        self.write(|conn| diesel::insert_into(subscription_plan_changes::table).values(&row).execute(conn))
            .map(drop)
    }

    fn update_plan_change(&mut self, c: &PlanChange) -> StoreResult<()> {
        use subscription_plan_changes::dsl as pc;
        let row = PlanChangeRow::new(c)?;
        let n = self.write(|conn| diesel::update(pc::subscription_plan_changes.filter(pc::id.eq(row.id))).set(&row).execute(conn))?;
        if n == 0 {
            return Err(StoreError::NotFound("plan change".into()));
        }
        Ok(())
    }

    fn scheduled_plan_change(&mut self, subscription: SubscriptionId) -> StoreResult<Option<PlanChange>> {
        if let Some(found) = self.ahead::<Ahead>().and_then(|a| a.changes.remove(&subscription.0)) {
            return Ok(found);
        }
        use subscription_plan_changes::dsl as pc;
        let row: Option<PlanChangeRow> = self.read_apart(|conn| {
            pc::subscription_plan_changes
                .filter(pc::subscription_id.eq(subscription.0))
                .filter(pc::status.eq(PlanChangeStatus::Scheduled.as_str()))
                .select(PlanChangeRow::as_select())
                .first(conn)
                .optional()
        })?;
        row.map(PlanChangeRow::into_domain).transpose()
    }

    fn plan_changes(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<PlanChange>> {
        use subscription_plan_changes::dsl as pc;
        let rows: Vec<PlanChangeRow> = self.read_apart(|conn| {
            pc::subscription_plan_changes
                .filter(pc::subscription_id.eq(subscription.0))
                .order_by((pc::created_at, pc::id))
                .select(PlanChangeRow::as_select())
                .load(conn)
        })?;
        rows.into_iter().map(PlanChangeRow::into_domain).collect()
    }

    fn subscription_cycle_invoice(&mut self, subscription: SubscriptionId, cycle: u32) -> StoreResult<Option<InvoiceId>> {
        self.cycle_invoice(subscription, cycle)
    }

    fn replace_subscription_cycle_invoice(&mut self, subscription: SubscriptionId, cycle: u32, old: InvoiceId, new: InvoiceId) -> StoreResult<bool> {
        self.replace_cycle_invoice(subscription, cycle, old, new)
    }

    fn delete_subscription_cycle(&mut self, subscription: SubscriptionId, cycle: u32, invoice: InvoiceId) -> StoreResult<bool> {
        self.delete_cycle(subscription, cycle, invoice)
    }
}
