//! Webhook endpoints and their deliveries: `billing_model::webhook::WebhookTx`.

use crate::support::*;
use billing_model::event::EventType;
use billing_model::ids::BranchId;
use billing_model::list::Page;
use billing_model::store::StoreResult;
use billing_model::webhook::{Delivery, DeliveryContext, DeliveryFilter, DeliveryStatus, Endpoint};
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    webhook_endpoints (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        url -> Text,
        event_types -> Nullable<Array<Text>>,
        description -> Nullable<Text>,
        enabled -> Bool,
        secret_key -> Text,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
        deleted_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        endpoint_id -> Uuid,
        event_id -> Uuid,
        event_type -> Text,
        status -> Text,
        next_attempt_at -> Nullable<Timestamptz>,
        attempts -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = webhook_endpoints, check_for_backend(diesel::pg::Pg), treat_none_as_null = true)]
pub struct EndpointRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub url: String,
    pub event_types: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: bool,
    pub secret_key: String,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
    pub deleted_at: Option<Ts>,
}

impl EndpointRow {
    pub fn new(e: &Endpoint) -> Self {
        EndpointRow {
            id: e.id,
            org_id: e.org_id.0,
            branch_id: e.branch_id.0,
            url: e.url.clone(),
            event_types: e.event_types.as_ref().map(|ts| ts.iter().map(|t| t.as_str().to_string()).collect()),
            description: e.description.clone(),
            enabled: e.enabled,
            secret_key: e.secret_key.clone(),
            created_at: e.created_at,
            updated_at: e.updated_at,
            deleted_at: e.deleted_at,
        }
    }
    pub fn into_domain(self) -> StoreResult<Endpoint> {
        let event_types = match self.event_types {
            None => None,
            Some(ts) => Some(
                ts.iter()
                    .map(|t| EventType::parse(t).ok_or_else(|| unreadable("event type", t)))
                    .collect::<StoreResult<Vec<_>>>()?,
            ),
        };
        Ok(Endpoint {
            id: self.id,
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            url: self.url,
            event_types,
            description: self.description,
            enabled: self.enabled,
            secret_key: self.secret_key,
            created_at: self.created_at,
            updated_at: self.updated_at,
            deleted_at: self.deleted_at,
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_deliveries, check_for_backend(diesel::pg::Pg))]
pub struct DeliveryRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    pub status: String,
    pub next_attempt_at: Option<Ts>,
    pub attempts: Value,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl DeliveryRow {
    pub fn new(d: &Delivery) -> Self {
        DeliveryRow {
            id: d.id,
            org_id: d.org_id.0,
            branch_id: d.branch_id.0,
            endpoint_id: d.endpoint_id,
            event_id: d.event_id.0,
            event_type: d.event_type.as_str().to_string(),
            status: d.status.as_str().to_string(),
            next_attempt_at: d.next_attempt_at,
            attempts: serde_json::to_value(&d.attempts).expect("attempts serialize"),
            created_at: d.created_at,
            updated_at: d.updated_at,
        }
    }
    pub fn into_domain(self) -> StoreResult<Delivery> {
        Ok(Delivery {
            id: self.id,
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            endpoint_id: self.endpoint_id,
            event_id: self.event_id.into(),
            event_type: EventType::parse(&self.event_type).ok_or_else(|| unreadable("event type", &self.event_type))?,
            status: DeliveryStatus::parse(&self.status).ok_or_else(|| unreadable("delivery status", &self.status))?,
            next_attempt_at: self.next_attempt_at,
            attempts: serde_json::from_value(self.attempts).map_err(|e| unreadable("delivery attempts", e))?,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}
impl billing_model::webhook::WebhookTx for PgTx<'_> {
    fn insert_webhook_endpoint(&mut self, e: &Endpoint) -> StoreResult<()> {
        self.endpoints.clear();
        let row = EndpointRow::new(e);
        self.write(|c| diesel::insert_into(webhook_endpoints::table).values(&row).execute(c)).map(drop)
    }

    fn webhook_endpoint(&mut self, id: Uuid) -> StoreResult<Option<Endpoint>> {
        let row = self.read(|c| webhook_endpoints::table.find(id).select(EndpointRow::as_select()).first(c).optional())?;
        row.map(EndpointRow::into_domain).transpose()
    }

    fn update_webhook_endpoint(&mut self, e: &Endpoint) -> StoreResult<()> {
        self.endpoints.clear();
        let row = EndpointRow::new(e);
        self.write(|c| diesel::update(webhook_endpoints::table.find(e.id)).set(&row).execute(c))
            .map(drop)
    }

    fn list_webhook_endpoints(&mut self, branch: BranchId) -> StoreResult<Vec<Endpoint>> {
        if let Some(known) = self.endpoints.get(&branch) {
            return Ok(known.clone());
        }
        use webhook_endpoints::dsl as we;
        let rows = self.read(|c| {
            we::webhook_endpoints
                .filter(we::branch_id.eq(branch.0))
                .filter(we::deleted_at.is_null())
                .order_by((we::created_at, we::id))
                .select(EndpointRow::as_select())
                .load(c)
        })?;
        let endpoints: Vec<Endpoint> = rows.into_iter().map(EndpointRow::into_domain).collect::<StoreResult<_>>()?;
        self.endpoints.insert(branch, endpoints.clone());
        Ok(endpoints)
    }

    fn insert_webhook_delivery(&mut self, d: &Delivery) -> StoreResult<()> {
        let row = DeliveryRow::new(d);
        self.write(|c| diesel::insert_into(webhook_deliveries::table).values(&row).execute(c)).map(drop)
    }

    fn insert_webhook_deliveries(&mut self, ds: &[Delivery]) -> StoreResult<()> {
        for chunk in ds.chunks(INSERT_CHUNK) {
            let rows: Vec<DeliveryRow> = chunk.iter().map(DeliveryRow::new).collect();
            self.write(|c| diesel::insert_into(webhook_deliveries::table).values(&rows).execute(c))?;
        }
        Ok(())
    }

    fn webhook_delivery(&mut self, id: Uuid) -> StoreResult<Option<Delivery>> {
        let row = self.read(|c| webhook_deliveries::table.find(id).select(DeliveryRow::as_select()).first(c).optional())?;
        row.map(DeliveryRow::into_domain).transpose()
    }

    fn webhook_delivery_context(&mut self, id: Uuid) -> StoreResult<Option<DeliveryContext>> {
        Ok(self.webhook_delivery_contexts(&[id])?.pop())
    }

    fn webhook_delivery_contexts(&mut self, ids: &[Uuid]) -> StoreResult<Vec<DeliveryContext>> {
        use crate::event::{events, EventRow};
        use webhook_deliveries::dsl as wd;
        if ids.is_empty() {
            return Ok(vec![]);
        }
        // One statement (so an attempt's read is one round trip: `Store::read_one`).
        let rows = self.read(|c| {
            wd::webhook_deliveries
                .left_join(webhook_endpoints::table.on(webhook_endpoints::id.eq(wd::endpoint_id)))
                .left_join(events::table.on(events::id.eq(wd::event_id)))
                .filter(wd::id.eq_any(ids))
                .select((DeliveryRow::as_select(), Option::<EndpointRow>::as_select(), Option::<EventRow>::as_select()))
                .load::<(DeliveryRow, Option<EndpointRow>, Option<EventRow>)>(c)
        })?;
        rows.into_iter()
            .map(|(d, e, ev)| {
                Ok((
                    d.into_domain()?,
                    e.map(EndpointRow::into_domain).transpose()?,
                    ev.map(EventRow::into_domain).transpose()?,
                ))
            })
            .collect()
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

    fn update_webhook_deliveries(&mut self, ds: &[Delivery]) -> StoreResult<()> {
        if ds.is_empty() {
            return Ok(());
        }
        let rows: Vec<DeliveryRow> = ds.iter().map(DeliveryRow::new).collect();
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let statuses: Vec<&str> = rows.iter().map(|r| r.status.as_str()).collect();
        let next: Vec<Option<Ts>> = rows.iter().map(|r| r.next_attempt_at).collect();
        let attempts: Vec<&Value> = rows.iter().map(|r| &r.attempts).collect();
        let updated: Vec<Ts> = rows.iter().map(|r| r.updated_at).collect();
        self.change(|c| {
            use diesel::sql_types::{Array, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
            diesel::sql_query(
                "UPDATE webhook_deliveries d \
                 SET status = u.status, next_attempt_at = u.next, attempts = u.attempts, updated_at = u.updated \
                 FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::jsonb[], $5::timestamptz[]) \
                   AS u(id, status, next, attempts, updated) \
                 WHERE d.id = u.id",
            )
            .bind::<Array<SqlUuid>, _>(&ids)
            .bind::<Array<Text>, _>(&statuses)
            .bind::<Array<Nullable<Timestamptz>>, _>(&next)
            .bind::<Array<Jsonb>, _>(&attempts)
            .bind::<Array<Timestamptz>, _>(&updated)
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
