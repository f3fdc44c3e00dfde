//! What a store offers for branches (part of [`crate::store::Tx`]). Deleted branches (with
//! `deleted_at`) are never returned.

use super::Branch;
use crate::error::StoreResult;
use crate::ids::{BranchId, OrgId};

pub trait BranchTx {
    fn insert_branch(&mut self, b: &Branch) -> StoreResult<()>;
    fn branch(&mut self, org: OrgId, id: BranchId) -> StoreResult<Option<Branch>>;
    /// The deleted branch of the organization with this id (the one exception to "deleted
    /// branches are never returned": organization admins may still read a retired branch's
    /// records).
    fn retired_branch(&mut self, org: OrgId, id: BranchId) -> StoreResult<Option<Branch>>;
    /// The live branch of the organization whose [`Branch::name_key`] is `key`. Live branch
    /// keys are unique per organization (constraint `branches_org_name_key`).
    fn branch_by_name(&mut self, org: OrgId, key: &str) -> StoreResult<Option<Branch>>;
    /// Live branches, oldest first, with `user_count` filled in.
    fn list_branches(&mut self, org: OrgId) -> StoreResult<Vec<Branch>>;
    fn update_branch(&mut self, b: &Branch) -> StoreResult<()>;
}
