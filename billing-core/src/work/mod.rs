//! Running the due-work queue: claims, the handlers of every kind of work, batches. The queue's
//! types are [`billing_model::work`]'s.
//!
//! - Each kind of work has a [`Handler`] in the engine's registry ([`registry`]): the webhook
//!   fan-out and deliveries, renewals, dunning and installment charges. A new kind is a handler
//!   in its resource's module and a line in the registry.

pub use billing_model::work::*;

pub(crate) mod batch;
pub mod ops;
mod registry;

pub use registry::registry;

use crate::billing::Billing;

/// How one kind of due work runs.
pub struct Handler<S> {
    /// The `kind` of its items (`webhook.delivery`).
    pub kind: &'static str,
    /// Whether the items of one claim run together, in one call (the webhook fan-out makes the
    /// deliveries of many events in one transaction); otherwise each item runs alone, on a
    /// runner of its own.
    pub batched: bool,
    /// Whether this engine can run the kind now (a delivery needs a webhook transport); items
    /// of a kind that is not ready are not claimed.
    pub ready: fn(&Billing<S>) -> bool,
    /// Runs claimed items of this kind and counts what it did in the report. An item whose
    /// lease was lost is skipped (another process has it); an item that fails is counted in
    /// [`WorkReport::errors`] and left to its lease, so it runs again later.
    pub run: fn(&Billing<S>, &[&DueWork], &mut WorkReport),
}
