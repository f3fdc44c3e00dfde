//! What the API answers of a branch: BranchItem and the list of them, and BranchDto (the branch a resource belongs to).

use super::Branch;
use crate::clock::Timestamp;
use crate::ids::BranchId;
use schemars::JsonSchema;
use serde::Serialize;

/// BranchItem: a branch of the organization.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BranchItem<'a> {
    /// The branch's id (the `x-branch-id` header of requests acting in it).
    pub id: BranchId,
    /// The branch's name, unique in the organization.
    pub name: &'a str,
    /// How many users of the organization are assigned to the branch.
    #[schemars(with = "Option<crate::schema::Integer>")]
    pub user_count: u64,
    /// When the branch was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
}

/// BranchListResponse: the branches the caller can use.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BranchListResponse<'a> {
    /// The branches (all of them, unpaged).
    pub data: Vec<BranchItem<'a>>,
}

impl Branch {
    /// BranchItem, borrowed from the branch.
    pub fn item(&self) -> BranchItem<'_> {
        BranchItem {
            id: self.id,
            name: &self.name,
            user_count: self.user_count,
            created_at: self.created_at,
        }
    }
}

impl<'a> BranchListResponse<'a> {
    pub fn of(branches: &'a [Branch]) -> Self {
        BranchListResponse {
            data: branches.iter().map(Branch::item).collect(),
        }
    }
}

/// BranchDto: the branch a resource belongs to.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BranchDto<'a> {
    /// The branch's id.
    pub id: BranchId,
    /// The branch's name.
    pub name: &'a str,
}
