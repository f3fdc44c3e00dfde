//! Branch requests (CreateBranchRequest, UpdateBranchRequest): their reader, and their
//! documentation.

use crate::error::Result;
use crate::wire::Body;
use serde_json::Value;

pub const MAX_BRANCH_NAME: usize = 255;

/// CreateBranchRequest / UpdateBranchRequest.
pub fn parse_branch_name(v: &Value) -> Result<String> {
    let mut b = Body::new(v);
    let name = b.req_text("name", MAX_BRANCH_NAME);
    b.finish()?;
    Ok(name.expect("checked"))
}

/// What the requests look like, for `/openapi.json` (the reader above is the truth; the
/// server's tests check that it reads exactly these fields).
pub mod request {
    use schemars::JsonSchema;

    /// CreateBranchRequest: a new branch of the organization (organization admins).
    #[derive(JsonSchema)]
    pub struct CreateBranchRequest {
        /// The branch's name; unique in the organization (case and surrounding spaces do not
        /// count): a name already used returns that branch.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub name: String,
    }

    /// UpdateBranchRequest: a branch's new name.
    #[derive(JsonSchema)]
    pub struct UpdateBranchRequest {
        /// The branch's new name; a name used by another branch of the organization is refused.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub name: String,
    }
}
