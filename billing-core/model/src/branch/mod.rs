//! Branches: every resource lives in one. Organization admins see and manage all of them;
//! branch admins and branch users see only their assigned branches.

pub mod store;
pub mod view;

pub use store::BranchTx;
pub use view::BranchDto;

use crate::clock::{format_rfc3339, Timestamp};
use crate::error::Result;
use crate::ids::{BranchId, OrgId};
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

    /// What makes two branch names the same: surrounding spaces and case (of every script) do
    /// not count. Stores keep it beside the name, under a unique index among live branches.
    pub fn name_key(name: &str) -> String {
        name.trim().to_lowercase()
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
