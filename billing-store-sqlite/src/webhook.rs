//! Webhook endpoints and their deliveries: `billing_model::webhook::WebhookTx`.

use crate::sql::*;
use billing_model::event::EventType;
use billing_model::ids::BranchId;
use billing_model::list::{Direction, Page};
use billing_model::store::StoreResult;
use billing_model::webhook::{Delivery, DeliveryFilter, DeliveryStatus, Endpoint, WebhookTx};
use uuid::Uuid;

table! {
    pub Endpoints in "webhook_endpoints" for Endpoint |e, r, at| {
        id: u(e.id) => r.get(at)?,
        org_id: u(e.org_id) => get_id(r, at)?,
        branch_id: u(e.branch_id) => get_id(r, at)?,
        url: s(&e.url) => r.get(at)?,
        event_types: e.event_types.as_ref().map(|ts| j(&ts.iter().map(|t| t.as_str()).collect::<Vec<_>>())).unwrap_or(rusqlite::types::Value::Null) => {
            let names: Option<Vec<String>> = get_json_opt(r, at)?;
            names
                .map(|ts| {
                    ts.iter()
                        .map(|t| EventType::parse(t).ok_or_else(|| bad(at, format!("unknown event type '{t}'"))))
                        .collect::<rusqlite::Result<Vec<_>>>()
                })
                .transpose()?
        },
        description: s_opt(e.description.as_deref()) => r.get(at)?,
        enabled: b(e.enabled) => r.get(at)?,
        secret_key: s(&e.secret_key) => r.get(at)?,
        created_at: t(&e.created_at) => get_ts(r, at)?,
        updated_at: t_opt(&e.updated_at) => get_ts_opt(r, at)?,
        deleted_at: t_opt(&e.deleted_at) => get_ts_opt(r, at)?,
    } => Endpoint { id, org_id, branch_id, url, event_types, description, enabled, secret_key, created_at, updated_at, deleted_at }
}

table! {
    pub Deliveries in "webhook_deliveries" for Delivery |d, r, at| {
        id: u(d.id) => r.get(at)?,
        org_id: u(d.org_id) => get_id(r, at)?,
        branch_id: u(d.branch_id) => get_id(r, at)?,
        endpoint_id: u(d.endpoint_id) => r.get(at)?,
        event_id: u(d.event_id) => get_id(r, at)?,
        event_type: s(d.event_type.as_str()) => get_parsed(r, at, EventType::parse)?,
        status: s(d.status.as_str()) => get_parsed(r, at, DeliveryStatus::parse)?,
        next_attempt_at: t_opt(&d.next_attempt_at) => get_ts_opt(r, at)?,
        attempts: j(&d.attempts) => get_json(r, at)?,
        created_at: t(&d.created_at) => get_ts(r, at)?,
        updated_at: t(&d.updated_at) => get_ts(r, at)?,
    } => Delivery { id, org_id, branch_id, endpoint_id, event_id, event_type, status, next_attempt_at, attempts, created_at, updated_at }
}

impl WebhookTx for SqliteTx<'_> {
    fn insert_webhook_endpoint(&mut self, e: &Endpoint) -> StoreResult<()> {
        self.exec(&Endpoints::sql().insert, Endpoints::params(e)?).map(drop)
    }

    fn webhook_endpoint(&mut self, id: Uuid) -> StoreResult<Option<Endpoint>> {
        self.one(
            sql!("SELECT {} FROM webhook_endpoints WHERE id = ?1", Endpoints::sql().select),
            vec![u(id)],
            Endpoints::row,
        )
    }

    fn update_webhook_endpoint(&mut self, e: &Endpoint) -> StoreResult<()> {
        self.update_one(&Endpoints::sql().update, Endpoints::params(e)?, "webhook endpoint")
    }

    /// Read once per batch transaction (every recorded event asks): see [`crate::memo`].
    fn list_webhook_endpoints(&mut self, branch: BranchId) -> StoreResult<Vec<Endpoint>> {
        crate::memo::endpoints(self.conn(), branch, || {
            self.all(
                sql!(
                    "SELECT {} FROM webhook_endpoints WHERE branch_id = ?1 AND deleted_at IS NULL ORDER BY created_at, id",
                    Endpoints::sql().select
                ),
                vec![u(branch)],
                Endpoints::row,
            )
        })
    }

    fn insert_webhook_delivery(&mut self, d: &Delivery) -> StoreResult<()> {
        self.exec(&Deliveries::sql().insert, Deliveries::params(d)?).map(drop)
    }

    fn webhook_delivery(&mut self, id: Uuid) -> StoreResult<Option<Delivery>> {
        self.one(
            sql!("SELECT {} FROM webhook_deliveries WHERE id = ?1", Deliveries::sql().select),
            vec![u(id)],
            Deliveries::row,
        )
    }

    fn update_webhook_delivery(&mut self, d: &Delivery) -> StoreResult<()> {
        self.update_one(&Deliveries::sql().update, Deliveries::params(d)?, "webhook delivery")
    }

    fn list_webhook_deliveries(&mut self, endpoint: Uuid, f: &DeliveryFilter, page: u32, limit: u32) -> StoreResult<Page<Delivery>> {
        let mut w = Filter::new("FROM webhook_deliveries WHERE endpoint_id = ?1", vec![u(endpoint)]);
        if let Some(st) = f.status {
            w.cmp("status =", s(st.as_str()));
        }
        if let Some(et) = f.event_type {
            w.cmp("event_type =", s(et.as_str()));
        }
        if let Some(from) = &f.from {
            w.cmp("created_at >=", t(from));
        }
        if let Some(to) = &f.to {
            w.cmp("created_at <", t(to));
        }
        let paging = Paging {
            order: "created_at",
            dir: Direction::Desc,
            page: page.max(1),
            limit: limit.max(1),
        };
        self.page(sql!("SELECT {}", Deliveries::sql().select), &w, paging, Deliveries::row)
    }
}
