//! What a store offers for payments and saved cards (part of [`crate::store::Tx`]).

use super::{Payment, PaymentFilter, PaymentSort, TokenizedCard};
use crate::clock::Timestamp;
use crate::error::StoreResult;
use crate::ids::{BranchId, ConsumerId, InvoiceId, PaymentId};
use crate::list::{ListQuery, Page};

/// Payment reads and writes inside one transaction.
///
/// - Payments of an invoice come back ordered by `number`; updating a missing payment is
///   `StoreError::NotFound`.
/// - Lists search the payment's note and refund note and the invoice's description; dates
///   filter `created_at` (inclusive).
/// - Failed pay attempts ([`super::limits`]): `record_failed_pay_attempt` adds one at `at` for
///   the target and client and deletes theirs from before `forget_before`;
///   `count_failed_pay_attempts` counts theirs at or after `since`. Any process sees the
///   others' once committed.
pub trait PaymentTx {
    fn insert_payment(&mut self, p: &Payment) -> StoreResult<()>;
    fn payment(&mut self, branch: BranchId, id: PaymentId) -> StoreResult<Option<Payment>>;
    /// Writes the payment. What is fixed when it is made (organization, branch, invoice,
    /// number, creation time) never changes, and a store need not write it again.
    fn update_payment(&mut self, p: &Payment) -> StoreResult<()>;
    fn delete_payment(&mut self, id: PaymentId) -> StoreResult<()>;
    fn invoice_payments(&mut self, invoice: InvoiceId) -> StoreResult<Vec<Payment>>;
    /// The payments of these invoices in one read (a page of invoices): grouped by invoice
    /// (in no particular order of the invoices), each invoice's by `number`.
    fn payments_of_invoices(&mut self, invoices: &[InvoiceId]) -> StoreResult<Vec<Payment>>;
    fn list_payments(&mut self, branch: BranchId, q: &ListQuery<PaymentSort>, f: &PaymentFilter) -> StoreResult<Page<Payment>>;

    fn insert_card(&mut self, c: &TokenizedCard) -> StoreResult<()>;
    /// The consumer's most recently created active card.
    fn latest_active_card(&mut self, consumer: ConsumerId) -> StoreResult<Option<TokenizedCard>>;

    fn record_failed_pay_attempt(&mut self, target: &str, client: &str, at: Timestamp, forget_before: Timestamp) -> StoreResult<()>;
    fn count_failed_pay_attempts(&mut self, target: &str, client: &str, since: Timestamp) -> StoreResult<u64>;
}
