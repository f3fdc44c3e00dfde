//! `billing_core::webhook::WebhookTx` and `billing_core::work::WorkTx` for this store.
//!
//! Claiming needs no row locks here: every write transaction runs under the single writer
//! (`BEGIN IMMEDIATE`), so a claim's read and update are never interleaved with another's.

use crate::rows::*;
use crate::tx::{Paging, SqliteTx};
use billing_core::clock::{to_micros, Timestamp};
use billing_core::event::EventType;
use billing_core::ids::{BranchId, OrgId, WorkId};
use billing_core::list::{Direction, Page};
use billing_core::store::StoreResult;
use billing_core::webhook::{Delivery, DeliveryFilter, DeliveryStatus, Endpoint};
use billing_core::work::{DueTimes, DueWork};
use rusqlite::types::Value as SqlValue;
use rusqlite::Row;
use serde_json::Value;
use uuid::Uuid;

macro_rules! endpoint_cols {
    () => {
        "id, org_id, branch_id, url, event_types, description, enabled, secret_key, created_at, updated_at, deleted_at"
    };
}
macro_rules! delivery_cols {
    () => {
        "id, org_id, branch_id, endpoint_id, event_id, event_type, status, next_attempt_at, attempts, created_at, updated_at"
    };
}
macro_rules! work_cols {
    () => {
        "id, org_id, kind, due_at, payload, attempts, leased_until"
    };
}

fn endpoint_row(r: &Row) -> rusqlite::Result<Endpoint> {
    let types: Option<Vec<String>> = json_opt(r, 4)?;
    let event_types = match types {
        None => None,
        Some(ts) => Some(
            ts.iter()
                .map(|t| EventType::parse(t).ok_or_else(|| bad(4, format!("unknown event type '{t}'"))))
                .collect::<rusqlite::Result<Vec<_>>>()?,
        ),
    };
    Ok(Endpoint {
        id: r.get(0)?,
        org_id: id(r, 1)?,
        branch_id: id(r, 2)?,
        url: r.get(3)?,
        event_types,
        description: r.get(5)?,
        enabled: r.get(6)?,
        secret_key: r.get(7)?,
        created_at: ts(r, 8)?,
        updated_at: ts_opt(r, 9)?,
        deleted_at: ts_opt(r, 10)?,
    })
}

fn endpoint_params(e: &Endpoint) -> Vec<SqlValue> {
    let types = e
        .event_types
        .as_ref()
        .map(|ts| j(&ts.iter().map(|t| t.as_str()).collect::<Vec<_>>()))
        .unwrap_or(SqlValue::Null);
    vec![
        u(e.id),
        u(e.org_id),
        u(e.branch_id),
        s(&e.url),
        types,
        s_opt(e.description.as_deref()),
        b(e.enabled),
        s(&e.secret_key),
        t(&e.created_at),
        t_opt(&e.updated_at),
        t_opt(&e.deleted_at),
    ]
}

fn delivery_row(r: &Row) -> rusqlite::Result<Delivery> {
    Ok(Delivery {
        id: r.get(0)?,
        org_id: id(r, 1)?,
        branch_id: id(r, 2)?,
        endpoint_id: r.get(3)?,
        event_id: id(r, 4)?,
        event_type: parsed(r, 5, EventType::parse)?,
        status: parsed(r, 6, DeliveryStatus::parse)?,
        next_attempt_at: ts_opt(r, 7)?,
        attempts: json(r, 8)?,
        created_at: ts(r, 9)?,
        updated_at: ts(r, 10)?,
    })
}

fn work_row(r: &Row) -> rusqlite::Result<DueWork> {
    Ok(DueWork {
        id: id(r, 0)?,
        org_id: id(r, 1)?,
        kind: r.get(2)?,
        due_at: ts(r, 3)?,
        payload: json(r, 4)?,
        attempts: r.get::<_, i64>(5)? as u32,
        leased_until: ts_opt(r, 6)?,
    })
}

