//! Running the due-work queue: claims, the handlers of every kind of work, batches. The queue's
//! types are [`billing_model::work`]'s.
//!
//! - Each kind of work has a [`Handler`], defined in its resource's module and wired into the
//!   engine by the composition root ([`crate::billing::work_handlers`]).

pub use billing_model::work::*;

pub(crate) mod batch;
pub mod ops;

/// How one kind of due work runs.
pub struct Handler<E> {
    /// The `kind` of its items (`webhook.delivery`).
    pub kind: &'static str,
    /// Whether the items of one claim run together, in one call (the webhook fan-out makes the
    /// deliveries of many events in one transaction); otherwise each item runs alone, on a
    /// runner of its own.
    pub batched: bool,
    /// Whether this engine can run the kind now (a delivery needs a webhook transport); items
    /// of a kind that is not ready are not claimed.
    pub ready: fn(&E) -> bool,
    /// Runs claimed items of this kind and counts what it did in the report. An item whose
    /// lease was lost is skipped (another process has it); an item that fails is counted in
    /// [`WorkReport::errors`] and left to its lease, so it runs again later.
    pub run: fn(&E, &[&DueWork], &mut WorkReport),
}
