//! Webhooks' operations: endpoints, the fan-out of events to deliveries, attempts and their
//! records, retries. The types, signatures and the transport trait are
//! [`billing_model::webhook`]'s.

pub use billing_model::webhook::*;

pub(crate) mod batches;
mod deliver;
pub mod ops;
pub(crate) mod record;

pub(crate) use deliver::{enqueue_fan_out, work_handlers};
pub use deliver::{DELIVERED, DELIVERY_KIND, FAILED_ATTEMPTS, FANNED_OUT, FANOUT_KIND};
