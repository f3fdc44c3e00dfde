//! API keys on the wire: the create request and what the API shows of a key.

use super::{ApiKey, KeyPair, NewApiKey};
use crate::clock::format_rfc3339;
use crate::error::Result;
use crate::wire::{uuid_item, Body};
use serde_json::{json, Value};

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

impl ApiKey {
    /// What the API shows of a key: never its secret nor the secret's hash.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "api_key": self.key,
            "branch_ids": self.branch_ids,
            "default_branch_id": self.default_branch_id,
            "is_all_branches": self.is_all_branches,
            "created_at": format_rfc3339(&self.created_at),
            "revoked_at": self.revoked_at.as_ref().map(format_rfc3339),
        })
    }

    /// A new key with its secret, shown this once.
    pub fn to_created_json(&self, pair: &KeyPair) -> Value {
        let mut v = self.to_json();
        v["api_secret"] = json!(pair.secret);
        v["x_api_key"] = json!(pair.header_value());
        v
    }
}
