//! What a store offers for API keys (part of [`crate::store::Tx`]).

use super::ApiKey;
use crate::branch::{Branch, BranchTx};
use crate::error::StoreResult;
use crate::ids::{ApiKeyId, BranchId, OrgId};
use crate::org::{OrgTx, Organization};

pub trait ApiKeyTx: OrgTx + BranchTx {
    fn insert_api_key(&mut self, key: &ApiKey) -> StoreResult<()>;
    /// The key whose public part is `key`, revoked or not.
    fn api_key_by_key(&mut self, key: &str) -> StoreResult<Option<ApiKey>>;
    /// What authenticating a request with an API key needs, in one lookup: the key (revoked or
    /// not), its organization, and the live branch of that organization with id `branch` (the
    /// key's default branch when `None`), if there is one.
    fn api_key_context(&mut self, key: &str, branch: Option<BranchId>) -> StoreResult<Option<(ApiKey, Organization, Option<Branch>)>> {
        let Some(k) = self.api_key_by_key(key)? else { return Ok(None) };
        let Some(org) = self.org(k.org_id)? else { return Ok(None) };
        let b = self.branch(k.org_id, branch.unwrap_or(k.default_branch_id))?;
        Ok(Some((k, org, b)))
    }
    /// The organization's keys, revoked ones too, oldest first (ties by id).
    fn list_api_keys(&mut self, org: OrgId) -> StoreResult<Vec<ApiKey>>;
    /// Marks the key revoked at `at`, if it was not already (then it keeps its first time).
    fn revoke_api_key(&mut self, org: OrgId, id: ApiKeyId, at: crate::clock::Timestamp) -> StoreResult<()>;
    /// Unrevoked keys whose default branch is `branch`.
    fn count_api_keys_defaulting_to(&mut self, branch: BranchId) -> StoreResult<u64>;
}