impl billing_core::webhook::WebhookTx for SqliteTx<'_> {
    fn insert_webhook_endpoint(&mut self, e: &Endpoint) -> StoreResult<()> {
        self.exec(
            concat!(
                "INSERT INTO webhook_endpoints (",
                endpoint_cols!(),
                ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
            ),
            endpoint_params(e),
        )
        .map(drop)
    }

    fn webhook_endpoint(&mut self, id: Uuid) -> StoreResult<Option<Endpoint>> {
        self.one(
            concat!("SELECT ", endpoint_cols!(), " FROM webhook_endpoints WHERE id = ?1"),
            vec![u(id)],
            endpoint_row,
        )
    }

    fn update_webhook_endpoint(&mut self, e: &Endpoint) -> StoreResult<()> {
        self.exec(
            "UPDATE webhook_endpoints SET org_id = ?2, branch_id = ?3, url = ?4, event_types = ?5, description = ?6, enabled = ?7, secret_key = ?8, created_at = ?9, updated_at = ?10, deleted_at = ?11 WHERE id = ?1",
            endpoint_params(e),
        )
        .map(drop)
    }

    fn list_webhook_endpoints(&mut self, branch: BranchId) -> StoreResult<Vec<Endpoint>> {
        self.all(
            concat!(
                "SELECT ",
                endpoint_cols!(),
                " FROM webhook_endpoints WHERE branch_id = ?1 AND deleted_at IS NULL ORDER BY created_at, id"
            ),
            vec![u(branch)],
            endpoint_row,
        )
    }

    fn insert_webhook_delivery(&mut self, d: &Delivery) -> StoreResult<()> {
        self.exec(
            concat!(
                "INSERT INTO webhook_deliveries (",
                delivery_cols!(),
                ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
            ),
            vec![
                u(d.id),
                u(d.org_id),
                u(d.branch_id),
                u(d.endpoint_id),
                u(d.event_id),
                s(d.event_type.as_str()),
                s(d.status.as_str()),
                t_opt(&d.next_attempt_at),
                j(&d.attempts),
                t(&d.created_at),
                t(&d.updated_at),
            ],
        )
        .map(drop)
    }

    fn webhook_delivery(&mut self, id: Uuid) -> StoreResult<Option<Delivery>> {
        self.one(
            concat!("SELECT ", delivery_cols!(), " FROM webhook_deliveries WHERE id = ?1"),
            vec![u(id)],
            delivery_row,
        )
    }

    fn update_webhook_delivery(&mut self, d: &Delivery) -> StoreResult<()> {
        self.exec(
            "UPDATE webhook_deliveries SET status = ?2, next_attempt_at = ?3, attempts = ?4, updated_at = ?5 WHERE id = ?1",
            vec![u(d.id), s(d.status.as_str()), t_opt(&d.next_attempt_at), j(&d.attempts), t(&d.updated_at)],
        )
        .map(drop)
    }

    fn list_webhook_deliveries(&mut self, endpoint: Uuid, f: &DeliveryFilter, page: u32, limit: u32) -> StoreResult<Page<Delivery>> {
        let mut sql = String::from("FROM webhook_deliveries WHERE endpoint_id = ?1");
        let mut params = vec![u(endpoint)];
        if let Some(st) = f.status {
            params.push(s(st.as_str()));
            sql.push_str(&format!(" AND status = ?{}", params.len()));
        }
        if let Some(et) = f.event_type {
            params.push(s(et.as_str()));
            sql.push_str(&format!(" AND event_type = ?{}", params.len()));
        }
        if let Some(from) = &f.from {
            params.push(t(from));
            sql.push_str(&format!(" AND created_at >= ?{}", params.len()));
        }
        if let Some(to) = &f.to {
            params.push(t(to));
            sql.push_str(&format!(" AND created_at < ?{}", params.len()));
        }
        let paging = Paging {
            order: "created_at",
            dir: Direction::Desc,
            page: page.max(1),
            limit: limit.max(1),
        };
        self.page(concat!("SELECT ", delivery_cols!()), &sql, params, paging, delivery_row)
    }
}

