//! What a store offers for idempotency keys (part of [`crate::store::Tx`]).

use super::{Claim, IdempotencyRecord};
use crate::clock::Timestamp;
use crate::error::StoreResult;
use crate::ids::OrgId;

/// Records are identified by (organization, scope, key); a record of another organization or
/// scope is missing.
pub trait IdempotencyTx {
    /// The record, if any.
    fn idempotency_record(&mut self, org: OrgId, scope: &str, key: &str) -> StoreResult<Option<IdempotencyRecord>>;
    /// A record with an existing (organization, scope, key) is a `UniqueViolation`.
    fn insert_idempotency_record(&mut self, r: &IdempotencyRecord) -> StoreResult<()>;
    /// Replaces every stored field of the record named by `r` with `r`'s, only while its owner
    /// is still `owner`; returns whether it did.
    fn update_idempotency_record(&mut self, r: &IdempotencyRecord, owner: uuid::Uuid) -> StoreResult<bool>;
    /// Sets the claimed record's state to `COMMITTED` and its lease to `lease_until`, only while
    /// it is owned by the claim and not `DONE`; returns whether it did. One statement: it runs
    /// in every write transaction of an operation under a key.
    fn mark_idempotency_committed(&mut self, claim: &Claim, lease_until: Timestamp) -> StoreResult<bool>;
    /// Deletes the claimed record while it is owned by the claim and still `RUNNING`; returns
    /// whether it did.
    fn release_idempotency_record(&mut self, claim: &Claim) -> StoreResult<bool>;
    /// Deletes the organization's records created before `before`; returns how many.
    fn purge_idempotency_records(&mut self, org: OrgId, before: Timestamp) -> StoreResult<u64>;
}
