//! What the API answers of an API key: never its secret's hash; the secret itself only once,
//! when the key is made (ApiKeyCreated).

use super::{ApiKey, KeyPair};
use crate::clock::Timestamp;
use crate::ids::{ApiKeyId, BranchId};
use schemars::JsonSchema;
use serde::Serialize;

/// ApiKey (never its secret): a credential of the organization.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "ApiKey")]
pub struct ApiKeyResponse<'a> {
    /// The key's id (to revoke or rotate it).
    pub id: ApiKeyId,
    /// The name given to the key (`api` when none was given).
    #[schemars(with = "Option<String>")]
    pub name: &'a str,
    /// The public half of the key (`ak_…`).
    pub api_key: &'a str,
    /// The branches the key reaches (empty for an all-branches key).
    pub branch_ids: &'a [BranchId],
    /// The branch a request made with the key acts in when it sends no `x-branch-id`.
    #[schemars(with = "Option<BranchId>")]
    pub default_branch_id: BranchId,
    /// Whether the key reaches every branch, present and future, as an organization admin
    /// (otherwise it acts as a branch admin of `branch_ids`).
    pub is_all_branches: bool,
    /// When the key was made.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the key was revoked (refused from then on); `null` while it works.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub revoked_at: Option<Timestamp>,
}

/// ApiKeyCreated: the key with its secret, shown this once (`null` on an idempotent replay).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApiKeyCreated<'a> {
    /// The key.
    #[serde(flatten)]
    #[schemars(with = "Option<ApiKeyResponse<'a>>")]
    pub key: ApiKeyResponse<'a>,
    /// The secret half of the key (`sk_…`): shown this once, never stored (only its hash);
    /// `null` when the response is an idempotent replay.
    pub api_secret: Option<&'a str>,
    /// The `x-api-key` header value: base64 of `api_key:api_secret`; `null` on an idempotent
    /// replay.
    pub x_api_key: Option<String>,
}

/// ApiKeyList: the organization's API keys, revoked ones included.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApiKeyList<'a> {
    /// The keys (all of them, unpaged).
    pub data: Vec<ApiKeyResponse<'a>>,
}

impl ApiKey {
    /// What the API shows of a key: never its secret nor the secret's hash.
    pub fn response(&self) -> ApiKeyResponse<'_> {
        ApiKeyResponse {
            id: self.id,
            name: &self.name,
            api_key: &self.key,
            branch_ids: &self.branch_ids,
            default_branch_id: self.default_branch_id,
            is_all_branches: self.is_all_branches,
            created_at: self.created_at,
            revoked_at: self.revoked_at,
        }
    }

    /// A new key with its secret, shown this once.
    pub fn created<'a>(&'a self, pair: &'a KeyPair) -> ApiKeyCreated<'a> {
        ApiKeyCreated {
            key: self.response(),
            api_secret: Some(&pair.secret),
            x_api_key: Some(pair.header_value()),
        }
    }
}

impl<'a> ApiKeyList<'a> {
    pub fn of(keys: &'a [ApiKey]) -> Self {
        ApiKeyList {
            data: keys.iter().map(ApiKey::response).collect(),
        }
    }
}
