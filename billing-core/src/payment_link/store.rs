//! What a store offers for payment links (part of [`crate::store::Tx`]).

use super::{PaymentLink, PaymentLinkFilter, PaymentLinkSort, PaymentLinkStatus};
use crate::ids::{BranchId, ConsumerId, PaymentLinkId};
use crate::list::{ListQuery, Page};
use crate::store::StoreResult;

/// Payment link reads and writes inside one transaction.
///
/// - `insert_payment_link` / `update_payment_link` write the link with its items (an update
///   replaces the items; updating a missing link is `StoreError::NotFound`); reads return the
///   items in their order. An item's `line.id` is the item's id. Short ids are unique
///   (constraint `payment_links_short_id_key`).
/// - Lists search name and description (case-insensitive substring); dates filter `created_at`
///   and prices filter `amount` (inclusive, bounds through [`crate::money::stored_bound`]);
///   `product_ids` keeps links with an item of one of them.
pub trait PaymentLinkTx {
    fn insert_payment_link(&mut self, l: &PaymentLink) -> StoreResult<()>;
    fn payment_link(&mut self, branch: BranchId, id: PaymentLinkId) -> StoreResult<Option<PaymentLink>>;
    /// The link with this short id, of any organization and branch (the public checkout's
    /// lookup).
    fn payment_link_by_short_id(&mut self, short_id: &str) -> StoreResult<Option<PaymentLink>>;
    fn update_payment_link(&mut self, l: &PaymentLink) -> StoreResult<()>;
    fn list_payment_links(&mut self, branch: BranchId, q: &ListQuery<PaymentLinkSort>, f: &PaymentLinkFilter) -> StoreResult<Page<PaymentLink>>;
    /// Whether the consumer is the payer of a link of `branch` in one of `statuses`.
    fn consumer_has_payment_links_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[PaymentLinkStatus]) -> StoreResult<bool>;
}
