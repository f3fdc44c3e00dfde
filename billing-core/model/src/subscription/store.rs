//! What a store offers for subscriptions (part of [`crate::store::Tx`]).

use super::{Subscription, SubscriptionFilter, SubscriptionSort, SubscriptionStatus};
use crate::clock::Timestamp;
use crate::error::StoreResult;
use crate::ids::{BranchId, ConsumerId, InvoiceId, SubscriptionId};
use crate::list::{ListQuery, Page};

/// Subscription reads and writes inside one transaction.
///
/// - `insert_subscription` / `update_subscription` write the subscription with its items (an
///   update replaces the items; updating a missing one is `StoreError::NotFound`); reads return
///   the items in their order. An item's `line.id` is the item's id.
/// - `update_subscription_row` writes the subscription's own fields and leaves its stored
///   items as they are (`s.items` is not read): for a caller that changed no item since it
///   read the subscription (a status, a counter, a date), it saves rewriting every item.
/// - Cycles: `insert_subscription_cycle` records that cycle `cycle` of the subscription is
///   billed by `invoice`. A second row for the same subscription and cycle is a
///   `UniqueViolation` of `subscription_cycles_key`, whatever transactions race: this is what
///   makes one invoice per subscription and cycle. `subscription_cycles` lists them by cycle.
/// - Lists: `search` matches the description or the name of a product of an item
///   (case-insensitive substring); dates filter `created_at` and the current period's bounds
///   (inclusive); prices filter `amount` (inclusive, bounds through
///   [`crate::money::stored_bound`]); `product_ids` keeps subscriptions with an item of one of
///   them; `currencies` keeps those in one of them.
pub trait SubscriptionTx {
    fn insert_subscription(&mut self, s: &Subscription) -> StoreResult<()>;
    fn subscription(&mut self, branch: BranchId, id: SubscriptionId) -> StoreResult<Option<Subscription>>;
    /// Writes the subscription and its items. What is fixed when it is made (organization,
    /// branch, creator, consumer, creation time) never changes, and a store need not write it
    /// again.
    fn update_subscription(&mut self, s: &Subscription) -> StoreResult<()>;
    /// [`Self::subscription`] for a change of its row alone ([`Self::update_subscription_row`]):
    /// a store may leave `items` empty. The default reads it whole.
    fn subscription_row(&mut self, branch: BranchId, id: SubscriptionId) -> StoreResult<Option<Subscription>> {
        self.subscription(branch, id)
    }
    /// [`Self::update_subscription`] without the items (they stay as stored).
    fn update_subscription_row(&mut self, s: &Subscription) -> StoreResult<()>;
    /// Marks `invoice` paid as the subscription's latest invoice (`latest_invoice_paid`, and
    /// `updated_at = at`), when it is the latest invoice, not marked paid yet, and the status
    /// is one of `statuses`; answers whether it did (`false`: nothing was written). Nothing
    /// else of the subscription changes. A store may do it in one statement (a paid renewal
    /// then neither reads nor rewrites the row); the default reads the row and writes it.
    fn mark_latest_invoice_paid(
        &mut self,
        branch: BranchId,
        id: SubscriptionId,
        invoice: InvoiceId,
        statuses: &[SubscriptionStatus],
        at: Timestamp,
    ) -> StoreResult<bool> {
        let Some(mut s) = self.subscription_row(branch, id)? else { return Ok(false) };
        if s.latest_invoice_id != Some(invoice) || s.latest_invoice_paid || !statuses.contains(&s.status) {
            return Ok(false);
        }
        s.latest_invoice_paid = true;
        s.updated_at = Some(at);
        self.update_subscription_row(&s)?;
        Ok(true)
    }
    fn list_subscriptions(&mut self, branch: BranchId, q: &ListQuery<SubscriptionSort>, f: &SubscriptionFilter) -> StoreResult<Page<Subscription>>;
    /// Whether the consumer has a subscription of `branch` in one of `statuses`.
    fn consumer_has_subscriptions_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[SubscriptionStatus]) -> StoreResult<bool>;
    fn insert_subscription_cycle(&mut self, subscription: SubscriptionId, cycle: u32, invoice: InvoiceId) -> StoreResult<()>;
    /// A hint: this transaction is about to renew these subscriptions one after the other, so
    /// it will read each one (with its items), its freezes, its scheduled plan change, its
    /// cycles and its consumer's latest active card. A store may read them all now, together;
    /// whatever it answers later must still be what a read at that moment would answer. The
    /// default does nothing.
    fn prefetch_renewals(&mut self, ids: &[SubscriptionId]) -> StoreResult<()> {
        let _ = ids;
        Ok(())
    }
    /// A hint, in a read transaction: it is about to read, for each of these subscriptions (a
    /// page of a list), what its response shows: its trial, freezes and scheduled plan change,
    /// its consumer and its latest invoice's payments. A store may read them all now, together;
    /// whatever it answers later must still be what a read at that moment would answer. The
    /// default does nothing.
    fn prefetch_subscription_views(&mut self, subs: &[Subscription]) -> StoreResult<()> {
        let _ = subs;
        Ok(())
    }
    /// `(cycle, invoice)` of every billed cycle, by cycle.
    fn subscription_cycles(&mut self, subscription: SubscriptionId) -> StoreResult<Vec<(u32, InvoiceId)>>;
}
