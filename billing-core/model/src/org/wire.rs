//! Organization requests and views.

use super::{InviteRequest, Organization, Role, User};
use crate::error::Result;
use crate::fields::Email;
use crate::ids::BranchId;
use crate::wire::{uuid_item, Body};
use serde_json::Value;

impl InviteRequest {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let email = if b.raw("email").is_none() {
            b.req_str("email");
            None
        } else {
            b.opt_parsed("email", Email::parse)
        };
        let role = b.req_enum("role", Role::parse, &Role::expected());
        let branches = b.req_list("branches", uuid_item::<BranchId>).map(|mut bs| {
            // The same branch named twice is one branch.
            let mut seen = std::collections::HashSet::new();
            bs.retain(|b| seen.insert(*b));
            bs
        });
        if let (Some(r), Some(bs)) = (role, &branches) {
            if r != Role::OrganizationAdmin && bs.is_empty() {
                b.fail("too_short", "branches", "List should have at least 1 item for a branch role");
            }
        }
        b.finish()?;
        Ok(InviteRequest {
            email: email.expect("checked"),
            role: role.expect("checked"),
            branches: branches.expect("checked"),
        })
    }
}

impl Organization {
    /// The organization as MeResponse shows it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "name": self.name,
            "name_en": self.name_en,
            "sandbox": self.sandbox,
            "created_at": crate::clock::format_rfc3339(&self.created_at),
            "currency_config": {
                "home_currency": self.settings.home_currency,
                "default_currency": self.settings.default_currency,
                "enabled_currencies": self.settings.enabled_currencies,
            }
        })
    }
}

impl User {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "email": self.email,
            "first_name": self.first_name,
            "last_name": self.last_name,
            "en_first_name": self.en_first_name,
            "en_last_name": self.en_last_name,
            "created_at": crate::clock::format_rfc3339(&self.created_at),
        })
    }
}
