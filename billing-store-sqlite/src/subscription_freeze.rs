//! Freeze periods and trials of subscriptions: `billing_model::subscription::{FreezeTx, TrialTx}`.

use crate::sql::*;
use billing_model::ids::{BranchId, FreezeId, SubscriptionId};
use billing_model::store::StoreResult;
use billing_model::subscription::*;

table! {
    pub Freezes in "subscription_freezes" for Freeze |v, r, at| {
        id: u(v.id) => get_id(r, at)?,
        org_id: u(v.org_id) => get_id(r, at)?,
        branch_id: u(v.branch_id) => get_id(r, at)?,
        subscription_id: u(v.subscription_id) => get_id(r, at)?,
        starts_at: t(&v.start) => get_ts(r, at)?,
        ends_at: t_opt(&v.end) => get_ts_opt(r, at)?,
        notes: s_opt(v.notes.as_deref()) => r.get(at)?,
        invoice_id: u_opt(v.invoice_id) => get_id_opt(r, at)?,
        state: s(v.state.as_str()) => get_parsed(r, at, FreezeState::parse)?,
        deleted_at: t_opt(&v.deleted_at) => get_ts_opt(r, at)?,
        created_at: t(&v.created_at) => get_ts(r, at)?,
        updated_at: t_opt(&v.updated_at) => get_ts_opt(r, at)?,
    } => Freeze {
        id, org_id, branch_id, subscription_id, start: starts_at, end: ends_at, notes, invoice_id, state,
        deleted_at, created_at, updated_at,
    }
}

table! {
    pub Trials in "subscription_trials" for Trial |v, r, at| {
        subscription_id: u(v.subscription_id) => get_id(r, at)?,
        starts_at: t(&v.start) => get_ts(r, at)?,
        ends_at: t(&v.end) => get_ts(r, at)?,
    } => Trial { subscription_id, start: starts_at, end: ends_at }
}

impl FreezeTx for SqliteTx<'_> {
    fn insert_freeze(&mut self, f: &Freeze) -> StoreResult<()> {
        self.exec(&Freezes::sql().insert, Freezes::params(f)?).map(drop)
    }

    fn freeze(&mut self, branch: BranchId, id: FreezeId) -> StoreResult<Option<Freeze>> {
        self.one(
            sql!("SELECT {} FROM subscription_freezes WHERE id = ?1 AND branch_id = ?2", Freezes::sql().select),
            vec![u(id), u(branch)],
            Freezes::row,
        )
    }

    fn update_freeze(&mut self, f: &Freeze) -> StoreResult<()> {
        self.update_one(&Freezes::sql().update, Freezes::params(f)?, "freeze")
    }

    fn subscription_freezes(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<Freeze>> {
        self.all(
            sql!(
                "SELECT {} FROM subscription_freezes WHERE subscription_id = ?1 AND deleted_at IS NULL ORDER BY starts_at, id",
                Freezes::sql().select
            ),
            vec![u(subscription)],
            Freezes::row,
        )
    }
}

impl TrialTx for SqliteTx<'_> {
    fn insert_trial(&mut self, v: &Trial) -> StoreResult<()> {
        self.exec(&Trials::sql().insert, Trials::params(v)?).map(drop)
    }

    fn subscription_trial(&mut self, subscription: SubscriptionId) -> StoreResult<Option<Trial>> {
        self.one(
            sql!("SELECT {} FROM subscription_trials WHERE subscription_id = ?1", Trials::sql().select),
            vec![u(subscription)],
            Trials::row,
        )
    }
}
