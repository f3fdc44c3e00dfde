//! What the API answers of a branch inside other resources: BranchDto.

use crate::ids::BranchId;
use schemars::JsonSchema;
use serde::Serialize;

/// BranchDto: the branch a resource belongs to.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BranchDto<'a> {
    /// The branch's id.
    pub id: BranchId,
    /// The branch's name.
    pub name: &'a str,
}
