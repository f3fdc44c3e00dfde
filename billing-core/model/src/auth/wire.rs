//! API keys on the wire: the create request (its reader and its documentation).

use super::NewApiKey;
use crate::error::Result;
use crate::wire::{uuid_item, Body};
use serde_json::Value;

impl NewApiKey {
    /// `{"name", "branch_ids": [uuid], "default_branch_id", "is_all_branches"}`.
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let name = b.opt_text("name", 255);
        let branch_ids = b.opt_list("branch_ids", uuid_item);
        let default_branch_id = b.opt_uuid("default_branch_id");
        let is_all_branches = b.opt_bool("is_all_branches");
        b.finish()?;
        Ok(NewApiKey {
            name: name.unwrap_or_else(|| "api".into()),
            branch_ids: branch_ids.unwrap_or_default(),
            default_branch_id,
            is_all_branches: is_all_branches.unwrap_or(false),
        })
    }
}

/// What the request looks like, for `/openapi.json` (the reader above is the truth; the
/// server's tests check that it reads exactly these fields).
pub mod request {
    use crate::ids::BranchId;
    use schemars::JsonSchema;

    /// ApiKeyCreate: a key with `branch_ids` acts as a branch admin of those branches,
    /// `is_all_branches: true` as an organization admin.
    #[derive(JsonSchema)]
    pub struct ApiKeyCreate {
        /// A name for the key (default `api`).
        pub name: Option<String>,
        /// The branches the key reaches (ignored with `is_all_branches`).
        pub branch_ids: Option<Vec<BranchId>>,
        /// The branch a request with the key acts in when it sends no `x-branch-id`: one of
        /// `branch_ids` (default: the first of them; for an all-branches key, the organization's first branch).
        pub default_branch_id: Option<BranchId>,
        /// Whether the key reaches every branch, present and future (default `false`).
        pub is_all_branches: Option<bool>,
    }
}
