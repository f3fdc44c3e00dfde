//! `billing_core::webhook::WebhookTx` and `billing_core::work::WorkTx` for this store.
//!
//! Claims lock the rows they take with `FOR UPDATE SKIP LOCKED`, so processes claiming at the
//! same time take different items and never wait on each other.

use crate::rows_webhook::{DeliveryRow, EndpointRow, WorkRow};
use crate::schema_webhook::*;
use crate::tx::PgTx;
use billing_core::clock::Timestamp;
use billing_core::ids::{BranchId, OrgId, WorkId};
use billing_core::list::Page;
use billing_core::store::StoreResult;
use billing_core::webhook::{Delivery, DeliveryFilter, Endpoint};
use billing_core::work::{DueTimes, DueWork};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use serde_json::Value;
use uuid::Uuid;

impl billing_core::webhook::WebhookTx for PgTx<'_> {
    fn insert_webhook_endpoint(&mut self, e: &Endpoint) -> StoreResult<()> {
        let row = EndpointRow::new(e);
        self.write(|c| diesel::insert_into(webhook_endpoints::table).values(&row).execute(c)).map(drop)
    }

    fn webhook_endpoint(&mut self, id: Uuid) -> StoreResult<Option<Endpoint>> {
        let row = self.read(|c| webhook_endpoints::table.find(id).select(EndpointRow::as_select()).first(c).optional())?;
        row.map(EndpointRow::into_domain).transpose()
    }

    fn update_webhook_endpoint(&mut self, e: &Endpoint) -> StoreResult<()> {
        let row = EndpointRow::new(e);
        self.write(|c| diesel::update(webhook_endpoints::table.find(e.id)).set(&row).execute(c))
            .map(drop)
    }

    fn list_webhook_endpoints(&mut self, branch: BranchId) -> StoreResult<Vec<Endpoint>> {
        use webhook_endpoints::dsl as we;
        let rows = self.read(|c| {
            we::webhook_endpoints
                .filter(we::branch_id.eq(branch.0))
                .filter(we::deleted_at.is_null())
                .order_by((we::created_at, we::id))
                .select(EndpointRow::as_select())
                .load(c)
        })?;
        rows.into_iter().map(EndpointRow::into_domain).collect()
    }

    fn insert_webhook_delivery(&mut self, d: &Delivery) -> StoreResult<()> {
        let row = DeliveryRow::new(d);
        self.write(|c| diesel::insert_into(webhook_deliveries::table).values(&row).execute(c)).map(drop)
    }

    fn webhook_delivery(&mut self, id: Uuid) -> StoreResult<Option<Delivery>> {
        let row = self.read(|c| webhook_deliveries::table.find(id).select(DeliveryRow::as_select()).first(c).optional())?;
        row.map(DeliveryRow::into_domain).transpose()
    }

    fn update_webhook_delivery(&mut self, d: &Delivery) -> StoreResult<()> {
        use webhook_deliveries::dsl as wd;
        let row = DeliveryRow::new(d);
        self.change(|c| {
            diesel::update(wd::webhook_deliveries.find(d.id))
                .set((
                    wd::status.eq(&row.status),
                    wd::next_attempt_at.eq(row.next_attempt_at),
                    wd::attempts.eq(&row.attempts),
                    wd::updated_at.eq(row.updated_at),
                ))
                .execute(c)
        })
        .map(drop)
    }

    fn list_webhook_deliveries(&mut self, endpoint: Uuid, f: &DeliveryFilter, page: u32, limit: u32) -> StoreResult<Page<Delivery>> {
        use webhook_deliveries::dsl as wd;
        let (page, limit) = (page.max(1), limit.max(1));
        let filtered = || {
            let mut q = wd::webhook_deliveries.filter(wd::endpoint_id.eq(endpoint)).into_boxed();
            if let Some(s) = f.status {
                q = q.filter(wd::status.eq(s.as_str()));
            }
            if let Some(t) = f.event_type {
                q = q.filter(wd::event_type.eq(t.as_str()));
            }
            if let Some(from) = f.from {
                q = q.filter(wd::created_at.ge(from));
            }
            if let Some(to) = f.to {
                q = q.filter(wd::created_at.lt(to));
            }
            q
        };
        let total: i64 = self.read(|c| filtered().count().get_result(c))?;
        let rows = self.read(|c| {
            filtered()
                .order_by((wd::created_at.desc(), wd::id.desc()))
                .limit(i64::from(limit))
                .offset(i64::from(page - 1) * i64::from(limit))
                .select(DeliveryRow::as_select())
                .load(c)
        })?;
        let items = rows.into_iter().map(DeliveryRow::into_domain).collect::<StoreResult<Vec<_>>>()?;
        Ok(Page {
            items,
            total: total as u64,
            page,
            limit,
        })
    }
}

#[derive(QueryableByName)]
struct Exists {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    found: bool,
}

#[derive(QueryableByName)]
struct DueTimesRow {
    #[diesel(sql_type = Nullable<Timestamptz>)]
    next_free: Option<Timestamp>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    first_held: Option<Timestamp>,
}

