//! What a store offers for invoices (part of [`crate::store::Tx`]).

use super::{Invoice, InvoiceFilter, InvoiceSort, InvoiceStatus};
use crate::error::StoreResult;
use crate::ids::{BranchId, ConsumerId, InvoiceId, OrgId};
use crate::list::{ListQuery, Page};

/// Invoice reads and writes inside one transaction.
///
/// - Invoice numbers: `next_invoice_number` returns 1, 2, 3, … per organization; two
///   transactions never get the same number and a rolled-back one gives its number back (the
///   counter is a row written in the same transaction).
/// - `insert_invoice` / `update_invoice` write the invoice with its items (an update replaces
///   the items; updating a missing invoice is `StoreError::NotFound`); `invoice` reads them
///   back, items in their order. `update_invoice_row` writes the invoice's own fields and
///   leaves its stored items as they are (`inv.items` is not read), for a caller that changed
///   no item (a payment recorded, a status).
/// - Lists search the description and the consumer's name (case-insensitive substring) or the
///   exact invoice number. Dates filter `created_at` (inclusive); due dates filter
///   `scheduled_on`; prices filter `total_amount` (bounds through
///   [`crate::money::stored_bound`]); each [`super::PaymentMatch`] keeps the invoices with a
///   payment matching it.
pub trait InvoiceTx {
    fn next_invoice_number(&mut self, org: OrgId) -> StoreResult<i64>;
    fn insert_invoice(&mut self, inv: &Invoice) -> StoreResult<()>;
    fn invoice(&mut self, branch: BranchId, id: InvoiceId) -> StoreResult<Option<Invoice>>;
    /// The invoice with this id, of any organization and branch (the public pay page's lookup:
    /// the invoice's id is its capability).
    fn invoice_by_id(&mut self, id: InvoiceId) -> StoreResult<Option<Invoice>>;
    /// A hint: this transaction is about to read these invoices, their payments and their
    /// consumers, one after the other (the outcomes of a batch of charges). A store may read them
    /// all now; whatever it answers later must still be what a read at that moment would
    /// answer. The default does nothing.
    fn prefetch_invoices(&mut self, ids: &[InvoiceId]) -> StoreResult<()> {
        let _ = ids;
        Ok(())
    }
    /// Writes the invoice and its items. What is fixed when the invoice is made (organization,
    /// branch, creator, consumer, number, creation time) never changes, and a store need not
    /// write it again.
    fn update_invoice(&mut self, inv: &Invoice) -> StoreResult<()>;
    /// [`Self::update_invoice`] without the items (they stay as stored).
    fn update_invoice_row(&mut self, inv: &Invoice) -> StoreResult<()>;
    fn list_invoices(&mut self, branch: BranchId, q: &ListQuery<InvoiceSort>, f: &InvoiceFilter) -> StoreResult<Page<Invoice>>;
    /// Whether the consumer has an invoice in one of `statuses`.
    fn consumer_has_invoices_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[InvoiceStatus]) -> StoreResult<bool>;
}
