//! Organization operations: bootstrap (first run and `init`), the current user, invitations
//! and directly added users.

use super::{BootstrapRequest, Invitation, InviteRequest, OrgSettings, Organization, Role, User, INVITATION_TTL_DAYS};
use crate::auth::{new_key, KeyPair, Scope};
use crate::branch::Branch;
use crate::error::{Error, Result};
use crate::fields::{Email, Language};
use crate::ids::{BranchId, InvitationId, OrgId, UserId};
use crate::lane::Lane;
use crate::notification::Kind;
use crate::store::Store;
use chrono::Duration;
use serde_json::json;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const ME: Lane = Lane::Read;
    pub const INVITE: Lane = Lane::Write;
}

/// What [`Organizations::bootstrap`] made: the organization, its first branch and admin, an API key
/// and a bearer token of the admin.
#[derive(Debug, Clone)]
pub struct Bootstrap {
    pub org: Organization,
    pub branch: Branch,
    pub user: User,
    pub api_key: KeyPair,
    pub token: String,
}

crate::service!(
    /// The organization: bootstrap, the current user, users and invitations, settings.
    Organizations
);

impl<S: Store> Organizations<'_, S> {
    /// The authenticated user (MeResponse shows it with the scope's organization).
    pub fn me(&self, scope: &Scope) -> Result<User> {
        self.store
            .read(|tx| Ok(tx.user(scope.org_id(), scope.actor.user_id)?))?
            .ok_or_else(|| Error::not_found("User", scope.actor.user_id))
    }

    /// Invites someone by e-mail. Organization admins invite to any branch and any role; branch
    /// admins only to their own branches and not as organization admin; branch users not at all.
    pub fn invite(&self, scope: &Scope, req: InviteRequest, language: Language) -> Result<Invitation> {
        let actor = &scope.actor;
        match actor.role {
            Role::BranchUser => return Err(Error::forbidden("branch users cannot invite")),
            Role::BranchAdmin if req.role == Role::OrganizationAdmin => return Err(Error::forbidden("branch admins cannot invite organization admins")),
            _ => {}
        }
        if let Some(b) = req.branches.iter().find(|b| !actor.access.allows(**b)) {
            return Err(Error::forbidden(format!("no access to branch '{b}'")));
        }
        let now = self.now(scope);
        self.store.write(|tx| {
            for b in &req.branches {
                tx.branch(scope.org_id(), *b)?.ok_or_else(|| Error::not_found("Branch", b))?;
            }
            let inv = Invitation {
                id: InvitationId::new(),
                organization_id: scope.org_id(),
                email: req.email.clone(),
                role: req.role,
                branches: req.branches.clone(),
                created_by: actor.user_id,
                language,
                expire_at: now + Duration::days(INVITATION_TTL_DAYS),
                created_at: now,
                accepted_at: None,
                accepted_by: None,
            };
            tx.insert_invitation(&inv)?;
            let payload =
                json!({"invitation_id": inv.id, "organization": scope.org.name, "role": inv.role, "expire_at": crate::clock::format_rfc3339(&inv.expire_at)});
            crate::notification::queue::to_person(tx, scope.org_id(), inv.email.as_str(), language, Kind::OrganizationInvite, payload, now)?;
            Ok(inv)
        })
    }

    /// Whether the store holds no organization yet (first run).
    pub fn is_empty(&self) -> Result<bool> {
        self.store.read(|tx| Ok(tx.list_orgs()?.is_empty()))
    }

    /// Creates an organization with a default branch, an admin user and an all-branches API key.
    pub fn bootstrap(&self, req: &BootstrapRequest) -> Result<Bootstrap> {
        let now = self.clock().now();
        let org = Organization {
            id: OrgId::new(),
            name: req.org_name.clone(),
            name_en: Some(req.org_name.clone()),
            sandbox: req.sandbox,
            settings: OrgSettings::default(),
            clock_offset_us: 0,
            clock_advancing_to: None,
            created_at: now,
        };
        let branch = Branch::new(org.id, "Main", now);
        let user = User {
            id: UserId::new(),
            org_id: org.id,
            email: req.admin_email.clone(),
            first_name: "Admin".into(),
            last_name: "User".into(),
            en_first_name: Some("Admin".into()),
            en_last_name: Some("User".into()),
            role: Role::OrganizationAdmin,
            branch_ids: vec![branch.id],
            created_at: now,
        };
        let pair = KeyPair::generate();
        let key = new_key(&org, &user, &pair, "default", vec![branch.id], branch.id, true, now);
        self.store.write(|tx| {
            tx.insert_org(&org)?;
            tx.insert_branch(&branch)?;
            tx.insert_user(&user)?;
            tx.insert_api_key(&key)?;
            Ok(())
        })?;
        let token = crate::auth::ops::Auth::new(self).issue_token(&user, Duration::days(30));
        Ok(Bootstrap {
            org,
            branch,
            user,
            api_key: pair,
            token,
        })
    }

    /// Adds a user directly (administration and tests; the API invites instead).
    pub fn create_user(&self, org_id: OrgId, email: Email, role: Role, branch_ids: Vec<BranchId>) -> Result<User> {
        let now = self.clock().now();
        let user = User {
            id: UserId::new(),
            org_id,
            email,
            first_name: "Team".into(),
            last_name: "Member".into(),
            en_first_name: None,
            en_last_name: None,
            role,
            branch_ids,
            created_at: now,
        };
        self.store.write(|tx| {
            tx.insert_user(&user)?;
            Ok(())
        })?;
        Ok(user)
    }

    /// The organizations in the store, oldest first.
    pub fn list(&self) -> Result<Vec<Organization>> {
        self.store.read(|tx| Ok(tx.list_orgs()?))
    }
}
