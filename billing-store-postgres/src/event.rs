//! The event outbox: `billing_model::event::EventTx`.

use crate::deferred::{Pending, Stage};
use crate::support::*;
use billing_model::event::{EntityType, Event, EventType};
use billing_model::ids::{EventId, OrgId};
use billing_model::store::StoreResult;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    events (seq) {
        seq -> Int8,
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        event_type -> Text,
        entity_type -> Text,
        entity_id -> Uuid,
        payload -> Json,
        created_at -> Timestamptz,
    }
}

// --- events ----------------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = events, check_for_backend(diesel::pg::Pg))]
pub struct EventRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub event_type: String,
    pub entity_type: String,
    pub entity_id: Uuid,
    pub payload: Value,
    pub created_at: Ts,
}

/// `seq` is left to the identity column.
#[derive(Insertable)]
#[diesel(table_name = events)]
pub struct NewEventRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub event_type: &'static str,
    pub entity_type: &'static str,
    pub entity_id: Uuid,
    pub payload: &'a Value,
    pub created_at: Ts,
}

impl<'a> NewEventRow<'a> {
    pub fn new(e: &'a Event) -> Self {
        NewEventRow {
            id: e.id.0,
            org_id: e.org_id.0,
            branch_id: e.branch_id.0,
            event_type: e.event_type.as_str(),
            entity_type: e.entity_type.as_str(),
            entity_id: e.entity_id,
            payload: &e.payload,
            created_at: e.created_at,
        }
    }
}

impl EventRow {
    pub fn into_domain(self) -> StoreResult<Event> {
        Ok(Event {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            event_type: parse_enum!(EventType, &self.event_type)?,
            entity_type: parse_enum!(EntityType, &self.entity_type)?,
            entity_id: self.entity_id,
            payload: self.payload,
            created_at: self.created_at,
        })
    }
}

/// What a batch's first pass defers of the outbox (see `deferred`): new events.
#[derive(Default)]
pub(crate) struct Deferred {
    events: Vec<Event>,
}

impl Pending<PgKind> for Deferred {
    fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    fn send(&mut self, tx: &mut PgTx<'_>, stage: Stage) -> StoreResult<()> {
        if stage != Stage::Inserts {
            return Ok(());
        }
        for chunk in std::mem::take(&mut self.events).chunks(INSERT_CHUNK) {
            let rows: Vec<NewEventRow<'_>> = chunk.iter().map(NewEventRow::new).collect();
            tx.change_apart(|c| diesel::insert_into(events::table).values(&rows).execute(c))?;
        }
        Ok(())
    }
}

impl billing_model::event::EventTx for PgTx<'_> {
    // --- events ------------------------------------------------------------------------------

    fn insert_event(&mut self, e: &Event) -> StoreResult<()> {
        if let Some(d) = self.deferred::<Deferred>() {
            d.events.push(e.clone());
            return Ok(());
        }
        let row = NewEventRow::new(e);
        self.write(|c| diesel::insert_into(events::table).values(&row).execute(c)).map(drop)
    }

    fn list_events(&mut self, org: OrgId) -> StoreResult<Vec<Event>> {
        use events::dsl as ev;
        let rows = self.read(|c| ev::events.filter(ev::org_id.eq(org.0)).order_by(ev::seq).select(EventRow::as_select()).load(c))?;
        rows.into_iter().map(EventRow::into_domain).collect()
    }

    fn list_events_from(&mut self, org: OrgId, skip: usize) -> StoreResult<Vec<Event>> {
        use events::dsl as ev;
        let skip = i64::try_from(skip).unwrap_or(i64::MAX);
        let rows = self.read(|c| {
            ev::events
                .filter(ev::org_id.eq(org.0))
                .order_by(ev::seq)
                .offset(skip)
                .select(EventRow::as_select())
                .load(c)
        })?;
        rows.into_iter().map(EventRow::into_domain).collect()
    }

    fn event_by_id(&mut self, id: EventId) -> StoreResult<Option<Event>> {
        use events::dsl as ev;
        let row = self.read(|c| ev::events.filter(ev::id.eq(id.0)).select(EventRow::as_select()).first(c).optional())?;
        row.map(EventRow::into_domain).transpose()
    }

    fn events_by_ids(&mut self, ids: &[EventId]) -> StoreResult<Vec<Event>> {
        use events::dsl as ev;
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let rows = self.read(|c| ev::events.filter(ev::id.eq_any(&ids)).select(EventRow::as_select()).load(c))?;
        rows.into_iter().map(EventRow::into_domain).collect()
    }
}
