//! Authentication ([`Auth`]): credentials and the requested branch into a [`Scope`], and the
//! bearer tokens it accepts.

use super::{jwt, ApiKey, BranchAccess, Claims, Credential, Scope};
use crate::branch::Branch;
use crate::error::{Error, Result};
use crate::ids::{BranchId, OrgId};
use crate::lane::Lane;
use crate::org::{Organization, Role, User};
use crate::store::{Store, Tx};
use chrono::Duration;
use std::sync::Arc;

crate::service!(
    /// Authentication: credentials and the requested branch into a [`Scope`]; bearer tokens.
    Auth
);

impl<S: Store> Auth<'_, S> {
    /// Resolves credentials and the requested branch (`x-branch-id`) into a [`Scope`], in one
    /// read. Bad credentials are 401; a branch the credential cannot use is 403. The branch must
    /// be live: see [`Self::authenticate_for`] for reading a deleted one.
    pub fn authenticate(&self, cred: &Credential, branch: Option<BranchId>) -> Result<Scope> {
        self.authenticate_for(cred, branch, Lane::Write)
    }

    /// [`Self::authenticate`] for an operation of `lane`. A deleted (retired) branch, named
    /// explicitly, is open to organization admins for reads, so that its records stay
    /// reachable; every other use of it is a 403.
    pub fn authenticate_for(&self, cred: &Credential, branch: Option<BranchId>, lane: Lane) -> Result<Scope> {
        let server_now = self.clock().now();
        let forbidden = |b: BranchId| Error::forbidden(format!("no access to branch '{b}'"));
        // A retired branch for an organization admin's read, when the live lookup found none.
        let retired = |tx: &mut dyn Tx, org: OrgId, role: Role| -> Result<Option<Branch>> {
            match branch {
                Some(b) if lane == Lane::Read && role == Role::OrganizationAdmin => Ok(tx.retired_branch(org, b)?),
                _ => Ok(None),
            }
        };
        let (key, secret) = match cred {
            Credential::ApiKey { key, secret } => (key, secret),
            Credential::Bearer(token) => {
                return self.store.read(|tx| {
                    if self.jwt_secret.is_empty() {
                        return Err(Error::unauthorized("bearer tokens are not enabled on this server"));
                    }
                    let claims = jwt::decode(&self.jwt_secret, token, server_now)?;
                    let user = tx.user(claims.org, claims.sub)?.ok_or_else(|| Error::unauthorized("unknown user"))?;
                    let access = if user.role == Role::OrganizationAdmin {
                        BranchAccess::All
                    } else {
                        BranchAccess::Only(user.branch_ids.clone())
                    };
                    let org = tx.org(claims.org)?.ok_or_else(|| Error::unauthorized("unknown organization"))?;
                    let branch = match branch {
                        Some(b) if !access.allows(b) => return Err(forbidden(b)),
                        Some(b) => match tx.branch(org.id, b)? {
                            Some(live) => live,
                            None => retired(tx, org.id, user.role)?.ok_or_else(|| forbidden(b))?,
                        },
                        None => tx
                            .list_branches(org.id)?
                            .into_iter()
                            .find(|b| access.allows(b.id))
                            .ok_or_else(|| Error::forbidden("the user has no branch"))?,
                    };
                    let actor = crate::auth::Actor {
                        user_id: user.id,
                        role: user.role,
                        access,
                        api_key_id: None,
                    };
                    Ok(Scope { org, branch, actor })
                })
            }
        };
        // One answer for an unknown key, a revoked one and a wrong secret: the answer must
        // not tell a caller which keys exist.
        let invalid = || Error::unauthorized("invalid API key or secret");
        // The key itself carries its role, branches and the user it acts for.
        let scope = |k: &ApiKey, org: &Organization, found: Option<Branch>| -> Result<Scope> {
            if k.revoked_at.is_some() || !k.secret_matches(secret) {
                return Err(invalid());
            }
            let wanted = branch.unwrap_or(k.default_branch_id);
            let access = k.access();
            let branch = found.filter(|_| access.allows(wanted)).ok_or_else(|| forbidden(wanted))?;
            let actor = crate::auth::Actor {
                user_id: k.user_id,
                role: k.role(),
                access,
                api_key_id: Some(k.id),
            };
            Ok(Scope {
                org: org.clone(),
                branch,
                actor,
            })
        };
        let generation = self.store.auth_generation();
        if let Some(ctx) = generation.and_then(|g| self.auth_cache.get(key, branch, g)) {
            let (k, org, b) = &*ctx;
            return scope(k, org, Some(b.clone()));
        }
        self.store.read(|tx| {
            let (k, org, found) = tx.api_key_context(key, branch)?.ok_or_else(invalid)?;
            let found = match (found, generation) {
                (Some(b), Some(g)) => {
                    self.auth_cache.put(key, branch, g, Arc::new((k.clone(), org.clone(), b.clone())));
                    Some(b)
                }
                (Some(b), None) => Some(b),
                (None, _) if k.revoked_at.is_some() || !k.secret_matches(secret) => return Err(invalid()),
                (None, _) => retired(tx, org.id, k.role())?,
            };
            scope(&k, &org, found)
        })
    }

    /// A bearer token for `user`, valid for `ttl`.
    pub fn issue_token(&self, user: &User, ttl: Duration) -> String {
        let claims = Claims {
            sub: user.id,
            org: user.org_id,
            exp: (self.clock().now() + ttl).timestamp(),
        };
        jwt::encode(&self.jwt_secret, &claims)
    }
}
