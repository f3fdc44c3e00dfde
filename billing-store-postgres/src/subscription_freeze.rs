//! Freeze periods and trials of subscriptions: `billing_model::subscription::{FreezeTx, TrialTx}`.

use crate::prefetch::ReadAhead;
use crate::support::*;
use billing_model::ids::{BranchId, FreezeId, SubscriptionId};
use billing_model::subscription::*;
use diesel::prelude::*;
use std::collections::HashMap;

diesel::table! {
    subscription_freezes (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        subscription_id -> Uuid,
        starts_at -> Timestamptz,
        ends_at -> Nullable<Timestamptz>,
        notes -> Nullable<Text>,
        invoice_id -> Nullable<Uuid>,
        state -> Text,
        deleted_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    subscription_trials (subscription_id) {
        subscription_id -> Uuid,
        starts_at -> Timestamptz,
        ends_at -> Timestamptz,
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset, Debug)]
#[diesel(table_name = subscription_freezes, check_for_backend(diesel::pg::Pg), treat_none_as_null = true)]
pub struct FreezeRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub subscription_id: Uuid,
    pub starts_at: Ts,
    pub ends_at: Option<Ts>,
    pub notes: Option<String>,
    pub invoice_id: Option<Uuid>,
    pub state: String,
    pub deleted_at: Option<Ts>,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl FreezeRow {
    fn new(f: &Freeze) -> Self {
        FreezeRow {
            id: f.id.0,
            org_id: f.org_id.0,
            branch_id: f.branch_id.0,
            subscription_id: f.subscription_id.0,
            starts_at: f.start,
            ends_at: f.end,
            notes: f.notes.clone(),
            invoice_id: f.invoice_id.map(|x| x.0),
            state: f.state.as_str().into(),
            deleted_at: f.deleted_at,
            created_at: f.created_at,
            updated_at: f.updated_at,
        }
    }

    pub(crate) fn into_domain(self) -> StoreResult<Freeze> {
        Ok(Freeze {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            subscription_id: self.subscription_id.into(),
            start: self.starts_at,
            end: self.ends_at,
            notes: self.notes,
            invoice_id: self.invoice_id.map(Into::into),
            state: parsed("freeze state", &self.state, FreezeState::parse)?,
            deleted_at: self.deleted_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

#[derive(Queryable, Selectable, Insertable, Debug)]
#[diesel(table_name = subscription_trials, check_for_backend(diesel::pg::Pg))]
pub struct TrialRow {
    pub subscription_id: Uuid,
    pub starts_at: Ts,
    pub ends_at: Ts,
}

/// What a renewal batch read ahead of freezes: each subscription's live freezes.
#[derive(Default)]
pub(crate) struct Ahead {
    freezes: HashMap<Uuid, Vec<Freeze>>,
}

impl ReadAhead for Ahead {
    fn is_empty(&self) -> bool {
        self.freezes.is_empty()
    }

    fn forget(&mut self, id: Uuid) {
        self.freezes.remove(&id);
    }
}

impl PgTx<'_> {
    /// Reads ahead the live freezes of the subscriptions `ids`, in one statement.
    pub(crate) fn freezes_ahead(&mut self, ids: &[Uuid]) -> StoreResult<Ahead> {
        let rows: Vec<FreezeRow> = self.read_apart(|c| {
            use subscription_freezes::dsl as f;
            f::subscription_freezes
                .filter(f::subscription_id.eq_any(ids))
                .filter(f::deleted_at.is_null())
                .order_by((f::subscription_id, f::starts_at, f::id))
                .select(FreezeRow::as_select())
                .load(c)
        })?;
        let mut ahead = Ahead::default();
        for id in ids {
            ahead.freezes.insert(*id, vec![]);
        }
        for f in rows {
            let f = f.into_domain()?;
            ahead.freezes.entry(f.subscription_id.0).or_default().push(f);
        }
        Ok(ahead)
    }
}

impl FreezeTx for PgTx<'_> {
    fn insert_freeze(&mut self, f: &Freeze) -> StoreResult<()> {
        let row = FreezeRow::new(f);
        self.write(|c| diesel::insert_into(subscription_freezes::table).values(&row).execute(c))
            .map(drop)
    }

    fn freeze(&mut self, branch: BranchId, id: FreezeId) -> StoreResult<Option<Freeze>> {
        use subscription_freezes::dsl as f;
        let row = self.read_apart(|c| {
            f::subscription_freezes
                .filter(f::id.eq(id.0))
                .filter(f::branch_id.eq(branch.0))
                .select(FreezeRow::as_select())
                .first(c)
                .optional()
        })?;
        row.map(FreezeRow::into_domain).transpose()
    }

    fn update_freeze(&mut self, v: &Freeze) -> StoreResult<()> {
        use subscription_freezes::dsl as f;
        let row = FreezeRow::new(v);
        let n = self.write(|c| diesel::update(f::subscription_freezes.filter(f::id.eq(row.id))).set(&row).execute(c))?;
        if n == 0 {
            return Err(StoreError::NotFound("freeze".into()));
        }
        Ok(())
    }

    fn subscription_freezes(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<Freeze>> {
        if let Some(found) = self.ahead::<Ahead>().and_then(|a| a.freezes.remove(&subscription.0)) {
            return Ok(found);
        }
        use subscription_freezes::dsl as f;
        let rows: Vec<FreezeRow> = self.read_apart(|c| {
            f::subscription_freezes
                .filter(f::subscription_id.eq(subscription.0))
                .filter(f::deleted_at.is_null())
                .order_by((f::starts_at, f::id))
                .select(FreezeRow::as_select())
                .load(c)
        })?;
        rows.into_iter().map(FreezeRow::into_domain).collect()
    }
}

/// What a list read ahead of trials: each subscription's trial (or none), by subscription.
#[derive(Default)]
pub(crate) struct TrialsAhead {
    trials: HashMap<Uuid, Option<Trial>>,
}

impl ReadAhead for TrialsAhead {
    fn is_empty(&self) -> bool {
        self.trials.is_empty()
    }

    fn forget(&mut self, id: Uuid) {
        self.trials.remove(&id);
    }
}

fn trial_of(r: TrialRow) -> Trial {
    Trial {
        subscription_id: r.subscription_id.into(),
        start: r.starts_at,
        end: r.ends_at,
    }
}

impl PgTx<'_> {
    /// Reads ahead the trials of the subscriptions `ids`, in one statement.
    pub(crate) fn trials_ahead(&mut self, ids: &[Uuid]) -> StoreResult<TrialsAhead> {
        let rows: Vec<TrialRow> = self.read_apart(|c| {
            use subscription_trials::dsl as t;
            t::subscription_trials
                .filter(t::subscription_id.eq_any(ids))
                .select(TrialRow::as_select())
                .load(c)
        })?;
        let mut ahead = TrialsAhead::default();
        for id in ids {
            ahead.trials.insert(*id, None);
        }
        for r in rows {
            ahead.trials.insert(r.subscription_id, Some(trial_of(r)));
        }
        Ok(ahead)
    }
}

impl TrialTx for PgTx<'_> {
    fn insert_trial(&mut self, t: &Trial) -> StoreResult<()> {
        if let Some(ahead) = self.ahead::<TrialsAhead>() {
            ahead.trials.remove(&t.subscription_id.0);
        }
        let row = TrialRow {
            subscription_id: t.subscription_id.0,
            starts_at: t.start,
            ends_at: t.end,
        };
        self.write(|c| diesel::insert_into(subscription_trials::table).values(&row).execute(c))
            .map(drop)
    }

    fn subscription_trial(&mut self, subscription: SubscriptionId) -> StoreResult<Option<Trial>> {
        if let Some(found) = self.ahead::<TrialsAhead>().and_then(|a| a.trials.remove(&subscription.0)) {
            return Ok(found);
        }
        use subscription_trials::dsl as t;
        let row: Option<TrialRow> = self.read_apart(|c| {
            t::subscription_trials
                .filter(t::subscription_id.eq(subscription.0))
                .select(TrialRow::as_select())
                .first(c)
                .optional()
        })?;
        Ok(row.map(trial_of))
    }
}
