//! What the delivery attempts in flight share: the batches that read their deliveries and
//! record their outcomes together (see [`super::record`]), and what one attempt made.

use super::{Delivery, DeliveryContext, Outcome};
use crate::clock::Timestamp;
use crate::error::Result;
use crate::work::batch::Batcher;
use crate::work::DueWork;
use uuid::Uuid;

/// Most attempts one batch reads or records.
const MAX_BATCH: usize = 256;

/// How an attempt was asked for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    Scheduled,
    /// A manual retry; `prior_due` is when the delivery's schedule had its next attempt.
    Manual {
        prior_due: Option<Timestamp>,
    },
}

/// An attempt made, to be recorded.
pub(crate) struct Made {
    /// The claimed item (its lease is checked when recording).
    pub item: DueWork,
    /// The delivery as read before the call. Only the holder of the item's lease writes it, so
    /// it is still current when the lease check passes.
    pub delivery: Delivery,
    pub outcome: Outcome,
    pub mode: Mode,
    /// Server times the attempt started and ended.
    pub started: Timestamp,
    pub ended: Timestamp,
}

/// The batches of the attempts in flight in this engine (see the module's comment).
pub(crate) struct AttemptBatches {
    pub(crate) contexts: Batcher<Uuid, Result<Option<DeliveryContext>>>,
    pub(crate) records: Batcher<Made, Result<Option<bool>>>,
}

impl Default for AttemptBatches {
    fn default() -> Self {
        AttemptBatches {
            contexts: Batcher::new(MAX_BATCH),
            records: Batcher::new(MAX_BATCH),
        }
    }
}
