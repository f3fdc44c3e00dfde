//! Rows of the webhook and due-work tables, and their conversions.

use crate::schema_webhook::*;
use billing_core::error::StoreError;
use billing_core::event::EventType;
use billing_core::store::StoreResult;
use billing_core::webhook::{Delivery, DeliveryStatus, Endpoint};
use billing_core::work::DueWork;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::Value;
use uuid::Uuid;

type Ts = DateTime<Utc>;

fn unreadable(what: &str, v: impl std::fmt::Display) -> StoreError {
    StoreError::backend(format!("unreadable stored {what}: {v}"))
}

#[derive(Queryable, Selectable, QueryableByName, Insertable, AsChangeset)]
#[diesel(table_name = due_work, check_for_backend(diesel::pg::Pg), treat_none_as_null = true)]
pub struct WorkRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub kind: String,
    pub due_at: Ts,
    pub payload: Value,
    pub attempts: i32,
    pub leased_until: Option<Ts>,
}

impl WorkRow {
    pub fn new(w: &DueWork) -> Self {
        WorkRow {
            id: w.id.0,
            org_id: w.org_id.0,
            kind: w.kind.clone(),
            due_at: w.due_at,
            payload: w.payload.clone(),
            attempts: w.attempts as i32,
            leased_until: w.leased_until,
        }
    }
    pub fn into_domain(self) -> DueWork {
        DueWork {
            id: self.id.into(),
            org_id: self.org_id.into(),
            kind: self.kind,
            due_at: self.due_at,
            payload: self.payload,
            attempts: self.attempts.max(0) as u32,
            leased_until: self.leased_until,
        }
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
