//! API keys ([`ApiKeys`]): over the API (`/api-keys`: list, create, revoke, rotate;
//! organization admins only) and for the command line (`keys create|list|revoke`, by
//! organization). A revoked key is refused from its very next request, in every process (see
//! [`crate::store::Store::await_auth_propagation`]).

use super::{new_key, ApiKey, KeyPair, NewApiKey, Scope};
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::{ApiKeyId, BranchId, OrgId};
use crate::lane::Lane;
use crate::org::{Organization, User};
use crate::store::{Store, Tx};

pub mod lane {
    use super::Lane;
    pub const LIST: Lane = Lane::Read;
    pub const CREATE: Lane = Lane::Write;
    pub const REVOKE: Lane = Lane::Write;
    pub const ROTATE: Lane = Lane::Write;
}

fn require_org_admin(scope: &Scope) -> Result<()> {
    match scope.actor.is_org_admin() {
        true => Ok(()),
        false => Err(Error::forbidden("only organization admins manage API keys")),
    }
}

crate::service!(
    /// API keys: list, create, revoke, rotate (organization admins); and, for the command line,
    /// which runs with the database's own access, the same by organization.
    ApiKeys
);

impl<S: Store> ApiKeys<'_, S> {
    /// The organization's keys, revoked ones included.
    pub fn list(&self, scope: &Scope) -> Result<Vec<ApiKey>> {
        require_org_admin(scope)?;
        self.list_of(scope.org_id())
    }

    /// An organization's keys, for the command line (`keys list`), which runs with the
    /// database's own access rather than a credential.
    pub fn list_of(&self, org: OrgId) -> Result<Vec<ApiKey>> {
        self.store.read(|tx| Ok(tx.list_api_keys(org)?))
    }

    /// A new key and its secret (shown once).
    pub fn create(&self, scope: &Scope, req: &NewApiKey) -> Result<(ApiKey, KeyPair)> {
        require_org_admin(scope)?;
        self.create_for(scope.org_id(), req)
    }

    /// Makes another API key for an organization, with the database's own access (the command
    /// line's `keys create`, tests).
    pub fn create_for(&self, org_id: OrgId, req: &NewApiKey) -> Result<(ApiKey, KeyPair)> {
        let now = self.clock().now();
        self.store.write(|tx| {
            let org = tx.org(org_id)?.ok_or_else(|| Error::not_found("Organization", org_id))?;
            let branches = tx.list_branches(org_id)?;
            let exists = |b: &BranchId| branches.iter().any(|x| x.id == *b);
            if let Some(b) = req.branch_ids.iter().chain(req.default_branch_id.iter()).find(|b| !exists(b)) {
                return Err(Error::not_found("Branch", b));
            }
            let default = req
                .default_branch_id
                .or(req.branch_ids.first().copied())
                .or(if req.is_all_branches { branches.first().map(|b| b.id) } else { None });
            let default =
                default.ok_or_else(|| Error::invalid(FieldError::new("missing", vec!["default_branch_id".into()], "a key needs a default branch")))?;
            if !req.is_all_branches && !req.branch_ids.contains(&default) {
                return Err(Error::invalid(FieldError::new(
                    "value_error",
                    vec!["default_branch_id".into()],
                    "the default branch must be one of the key's branches",
                )));
            }
            let user = admin_of(tx, &org)?;
            let pair = KeyPair::generate();
            let key = new_key(&org, &user, &pair, &req.name, req.branch_ids.clone(), default, req.is_all_branches, now);
            tx.insert_api_key(&key)?;
            Ok((key, pair))
        })
    }

    /// Revokes the key (again is a no-op); answers once it is refused everywhere.
    pub fn revoke(&self, scope: &Scope, id: ApiKeyId) -> Result<ApiKey> {
        require_org_admin(scope)?;
        self.revoke_of(scope.org_id(), id)
    }

    /// Revokes a key of `org` (the command line's `keys revoke`); see [`Self::revoke`].
    pub fn revoke_of(&self, org: OrgId, id: ApiKeyId) -> Result<ApiKey> {
        let now = self.clock().now();
        let key = self.store.write(|tx| {
            tx.revoke_api_key(org, id, now)?;
            let keys = tx.list_api_keys(org)?;
            keys.into_iter().find(|k| k.id == id).ok_or_else(|| Error::not_found("API key", id))
        })?;
        self.store.await_auth_propagation();
        Ok(key)
    }

    /// A new key with the same name, branches and default branch, and the old one revoked, in
    /// one transaction.
    pub fn rotate(&self, scope: &Scope, id: ApiKeyId) -> Result<(ApiKey, KeyPair)> {
        require_org_admin(scope)?;
        let now = self.clock().now();
        let (org, user) = (scope.org.clone(), scope.actor.user_id);
        let made = self.store.write(|tx| {
            let keys = tx.list_api_keys(scope.org_id())?;
            let old = keys.into_iter().find(|k| k.id == id).ok_or_else(|| Error::not_found("API key", id))?;
            if old.revoked_at.is_some() {
                return Err(Error::rule(crate::error::Code::INVALID_STATUS, format!("API key '{id}' is revoked")));
            }
            let owner = tx
                .user(org.id, old.user_id)?
                .or(tx.user(org.id, user)?)
                .ok_or_else(|| Error::not_found("User", old.user_id))?;
            let pair = KeyPair::generate();
            let key = new_key(
                &org,
                &owner,
                &pair,
                &old.name,
                old.branch_ids.clone(),
                old.default_branch_id,
                old.is_all_branches,
                now,
            );
            tx.insert_api_key(&key)?;
            tx.revoke_api_key(org.id, id, now)?;
            Ok((key, pair))
        })?;
        self.store.await_auth_propagation();
        Ok(made)
    }
}

/// Keys act for a user: the CLI makes keys for the organization's oldest admin, which
/// `bootstrap` always creates.
fn admin_of(tx: &mut dyn Tx, org: &Organization) -> Result<User> {
    tx.first_org_admin(org.id)?
        .ok_or_else(|| Error::rule(Code::SERVICE_ERROR, format!("no administrator recorded for organization '{}'", org.id)))
}
