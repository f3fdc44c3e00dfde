//! The event outbox: `billing_model::event::EventTx`. Events keep their write order (`seq`).

use crate::sql::*;
use billing_model::event::{EntityType, Event, EventTx, EventType};
use billing_model::ids::{EventId, OrgId};
use billing_model::store::StoreResult;

table! {
    pub Events in "events" for Event |e, r, at| {
        id: u(e.id) => get_id(r, at)?,
        org_id: u(e.org_id) => get_id(r, at)?,
        branch_id: u(e.branch_id) => get_id(r, at)?,
        event_type: s(e.event_type.as_str()) => get_parsed(r, at, EventType::parse)?,
        entity_type: s(e.entity_type.as_str()) => get_parsed(r, at, EntityType::parse)?,
        entity_id: u(e.entity_id) => r.get(at)?,
        payload: j(&e.payload) => get_json(r, at)?,
        created_at: t(&e.created_at) => get_ts(r, at)?,
    } => Event { id, org_id, branch_id, event_type, entity_type, entity_id, payload, created_at }
}

impl EventTx for SqliteTx<'_> {
    fn insert_event(&mut self, e: &Event) -> StoreResult<()> {
        self.exec(&Events::sql().insert, Events::params(e)?).map(drop)
    }

    fn list_events(&mut self, org: OrgId) -> StoreResult<Vec<Event>> {
        self.all(
            sql!("SELECT {} FROM events WHERE org_id = ?1 ORDER BY seq", Events::sql().select),
            vec![u(org)],
            Events::row,
        )
    }

    fn list_events_from(&mut self, org: OrgId, skip: usize) -> StoreResult<Vec<Event>> {
        self.all(
            sql!("SELECT {} FROM events WHERE org_id = ?1 ORDER BY seq LIMIT -1 OFFSET ?2", Events::sql().select),
            vec![u(org), i64::try_from(skip).unwrap_or(i64::MAX).into()],
            Events::row,
        )
    }

    fn event_by_id(&mut self, id: EventId) -> StoreResult<Option<Event>> {
        self.one(sql!("SELECT {} FROM events WHERE id = ?1", Events::sql().select), vec![u(id)], Events::row)
    }
}
