//! Branches: every resource lives in one. Organization admins see and manage all of them;
//! branch admins and branch users see only their assigned branches.

pub mod store;
pub mod view;
pub mod wire;

pub use store::BranchTx;
pub use view::{BranchDto, BranchItem, BranchListResponse};
pub use wire::parse_branch_name;

use crate::clock::Timestamp;
use crate::ids::{BranchId, OrgId};
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

    /// What makes two branch names the same: surrounding spaces and case (of every script) do
    /// not count. Stores keep it beside the name, under a unique index among live branches.
    pub fn name_key(name: &str) -> String {
        name.trim().to_lowercase()
    }

    /// The `{id, name}` summary embedded in other resources.
    pub fn summary(&self) -> Value {
        json!({"id": self.id, "name": self.name})
    }
}
