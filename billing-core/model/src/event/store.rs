//! What a store offers for the event outbox (part of [`crate::store::Tx`]).

use super::Event;
use crate::error::StoreResult;
use crate::ids::{EventId, OrgId};

pub trait EventTx {
    fn insert_event(&mut self, e: &Event) -> StoreResult<()>;
    /// The organization's events in the order they were written.
    fn list_events(&mut self, org: OrgId) -> StoreResult<Vec<Event>>;
    /// [`Self::list_events`] without the first `skip`: what a reader that has read `skip` of them
    /// has not read yet (one reading while nothing else writes, as the simulation does: a
    /// transaction committing later may take an earlier place).
    fn list_events_from(&mut self, org: OrgId, skip: usize) -> StoreResult<Vec<Event>>;
    /// The event with this id (any organization).
    fn event_by_id(&mut self, id: EventId) -> StoreResult<Option<Event>>;
    /// The events with these ids that exist (any organization, in any order): one statement
    /// for a batch in stores that can (the webhook fan-out reads a claim's events with it).
    fn events_by_ids(&mut self, ids: &[EventId]) -> StoreResult<Vec<Event>> {
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            found.extend(self.event_by_id(*id)?);
        }
        Ok(found)
    }
}
