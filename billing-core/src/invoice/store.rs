//! What a store offers for invoices and payments (part of [`crate::store::Tx`]).

use super::{Invoice, InvoiceFilter, InvoiceSort, Payment, PaymentFilter, PaymentSort, TokenizedCard};
use crate::ids::{BranchId, ConsumerId, CouponId, InvoiceId, OrgId, PaymentId};
use crate::list::{ListQuery, Page};
use crate::store::StoreResult;

/// Invoice and payment reads and writes inside one transaction.
///
/// - Invoice numbers: `next_invoice_number` returns 1, 2, 3, … per organization; two
///   transactions never get the same number and a rolled-back one gives its number back (the
///   counter is a row written in the same transaction).
/// - `insert_invoice` / `update_invoice` write the invoice with its items (an update replaces
///   the items); `invoice` reads them back, items in their order.
/// - Payments of an invoice come back ordered by `number`.
/// - Lists: invoices search the description and the consumer's name (case-insensitive
///   substring) or the exact invoice number; payments search the payment's note and refund note
///   and the invoice's description. Dates filter `created_at` (inclusive); due dates filter
///   `scheduled_on`; prices filter `total_amount`.
pub trait InvoiceTx {
    fn next_invoice_number(&mut self, org: OrgId) -> StoreResult<i64>;
    fn insert_invoice(&mut self, inv: &Invoice) -> StoreResult<()>;
    fn invoice(&mut self, branch: BranchId, id: InvoiceId) -> StoreResult<Option<Invoice>>;
    fn update_invoice(&mut self, inv: &Invoice) -> StoreResult<()>;
    fn list_invoices(&mut self, branch: BranchId, q: &ListQuery<InvoiceSort>, f: &InvoiceFilter) -> StoreResult<Page<Invoice>>;
    /// Whether the consumer has an invoice that is neither COMPLETED nor CANCELED.
    fn consumer_has_open_invoices(&mut self, branch: BranchId, consumer: ConsumerId) -> StoreResult<bool>;

    fn insert_payment(&mut self, p: &Payment) -> StoreResult<()>;
    fn payment(&mut self, branch: BranchId, id: PaymentId) -> StoreResult<Option<Payment>>;
    fn update_payment(&mut self, p: &Payment) -> StoreResult<()>;
    fn delete_payment(&mut self, id: PaymentId) -> StoreResult<()>;
    fn invoice_payments(&mut self, invoice: InvoiceId) -> StoreResult<Vec<Payment>>;
    fn list_payments(&mut self, branch: BranchId, q: &ListQuery<PaymentSort>, f: &PaymentFilter) -> StoreResult<Page<Payment>>;

    fn insert_card(&mut self, c: &TokenizedCard) -> StoreResult<()>;
    /// The consumer's most recently created active card.
    fn latest_active_card(&mut self, consumer: ConsumerId) -> StoreResult<Option<TokenizedCard>>;

    /// Counts one more redemption of the coupon (its `redemptions`, which `update_coupon`
    /// does not write).
    fn redeem_coupon(&mut self, coupon: CouponId) -> StoreResult<()>;
}
