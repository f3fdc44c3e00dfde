//! Plan changes of subscriptions and the re-pointing of cycles:
//! `billing_model::subscription::PlanChangeTx`. A change's target plan, diff and preview are one
//! JSON body (`PlanChange::body_to_stored`).

use crate::sql::*;
use billing_model::ids::{InvoiceId, SubscriptionId};
use billing_model::store::StoreResult;
use billing_model::subscription::{PlanChange, PlanChangeTx};
use serde_json::Value;

const COLUMNS: &str = "id, subscription_id, status, currency, effective_cycle, effective_at, body, created_at, updated_at";

fn row(r: &rusqlite::Row) -> rusqlite::Result<PlanChange> {
    let status: String = r.get(2)?;
    let currency = get_currency(r, 3)?;
    let body: Value = get_json(r, 6)?;
    PlanChange::from_stored(
        get_id(r, 0)?,
        get_id(r, 1)?,
        &status,
        currency,
        get_count(r, 4)?,
        get_ts(r, 5)?,
        &body,
        get_ts(r, 7)?,
        get_ts_opt(r, 8)?,
    )
    .ok_or_else(|| bad(6, "unreadable plan change".into()))
}

fn params(c: &PlanChange) -> StoreResult<Vec<rusqlite::types::Value>> {
    Ok(vec![
        u(c.id),
        u(c.subscription_id),
        s(c.status.as_str()),
        s(c.currency().code()),
        i(i64::from(c.effective_cycle)),
        t(&c.effective_at),
        j(&c.body_to_stored()?),
        t(&c.created_at),
        t_opt(&c.updated_at),
    ])
}

impl PlanChangeTx for SqliteTx<'_> {
    fn insert_plan_change(&mut self, c: &PlanChange) -> StoreResult<()> {
        self.exec(
            sql!("INSERT INTO subscription_plan_changes ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
            params(c)?,
        )
        .map(drop)
    }

    fn update_plan_change(&mut self, c: &PlanChange) -> StoreResult<()> {
        self.update_one(
            "UPDATE subscription_plan_changes SET subscription_id = ?2, status = ?3, currency = ?4, effective_cycle = ?5, \
             effective_at = ?6, body = ?7, created_at = ?8, updated_at = ?9 WHERE id = ?1",
            params(c)?,
            "plan change",
        )
    }

    fn scheduled_plan_change(&mut self, subscription: SubscriptionId) -> StoreResult<Option<PlanChange>> {
        self.one(
            sql!("SELECT {COLUMNS} FROM subscription_plan_changes WHERE subscription_id = ?1 AND status = 'SCHEDULED'"),
            vec![u(subscription)],
            row,
        )
    }

    fn plan_changes(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<PlanChange>> {
        self.all(
            sql!("SELECT {COLUMNS} FROM subscription_plan_changes WHERE subscription_id = ?1 ORDER BY created_at, id"),
            vec![u(subscription)],
            row,
        )
    }

    fn subscription_cycle_invoice(&mut self, subscription: SubscriptionId, cycle: u32) -> StoreResult<Option<InvoiceId>> {
        self.one(
            "SELECT invoice_id FROM subscription_cycles WHERE subscription_id = ?1 AND cycle_number = ?2",
            vec![u(subscription), i(i64::from(cycle))],
            |r| get_id(r, 0),
        )
    }

    fn replace_subscription_cycle_invoice(&mut self, subscription: SubscriptionId, cycle: u32, old: InvoiceId, new: InvoiceId) -> StoreResult<bool> {
        let n = self.exec(
            "UPDATE subscription_cycles SET invoice_id = ?4 WHERE subscription_id = ?1 AND cycle_number = ?2 AND invoice_id = ?3",
            vec![u(subscription), i(i64::from(cycle)), u(old), u(new)],
        )?;
        Ok(n == 1)
    }

    fn delete_subscription_cycle(&mut self, subscription: SubscriptionId, cycle: u32, invoice: InvoiceId) -> StoreResult<bool> {
        let n = self.exec(
            "DELETE FROM subscription_cycles WHERE subscription_id = ?1 AND cycle_number = ?2 AND invoice_id = ?3",
            vec![u(subscription), i(i64::from(cycle)), u(invoice)],
        )?;
        Ok(n == 1)
    }
}
