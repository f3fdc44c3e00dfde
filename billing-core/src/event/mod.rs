//! Recording events in the outbox. The event types are [`billing_model::event`]'s.

pub use billing_model::event::*;

use crate::error::Result;
use crate::store::Tx;

/// Writes `e` to the outbox in the caller's transaction, with the due-work item that fans it
/// out to webhook deliveries when a live, enabled endpoint of its branch subscribes to its type
/// (see [`crate::webhook`]): in the same transaction, so no committed event is missed, whatever
/// order concurrent transactions commit in.
pub fn record(tx: &mut dyn Tx, e: &Event) -> Result<()> {
    tx.insert_event(e)?;
    crate::webhook::enqueue_fan_out(tx, e)
}
