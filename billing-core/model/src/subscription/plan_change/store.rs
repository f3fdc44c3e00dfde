//! What a store offers for plan changes and for re-pointing a cycle at another invoice (part of
//! [`crate::store::Tx`]).

use super::PlanChange;
use crate::error::StoreResult;
use crate::ids::{InvoiceId, SubscriptionId};

/// Plan-change reads and writes inside one transaction.
///
/// - A subscription has at most one SCHEDULED change: inserting (or updating into) a second is
///   a `UniqueViolation` of `subscription_plan_changes_scheduled_key`. Changes in other
///   statuses are kept as history (`plan_changes`, oldest first). Every field round-trips
///   (the target plan through [`PlanChange::body_to_stored`]).
/// - Cycles (the `subscription_cycles` rows of [`crate::subscription::SubscriptionTx`]):
///   `subscription_cycle_invoice` reads the invoice of one cycle; a re-issued invoice takes
///   the cycle's row over (`replace_subscription_cycle_invoice`, only if the row still points
///   at `old`), and a prepared invoice withdrawn before its cycle frees it
///   (`delete_subscription_cycle`, only if it still points at `invoice`): a cycle always has
///   at most one row, so at most one live invoice.
pub trait PlanChangeTx {
    fn insert_plan_change(&mut self, c: &PlanChange) -> StoreResult<()>;
    /// Updates a change; a missing one is `StoreError::NotFound`.
    fn update_plan_change(&mut self, c: &PlanChange) -> StoreResult<()>;
    fn scheduled_plan_change(&mut self, subscription: SubscriptionId) -> StoreResult<Option<PlanChange>>;
    fn plan_changes(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<PlanChange>>;
    fn subscription_cycle_invoice(&mut self, subscription: SubscriptionId, cycle: u32) -> StoreResult<Option<InvoiceId>>;
    fn replace_subscription_cycle_invoice(&mut self, subscription: SubscriptionId, cycle: u32, old: InvoiceId, new: InvoiceId) -> StoreResult<bool>;
    fn delete_subscription_cycle(&mut self, subscription: SubscriptionId, cycle: u32, invoice: InvoiceId) -> StoreResult<bool>;
}
