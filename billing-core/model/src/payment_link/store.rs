//! What a store offers for payment links (part of [`crate::store::Tx`]).

use super::{LinkAttempt, PaymentLink, PaymentLinkFilter, PaymentLinkSort, PaymentLinkStatus};
use crate::coupon::Coupon;
use crate::error::StoreResult;
use crate::ids::{BranchId, ConsumerId, CouponId, PaymentLinkId, ProductId};
use crate::list::{ListQuery, Page};
use crate::money::Money;
use crate::product::Product;
use serde_json::{Map, Value};
use uuid::Uuid;

/// Payment link reads and writes inside one transaction.
///
/// - `insert_payment_link` / `update_payment_link` write the link with its items (an update
///   replaces the items; updating a missing link is `StoreError::NotFound`); reads return the
///   items in their order; `update_payment_link_row` writes the link's own fields alone (its
///   count, status, dates) and leaves its stored items as they are. An item's `line.id` is the item's id. Short ids are unique
///   (constraint `payment_links_short_id_key`).
/// - Lists search name and description (case-insensitive substring); dates filter `created_at`
///   and prices filter `amount` (inclusive, bounds through [`crate::money::stored_bound`]);
///   `product_ids` keeps links with an item of one of them.
/// - Attempts in flight: at most one per link and session key (constraint
///   `payment_link_attempts_session_key`); an attempt row lives from the moment its charge is
///   recorded until its outcome is.
pub trait PaymentLinkTx {
    fn insert_payment_link(&mut self, l: &PaymentLink) -> StoreResult<()>;
    fn payment_link(&mut self, branch: BranchId, id: PaymentLinkId) -> StoreResult<Option<PaymentLink>>;
    /// The link with this short id, of any organization and branch (the public checkout's
    /// lookup).
    fn payment_link_by_short_id(&mut self, short_id: &str) -> StoreResult<Option<PaymentLink>>;
    fn update_payment_link(&mut self, l: &PaymentLink) -> StoreResult<()>;
    fn update_payment_link_row(&mut self, l: &PaymentLink) -> StoreResult<()>;
    /// The link's `custom_metadata` alone (what every event of its invoices carries): one
    /// column, so that emitting an event does not load the link with its items.
    fn payment_link_metadata(&mut self, branch: BranchId, id: PaymentLinkId) -> StoreResult<Option<Map<String, Value>>>;
    /// Adds `amount` (in the link's currency) to the link's `amount_collected` in place, so that
    /// recording a payment need not read and rewrite the link; a missing link is
    /// `StoreError::NotFound`.
    fn add_payment_link_collected(&mut self, branch: BranchId, id: PaymentLinkId, amount: Money) -> StoreResult<()>;
    /// The branch's live (not deleted) products among `ids`, with their prices, in any order:
    /// the products a page of links shows (one statement for the products, one for their
    /// prices, however many links).
    fn link_products(&mut self, branch: BranchId, ids: &[ProductId]) -> StoreResult<Vec<Product>>;
    /// The branch's live (not deleted) coupons among `ids`, in any order (one statement).
    fn link_coupons(&mut self, branch: BranchId, ids: &[CouponId]) -> StoreResult<Vec<Coupon>>;
    fn list_payment_links(&mut self, branch: BranchId, q: &ListQuery<PaymentLinkSort>, f: &PaymentLinkFilter) -> StoreResult<Page<PaymentLink>>;
    /// Whether the consumer is the payer of a link of `branch` in one of `statuses`.
    fn consumer_has_payment_links_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[PaymentLinkStatus]) -> StoreResult<bool>;

    fn insert_link_attempt(&mut self, a: &LinkAttempt) -> StoreResult<()>;
    fn link_attempt(&mut self, id: Uuid) -> StoreResult<Option<LinkAttempt>>;
    /// Deletes the attempt; returns whether it was there.
    fn delete_link_attempt(&mut self, id: Uuid) -> StoreResult<bool>;
    /// Attempts in flight on the link.
    fn count_link_attempts(&mut self, link: PaymentLinkId) -> StoreResult<u64>;
}