impl billing_core::work::WorkTx for SqliteTx<'_> {
    fn insert_work(&mut self, w: &DueWork) -> StoreResult<()> {
        self.exec(
            concat!("INSERT INTO due_work (", work_cols!(), ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
            vec![
                u(w.id),
                u(w.org_id),
                s(&w.kind),
                t(&w.due_at),
                j(&w.payload),
                i(i64::from(w.attempts)),
                t_opt(&w.leased_until),
            ],
        )
        .map(drop)
    }

    fn work(&mut self, id: WorkId) -> StoreResult<Option<DueWork>> {
        self.one(concat!("SELECT ", work_cols!(), " FROM due_work WHERE id = ?1"), vec![u(id)], work_row)
    }

    fn claim_due_work(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp, lease_until: Timestamp, limit: u32) -> StoreResult<Vec<DueWork>> {
        if kinds.is_empty() || limit == 0 {
            return Ok(vec![]);
        }
        let mut params = vec![i(to_micros(server_now))];
        let mut sql = String::from(
            "SELECT w.id FROM due_work w JOIN organizations o ON o.id = w.org_id \
             WHERE w.due_at <= ?1 + o.clock_offset_us AND (w.leased_until IS NULL OR w.leased_until <= ?1)",
        );
        if let Some(o) = org {
            params.push(u(o));
            sql.push_str(&format!(" AND w.org_id = ?{}", params.len()));
        }
        let marks: Vec<String> = kinds
            .iter()
            .map(|k| {
                params.push(s(*k));
                format!("?{}", params.len())
            })
            .collect();
        sql.push_str(&format!(" AND w.kind IN ({}) ORDER BY w.due_at, w.id LIMIT {limit}", marks.join(", ")));
        let ids: Vec<WorkId> = self.all(&sql, params, |r| id(r, 0))?;
        let mut out = Vec::with_capacity(ids.len());
        for wid in ids {
            self.exec(
                "UPDATE due_work SET leased_until = ?2, attempts = attempts + 1 WHERE id = ?1",
                vec![u(wid), t(&lease_until)],
            )?;
            out.extend(self.work(wid)?);
        }
        Ok(out)
    }

    fn due_work_exists(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp) -> StoreResult<bool> {
        if kinds.is_empty() {
            return Ok(false);
        }
        let mut params = vec![i(to_micros(server_now))];
        let mut sql = String::from(
            "SELECT EXISTS (SELECT 1 FROM due_work w JOIN organizations o ON o.id = w.org_id \
             WHERE w.due_at <= ?1 + o.clock_offset_us AND (w.leased_until IS NULL OR w.leased_until <= ?1)",
        );
        if let Some(o) = org {
            params.push(u(o));
            sql.push_str(&format!(" AND w.org_id = ?{}", params.len()));
        }
        let marks: Vec<String> = kinds
            .iter()
            .map(|k| {
                params.push(s(*k));
                format!("?{}", params.len())
            })
            .collect();
        sql.push_str(&format!(" AND w.kind IN ({}))", marks.join(", ")));
        Ok(self.one(&sql, params, |r| r.get::<_, bool>(0))?.unwrap_or(false))
    }

    fn work_due_times(&mut self, org: OrgId, kinds: &[&str], server_now: Timestamp) -> StoreResult<DueTimes> {
        if kinds.is_empty() {
            return Ok(DueTimes::default());
        }
        let mut params = vec![u(org), i(to_micros(server_now))];
        let marks: Vec<String> = kinds
            .iter()
            .map(|k| {
                params.push(s(*k));
                format!("?{}", params.len())
            })
            .collect();
        let sql = format!(
            "SELECT MIN(CASE WHEN leased_until IS NULL OR leased_until <= ?2 THEN due_at END), \
                    MIN(CASE WHEN leased_until > ?2 THEN due_at END) \
             FROM due_work WHERE org_id = ?1 AND kind IN ({})",
            marks.join(", ")
        );
        let (free, held) = self
            .one(&sql, params, |r| Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?)))?
            .unwrap_or_default();
        Ok(DueTimes {
            next_free: free.map(billing_core::clock::from_micros),
            first_held: held.map(billing_core::clock::from_micros),
        })
    }

    fn claim_work(&mut self, id: WorkId, server_now: Timestamp, lease_until: Timestamp) -> StoreResult<Option<DueWork>> {
        let n = self.exec(
            "UPDATE due_work SET leased_until = ?2, attempts = attempts + 1 WHERE id = ?1 AND (leased_until IS NULL OR leased_until <= ?3)",
            vec![u(id), t(&lease_until), t(&server_now)],
        )?;
        if n == 0 {
            return Ok(None);
        }
        self.work(id)
    }

    fn complete_work(&mut self, id: WorkId, lease: Option<Timestamp>) -> StoreResult<bool> {
        let n = self.exec("DELETE FROM due_work WHERE id = ?1 AND leased_until IS ?2", vec![u(id), t_opt(&lease)])?;
        Ok(n > 0)
    }

    fn reschedule_work(&mut self, id: WorkId, lease: Option<Timestamp>, due_at: Timestamp, payload: &Value) -> StoreResult<bool> {
        let n = self.exec(
            "UPDATE due_work SET due_at = ?3, payload = ?4, leased_until = NULL WHERE id = ?1 AND leased_until IS ?2",
            vec![u(id), t_opt(&lease), t(&due_at), j(payload)],
        )?;
        Ok(n > 0)
    }
}
