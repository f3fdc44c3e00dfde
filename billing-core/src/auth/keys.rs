//! API keys managed over the API (`/api-keys`): list, create, revoke, rotate. Organization
//! admins only. A revoked key is refused from its very next request, in every process (see
//! [`crate::store::Store::await_auth_propagation`]).

use super::{ApiKey, KeyPair, NewApiKey, Scope};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::ids::{ApiKeyId, OrgId};
use crate::lane::Lane;
use crate::store::Store;

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

impl<S: Store> Engine<S> {
    pub fn list_api_keys(&self, scope: &Scope) -> Result<Vec<ApiKey>> {
        require_org_admin(scope)?;
        self.api_keys_of(scope.org_id())
    }

    /// An organization's keys, for the command line (`keys list`), which runs with the
    /// database's own access rather than a credential.
    pub fn api_keys_of(&self, org: OrgId) -> Result<Vec<ApiKey>> {
        self.store.read(|tx| Ok(tx.list_api_keys(org)?))
    }

    pub fn create_api_key_in(&self, scope: &Scope, req: &NewApiKey) -> Result<(ApiKey, KeyPair)> {
        require_org_admin(scope)?;
        self.create_api_key(scope.org_id(), req)
    }

    /// Revokes the key (again is a no-op); answers once it is refused everywhere.
    pub fn revoke_api_key(&self, scope: &Scope, id: ApiKeyId) -> Result<ApiKey> {
        require_org_admin(scope)?;
        self.revoke_api_key_of(scope.org_id(), id)
    }

    /// Revokes a key of `org` (the command line's `keys revoke`); see [`Self::revoke_api_key`].
    pub fn revoke_api_key_of(&self, org: OrgId, id: ApiKeyId) -> Result<ApiKey> {
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
    pub fn rotate_api_key(&self, scope: &Scope, id: ApiKeyId) -> Result<(ApiKey, KeyPair)> {
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
            let key = super::new_key(
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