const CLAIM_DUE: &str = "UPDATE due_work SET leased_until = $2, attempts = attempts + 1 \
     WHERE id IN (SELECT w.id FROM due_work w JOIN organizations o ON o.id = w.org_id \
        WHERE w.due_at <= $1 + o.clock_offset_us * interval '1 microsecond' \
          AND (w.leased_until IS NULL OR w.leased_until <= $1) \
          AND w.kind = ANY($3) AND ($4::uuid IS NULL OR w.org_id = $4) \
        ORDER BY w.due_at, w.id LIMIT $5 FOR UPDATE OF w SKIP LOCKED) \
     RETURNING id, org_id, kind, due_at, payload, attempts, leased_until";

impl billing_core::work::WorkTx for PgTx<'_> {
    fn insert_work(&mut self, w: &DueWork) -> StoreResult<()> {
        let row = WorkRow::new(w);
        self.write(|c| diesel::insert_into(due_work::table).values(&row).execute(c)).map(drop)
    }

    fn work(&mut self, id: WorkId) -> StoreResult<Option<DueWork>> {
        let row = self.read(|c| due_work::table.find(id.0).select(WorkRow::as_select()).first(c).optional())?;
        Ok(row.map(WorkRow::into_domain))
    }

    fn claim_due_work(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp, lease_until: Timestamp, limit: u32) -> StoreResult<Vec<DueWork>> {
        if kinds.is_empty() || limit == 0 {
            return Ok(vec![]);
        }
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        let mut rows: Vec<WorkRow> = self.change(|c| {
            diesel::sql_query(CLAIM_DUE)
                .bind::<Timestamptz, _>(server_now)
                .bind::<Timestamptz, _>(lease_until)
                .bind::<Array<Text>, _>(&kinds)
                .bind::<Nullable<SqlUuid>, _>(org.map(|o| o.0))
                .bind::<BigInt, _>(i64::from(limit))
                .load(c)
        })?;
        rows.sort_by_key(|r| (r.due_at, r.id));
        Ok(rows.into_iter().map(WorkRow::into_domain).collect())
    }

    fn due_work_exists(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp) -> StoreResult<bool> {
        if kinds.is_empty() {
            return Ok(false);
        }
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        let row: Exists = self.read(|c| {
            diesel::sql_query(
                "SELECT EXISTS (SELECT 1 FROM due_work w JOIN organizations o ON o.id = w.org_id \
                 WHERE w.due_at <= $1 + o.clock_offset_us * interval '1 microsecond' \
                   AND (w.leased_until IS NULL OR w.leased_until <= $1) \
                   AND w.kind = ANY($2) AND ($3::uuid IS NULL OR w.org_id = $3)) AS found",
            )
            .bind::<Timestamptz, _>(server_now)
            .bind::<Array<Text>, _>(&kinds)
            .bind::<Nullable<SqlUuid>, _>(org.map(|o| o.0))
            .get_result(c)
        })?;
        Ok(row.found)
    }

    fn work_due_times(&mut self, org: OrgId, kinds: &[&str], server_now: Timestamp) -> StoreResult<DueTimes> {
        if kinds.is_empty() {
            return Ok(DueTimes::default());
        }
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        let row: DueTimesRow = self.read(|c| {
            diesel::sql_query(
                "SELECT MIN(due_at) FILTER (WHERE leased_until IS NULL OR leased_until <= $2) AS next_free, \
                        MIN(due_at) FILTER (WHERE leased_until > $2) AS first_held \
                 FROM due_work WHERE org_id = $1 AND kind = ANY($3)",
            )
            .bind::<SqlUuid, _>(org.0)
            .bind::<Timestamptz, _>(server_now)
            .bind::<Array<Text>, _>(&kinds)
            .get_result(c)
        })?;
        Ok(DueTimes {
            next_free: row.next_free,
            first_held: row.first_held,
        })
    }

    fn claim_work(&mut self, id: WorkId, server_now: Timestamp, lease_until: Timestamp) -> StoreResult<Option<DueWork>> {
        let rows: Vec<WorkRow> = self.change(|c| {
            diesel::sql_query(
                "UPDATE due_work SET leased_until = $2, attempts = attempts + 1 \
                 WHERE id = $1 AND (leased_until IS NULL OR leased_until <= $3) \
                 RETURNING id, org_id, kind, due_at, payload, attempts, leased_until",
            )
            .bind::<SqlUuid, _>(id.0)
            .bind::<Timestamptz, _>(lease_until)
            .bind::<Timestamptz, _>(server_now)
            .load(c)
        })?;
        Ok(rows.into_iter().next().map(WorkRow::into_domain))
    }

    fn complete_work(&mut self, id: WorkId, lease: Option<Timestamp>) -> StoreResult<bool> {
        let n = self.change(|c| {
            diesel::sql_query("DELETE FROM due_work WHERE id = $1 AND leased_until IS NOT DISTINCT FROM $2")
                .bind::<SqlUuid, _>(id.0)
                .bind::<Nullable<Timestamptz>, _>(lease)
                .execute(c)
        })?;
        Ok(n > 0)
    }

    fn reschedule_work(&mut self, id: WorkId, lease: Option<Timestamp>, due_at: Timestamp, payload: &Value) -> StoreResult<bool> {
        let n = self.change(|c| {
            diesel::sql_query("UPDATE due_work SET due_at = $3, payload = $4, leased_until = NULL WHERE id = $1 AND leased_until IS NOT DISTINCT FROM $2")
                .bind::<SqlUuid, _>(id.0)
                .bind::<Nullable<Timestamptz>, _>(lease)
                .bind::<Timestamptz, _>(due_at)
                .bind::<Jsonb, _>(payload)
                .execute(c)
        })?;
        Ok(n > 0)
    }
}
