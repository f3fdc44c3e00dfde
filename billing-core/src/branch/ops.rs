//! Branch operations: list, create (idempotent by name), get, rename, delete.

use super::Branch;
use crate::auth::Scope;
use crate::billing::Billing;
use crate::error::{Code, Error, Result};
use crate::ids::BranchId;
use crate::lane::Lane;
use crate::org::Role;
use crate::store::Store;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const LIST: Lane = Lane::Read;
    pub const GET: Lane = Lane::Read;
    pub const CREATE: Lane = Lane::Write;
    pub const UPDATE: Lane = Lane::Write;
    pub const DELETE: Lane = Lane::Write;
}

impl<S: Store> Billing<S> {
    pub fn list_branches(&self, scope: &Scope) -> Result<Vec<Branch>> {
        let all = self.store.read(|tx| Ok(tx.list_branches(scope.org_id())?))?;
        Ok(all.into_iter().filter(|b| scope.actor.access.allows(b.id)).collect())
    }

    /// Creates a branch; when one with the same name exists (case-insensitive), returns it.
    pub fn create_branch(&self, scope: &Scope, name: String) -> Result<Branch> {
        if scope.actor.role != Role::OrganizationAdmin {
            return Err(Error::forbidden("only organization admins create branches"));
        }
        let now = self.now(scope);
        self.store.write(|tx| {
            if let Some(existing) = tx.branch_by_name(scope.org_id(), &Branch::name_key(&name))? {
                return Ok(existing);
            }
            let b = Branch::new(scope.org_id(), &name, now);
            tx.insert_branch(&b)?;
            Ok(b)
        })
    }

    pub fn get_branch(&self, scope: &Scope, id: BranchId) -> Result<Branch> {
        let b = self
            .store
            .read(|tx| Ok(tx.branch(scope.org_id(), id)?))?
            .ok_or_else(|| Error::not_found("Branch", id))?;
        if !scope.actor.access.allows(b.id) {
            return Err(Error::forbidden(format!("no access to branch '{id}'")));
        }
        Ok(b)
    }

    /// Renames a branch; a name already used by another branch is refused.
    pub fn update_branch(&self, scope: &Scope, id: BranchId, name: String) -> Result<Branch> {
        if scope.actor.role == Role::BranchUser {
            return Err(Error::forbidden("branch users cannot change branches"));
        }
        self.store.write(|tx| {
            let mut b = tx.branch(scope.org_id(), id)?.ok_or_else(|| Error::not_found("Branch", id))?;
            if !scope.actor.access.allows(b.id) {
                return Err(Error::forbidden(format!("no access to branch '{id}'")));
            }
            if let Some(other) = tx.branch_by_name(scope.org_id(), &Branch::name_key(&name))? {
                if other.id != id {
                    return Err(Error::rule(Code::RESOURCE_ALREADY_EXISTS, format!("Branch with name '{name}' already exists")));
                }
            }
            b.name = name.clone();
            tx.update_branch(&b)?;
            Ok(b)
        })
    }

    /// Deletes (retires) a branch. The last branch, and a branch that an API key uses as its
    /// default, cannot be deleted: requests without `x-branch-id` would have nowhere to go.
    pub fn delete_branch(&self, scope: &Scope, id: BranchId) -> Result<()> {
        if scope.actor.role != Role::OrganizationAdmin {
            return Err(Error::forbidden("only organization admins delete branches"));
        }
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut b = tx.branch(scope.org_id(), id)?.ok_or_else(|| Error::not_found("Branch", id))?;
            if tx.list_branches(scope.org_id())?.len() <= 1 {
                return Err(Error::rule(Code::BRANCH_IN_USE, "the last branch of an organization cannot be deleted"));
            }
            let keys = tx.count_api_keys_defaulting_to(id)?;
            if keys > 0 {
                return Err(Error::rule(Code::BRANCH_IN_USE, format!("branch is the default branch of {keys} API key(s)")));
            }
            b.deleted_at = Some(now);
            tx.update_branch(&b)?;
            Ok(())
        })
    }
}
