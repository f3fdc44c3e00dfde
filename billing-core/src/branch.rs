//! Branches: every resource lives in one. Organization admins see and manage all of them;
//! branch admins and branch users see only their assigned branches.

use crate::auth::Scope;
use crate::clock::{format_rfc3339, Timestamp};
use crate::engine::Billing;
use crate::error::{Code, Error, Result};
use crate::ids::{BranchId, OrgId};
use crate::org::Role;
use crate::store::Store;
use crate::wire::Body;
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    pub id: BranchId,
    pub org_id: OrgId,
    pub name: String,
    pub created_at: Timestamp,
    pub deleted_at: Option<Timestamp>,
    /// Users assigned to the branch; filled in by store reads, ignored on writes.
    pub user_count: u64,
}

impl Branch {
    pub fn new(org_id: OrgId, name: &str, now: Timestamp) -> Self {
        Branch {
            id: BranchId::new(),
            org_id,
            name: name.to_string(),
            created_at: now,
            deleted_at: None,
            user_count: 0,
        }
    }

    /// BranchItem.
    pub fn to_json(&self) -> Value {
        json!({"id": self.id, "name": self.name, "user_count": self.user_count, "created_at": format_rfc3339(&self.created_at)})
    }

    /// The `{id, name}` summary embedded in other resources.
    pub fn summary(&self) -> Value {
        json!({"id": self.id, "name": self.name})
    }
}

pub const MAX_BRANCH_NAME: usize = 255;

/// CreateBranchRequest / UpdateBranchRequest.
pub fn parse_branch_name(v: &Value) -> Result<String> {
    let mut b = Body::new(v);
    let name = b.req_text("name", MAX_BRANCH_NAME);
    b.finish()?;
    Ok(name.expect("checked"))
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
            if let Some(existing) = tx.branch_by_name(scope.org_id(), &name)? {
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
            if let Some(other) = tx.branch_by_name(scope.org_id(), &name)? {
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
