//! What the API answers of the organization, its users and invitations: MeResponse (and the
//! user and organization in it), OrganizationInviteResponse, InviteAccepted. The settings'
//! view is [`super::settings_view`]'s.

use super::accept::Accepted;
use super::{Invitation, Organization, Role, User};
use crate::clock::Timestamp;
use crate::fields::Email;
use crate::ids::{BranchId, InvitationId, OrgId, UserId};
use crate::money::Currency;
use crate::schema::JsonObject;
use schemars::JsonSchema;
use serde::Serialize;

/// MeResponse: the authenticated user and their organization.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MeResponse<'a> {
    /// The user the credential acts for (an API key acts for the admin who made it).
    pub user: Option<MeUserInfo<'a>>,
    /// The user's organization.
    pub organization: Option<MeOrganizationInfo<'a>>,
}

/// MeUserInfo: a user of the organization.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MeUserInfo<'a> {
    /// The user's id.
    pub id: UserId,
    /// The user's e-mail address (unique in the organization).
    pub email: &'a Email,
    /// The user's first name.
    pub first_name: &'a str,
    /// The user's last name (empty when none was given).
    pub last_name: &'a str,
    /// The user's first name in English, if given.
    pub en_first_name: Option<&'a str>,
    /// The user's last name in English, if given.
    pub en_last_name: Option<&'a str>,
    /// When the user was added.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
}

/// MeOrganizationInfo: the organization.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MeOrganizationInfo<'a> {
    /// The organization's id.
    pub id: OrgId,
    /// The organization's name.
    pub name: &'a str,
    /// The organization's name in English, if given.
    pub name_en: Option<&'a str>,
    /// Whether it is a sandbox organization (test payments, a test clock it can advance).
    pub sandbox: bool,
    /// When the organization was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// The currencies the organization works in.
    pub currency_config: Option<OrganizationCurrencyConfigDTO<'a>>,
}

/// OrganizationCurrencyConfigDTO: the currencies an organization works in.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OrganizationCurrencyConfigDTO<'a> {
    /// The organization's own currency (its accounts' currency).
    pub home_currency: Option<Currency>,
    /// The currency of a new invoice, link or subscription that names none.
    pub default_currency: Option<Currency>,
    /// The currencies invoices, links and subscriptions may be in.
    pub enabled_currencies: &'a [Currency],
}

/// OrganizationInviteResponse: an invitation sent by e-mail.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OrganizationInviteResponse<'a> {
    /// The invitation's id.
    pub id: InvitationId,
    /// The e-mail address invited (the invitation's e-mail goes there).
    pub email: &'a Email,
    /// The organization invited to.
    pub organization_id: OrgId,
    /// Until when the invitation can be accepted (7 days after it was made, organization time).
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub expire_at: Timestamp,
    /// The user who invited.
    pub created_by: UserId,
    /// The role the invited user gets.
    pub role: Option<Role>,
    /// The branches the invited user gets (ids).
    #[schemars(with = "Vec<String>")]
    pub branches: &'a [BranchId],
}

/// InviteAccepted: the new user and a bearer token.
#[derive(Debug, Serialize, JsonSchema)]
pub struct InviteAccepted<'a> {
    /// The new user (as MeUserInfo).
    #[schemars(with = "JsonObject")]
    pub user: MeUserInfo<'a>,
    /// The new user's role (the invitation's).
    pub role: Option<Role>,
    /// The new user's branches: those of the invitation that still exist.
    pub branches: &'a [BranchId],
    /// The organization joined (as MeOrganizationInfo).
    #[schemars(with = "JsonObject")]
    pub organization: MeOrganizationInfo<'a>,
    /// A bearer token of the new user (`Authorization: Bearer <token>`), valid 30 days.
    pub access_token: &'a str,
    /// Always `bearer`.
    pub token_type: &'static str,
    /// When the token expires (server time).
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub expires_at: Timestamp,
}

impl User {
    /// MeUserInfo, borrowed from the user.
    pub fn info(&self) -> MeUserInfo<'_> {
        MeUserInfo {
            id: self.id,
            email: &self.email,
            first_name: &self.first_name,
            last_name: &self.last_name,
            en_first_name: self.en_first_name.as_deref(),
            en_last_name: self.en_last_name.as_deref(),
            created_at: self.created_at,
        }
    }

    /// MeResponse: the user and their organization.
    pub fn me<'a>(&'a self, org: &'a Organization) -> MeResponse<'a> {
        MeResponse {
            user: Some(self.info()),
            organization: Some(org.info()),
        }
    }
}

impl Organization {
    /// MeOrganizationInfo, borrowed from the organization.
    pub fn info(&self) -> MeOrganizationInfo<'_> {
        MeOrganizationInfo {
            id: self.id,
            name: &self.name,
            name_en: self.name_en.as_deref(),
            sandbox: self.sandbox,
            created_at: self.created_at,
            currency_config: Some(OrganizationCurrencyConfigDTO {
                home_currency: Some(self.settings.home_currency),
                default_currency: Some(self.settings.default_currency),
                enabled_currencies: &self.settings.enabled_currencies,
            }),
        }
    }
}

impl Invitation {
    /// OrganizationInviteResponse, borrowed from the invitation.
    pub fn response(&self) -> OrganizationInviteResponse<'_> {
        OrganizationInviteResponse {
            id: self.id,
            email: &self.email,
            organization_id: self.organization_id,
            expire_at: self.expire_at,
            created_by: self.created_by,
            role: Some(self.role),
            branches: &self.branches,
        }
    }
}

impl Accepted {
    /// InviteAccepted, borrowed from the acceptance.
    pub fn response(&self) -> InviteAccepted<'_> {
        InviteAccepted {
            user: self.user.info(),
            role: Some(self.user.role),
            branches: &self.user.branch_ids,
            organization: self.org.info(),
            access_token: &self.access_token,
            token_type: "bearer",
            expires_at: self.expires_at,
        }
    }
}
