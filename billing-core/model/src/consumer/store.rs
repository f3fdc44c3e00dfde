//! What a store offers for consumers (part of [`crate::store::Tx`]). Deleted consumers are
//! returned by `consumer` (with `is_deleted`) but never by lists or conflict checks.

use super::{Consumer, ConsumerFilter, ConsumerSort};
use crate::error::StoreResult;
use crate::ids::{BranchId, ConsumerId};
use crate::list::{ListQuery, Page};

pub trait ConsumerTx {
    fn insert_consumer(&mut self, c: &Consumer) -> StoreResult<()>;
    fn consumer(&mut self, branch: BranchId, id: ConsumerId) -> StoreResult<Option<Consumer>>;
    /// These consumers of `branch` (deleted ones too, as `consumer`) in one read, in no
    /// particular order; ids of no consumer of the branch are left out.
    fn consumers_by_ids(&mut self, branch: BranchId, ids: &[ConsumerId]) -> StoreResult<Vec<Consumer>>;
    fn update_consumer(&mut self, c: &Consumer) -> StoreResult<()>;
    /// A live consumer of `branch` other than `except` with this phone number or this
    /// (lower-cased) e-mail. Unique indexes `consumers_branch_phone_key` and
    /// `consumers_branch_email_key` enforce the same rule.
    fn consumer_conflict(&mut self, branch: BranchId, phone: Option<&str>, email_lower: Option<&str>, except: ConsumerId) -> StoreResult<Option<Consumer>>;
    /// Live consumers of `branch` matching the search (case-insensitive substring of name,
    /// e-mail, phone, alias, external id; or the exact IBAN) and filters, sorted by the field
    /// then by id, one page of them, plus the total count across pages.
    fn list_consumers(&mut self, branch: BranchId, q: &ListQuery<ConsumerSort>, f: &ConsumerFilter) -> StoreResult<Page<Consumer>>;
}
