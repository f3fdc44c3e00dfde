//! Every kind of due work the engine runs, and its handler. A new kind (renewals, dunning,
//! installment charges) is one line here and a handler in its resource's module.

use super::Handler;
use crate::store::Store;

/// The handlers of every kind of due work, in the order a claim's jobs are started.
pub fn registry<S: Store>() -> Vec<Handler<S>> {
    let mut all = Vec::new();
    all.extend(crate::webhook::work_handlers());
    all.extend(crate::payment::work_handlers());
    all.extend(crate::payment::installment::work_handlers());
    all.extend(crate::payment_link::work_handlers());
    all.extend(crate::subscription::work_handlers());
    all.extend(crate::notification::send::work_handlers());
    all
}
