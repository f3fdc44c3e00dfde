//! Organization requests: their readers, and their documentation.

use super::{InviteRequest, Role};
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

/// What the requests look like, for `/openapi.json` (the readers are the truth; the server's
/// tests check that each reads exactly these fields).
pub mod request {
    use super::Role;
    use crate::money::Currency;
    use crate::schema::{Amount, Integer, JsonObject};
    use schemars::JsonSchema;

    /// OrganizationInviteCreate: whom to invite, with which role and branches.
    #[derive(JsonSchema)]
    pub struct OrganizationInviteCreate {
        /// The e-mail address to invite; the invitation's e-mail (with the link to accept it)
        /// goes there.
        pub email: String,
        /// The role the invited user gets: organization admins invite any role, branch admins
        /// only branch roles.
        pub role: Role,
        /// The branch ids the invited user gets (at least one for a branch role); branch
        /// admins invite only to their own branches.
        pub branches: Vec<String>,
    }

    /// InviteAccept: the token of the invitation e-mail and the new user's name.
    #[derive(JsonSchema)]
    pub struct InviteAccept {
        /// The token of the invitation e-mail's link (it works once, until the invitation
        /// expires).
        pub token: String,
        /// The new user's first name (1 to 100 characters; default: the e-mail's local part).
        pub first_name: Option<String>,
        /// The new user's last name (1 to 100 characters).
        pub last_name: Option<String>,
    }

    /// OrganizationSettingsUpdate: only the given fields change.
    #[derive(JsonSchema)]
    pub struct OrganizationSettingsUpdate {
        /// The currency of new invoices, links and subscriptions that name none; must be
        /// enabled.
        pub default_currency: Option<Currency>,
        /// The currencies that may be used (at least one; the default and home currencies
        /// among them).
        pub enabled_currencies: Option<Vec<Currency>>,
        /// A percentage from 0 to 100 (`15`), at most 4 decimal places.
        pub vat_rate: Option<Amount>,
        /// Switches of the ways of paying new payment links offer (`mada`, `visa`,
        /// `mastercard`, `amex`, `bank_transfer`, `installment`, `qurrah`); those left out keep
        /// their value.
        pub default_payment_methods: Option<JsonObject>,
        /// Per-kind switches of consumer notifications and `installment_reminder_days`.
        pub notifications: Option<JsonObject>,
        /// `{event_types}` given to new webhook endpoints.
        pub webhook_defaults: Option<JsonObject>,
        /// Days before a period end that the next invoice is prepared (0 to 30).
        pub subscription_invoice_lead_days: Option<Integer>,
        /// The days after a failed renewal charge that it is retried (strictly increasing, 1
        /// to 60, at most 10 of them).
        pub subscription_renewal_retry_days: Option<Vec<Integer>>,
    }
}
