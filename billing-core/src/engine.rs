//! [`Billing`]: the engine. It owns a store and a clock; every operation of every resource is a
//! method on it (defined in the resource's module), so the HTTP server, background workers and
//! embedders all run the same code.

use crate::auth::{jwt, ApiKey, BranchAccess, Claims, Credential, KeyPair, Scope};
use crate::branch::Branch;
use crate::clock::{Clock, Timestamp};
use crate::error::{Code, Error, FieldError, Result};
use crate::fields::{Email, Language};
use crate::ids::{ApiKeyId, BranchId, InvitationId, NotificationId, OrgId, UserId};
use crate::notification::{Channel, Notification};
use crate::org::{Invitation, OrgSettings, Organization, Role, User, INVITATION_TTL_DAYS};
use crate::store::{Store, Tx};
use crate::wire::{uuid_item, Body};
use chrono::Duration;
use serde_json::{json, Value};
use std::sync::Arc;

pub struct Billing<S> {
    pub store: S,
    clock: Arc<dyn Clock>,
    jwt_secret: Vec<u8>,
    public_url: String,
    /// What webhook deliveries are sent with (worker runs, sandbox clock advances, manual
    /// retries). Without one, events are still fanned out to deliveries, but nothing is sent.
    webhook_transport: std::sync::RwLock<Option<Arc<dyn crate::webhook::WebhookTransport>>>,
}

impl<S: Store> Billing<S> {
    pub fn new(store: S, clock: Arc<dyn Clock>) -> Self {
        Billing {
            store,
            clock,
            jwt_secret: Vec::new(),
            public_url: "http://127.0.0.1:8080".into(),
            webhook_transport: Default::default(),
        }
    }

    /// The HS256 secret for bearer tokens; without one, bearer tokens are refused.
    pub fn with_jwt_secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.jwt_secret = secret.into();
        self
    }

    /// The address clients reach this service at (no trailing slash): the base of the API
    /// addresses in webhook payloads and of hosted pages.
    pub fn with_public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = url.into().trim_end_matches('/').to_string();
        self
    }

    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    /// Sets the transport webhook deliveries are sent with.
    pub fn set_webhook_transport(&self, transport: Arc<dyn crate::webhook::WebhookTransport>) {
        *self.webhook_transport.write().unwrap_or_else(|p| p.into_inner()) = Some(transport);
    }

    pub fn webhook_transport(&self) -> Option<Arc<dyn crate::webhook::WebhookTransport>> {
        self.webhook_transport.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    /// The organization's current time (its test clock in sandbox).
    pub fn now(&self, scope: &Scope) -> Timestamp {
        scope.org.now(&*self.clock)
    }

    /// Resolves credentials and the requested branch (`x-branch-id`) into a [`Scope`], in one
    /// read. Bad credentials are 401; a branch the credential cannot use is 403.
    pub fn authenticate(&self, cred: &Credential, branch: Option<BranchId>) -> Result<Scope> {
        let server_now = self.clock.now();
        let forbidden = |b: BranchId| Error::forbidden(format!("no access to branch '{b}'"));
        self.store.read(|tx| match cred {
            Credential::ApiKey { key, secret } => {
                let (k, org, found) = tx.api_key_context(key, branch)?.ok_or_else(|| Error::unauthorized("unknown API key"))?;
                if k.revoked_at.is_some() {
                    return Err(Error::unauthorized("unknown API key"));
                }
                if !k.secret_matches(secret) {
                    return Err(Error::unauthorized("wrong API secret"));
                }
                let wanted = branch.unwrap_or(k.default_branch_id);
                let access = k.access();
                let branch = found.filter(|_| access.allows(wanted)).ok_or_else(|| forbidden(wanted))?;
                // The key itself carries its role, branches and the user it acts for.
                let actor = crate::auth::Actor {
                    user_id: k.user_id,
                    role: k.role(),
                    access,
                    api_key_id: Some(k.id),
                };
                Ok(Scope { org, branch, actor })
            }
            Credential::Bearer(token) => {
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
                    Some(b) => tx.branch(org.id, b)?.ok_or_else(|| forbidden(b))?,
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
            }
        })
    }

    /// The authenticated user and organization (MeResponse).
    pub fn me(&self, scope: &Scope) -> Result<Value> {
        let user = self
            .store
            .read(|tx| Ok(tx.user(scope.org_id(), scope.actor.user_id)?))?
            .ok_or_else(|| Error::not_found("User", scope.actor.user_id))?;
        Ok(json!({"user": user.to_json(), "organization": scope.org.to_json()}))
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
            };
            tx.insert_invitation(&inv)?;
            tx.insert_notification(&Notification {
                id: NotificationId::new(),
                org_id: scope.org_id(),
                branch_id: None,
                channel: Channel::Email,
                recipient: inv.email.as_str().to_string(),
                template: "ORGANIZATION_INVITE".into(),
                language,
                payload: json!({"invitation_id": inv.id, "organization": scope.org.name, "role": inv.role, "expire_at": crate::clock::format_rfc3339(&inv.expire_at)}),
                created_at: now,
                sent_at: None,
            })?;
            Ok(inv)
        })
    }

    /// Whether the store holds no organization yet (first run).
    pub fn is_empty(&self) -> Result<bool> {
        self.store.read(|tx| Ok(tx.list_orgs()?.is_empty()))
    }

    /// Creates an organization with a default branch, an admin user and an all-branches API key.
    pub fn bootstrap(&self, req: &BootstrapRequest) -> Result<Bootstrap> {
        let now = self.clock.now();
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
        let token = self.issue_token(&user, Duration::days(30));
        Ok(Bootstrap {
            org,
            branch,
            user,
            api_key: pair,
            token,
        })
    }

    /// Makes another API key for an organization (`billing-server keys create`).
    pub fn create_api_key(&self, org_id: OrgId, req: &NewApiKey) -> Result<(ApiKey, KeyPair)> {
        let now = self.clock.now();
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

    /// A bearer token for `user`, valid for `ttl`.
    pub fn issue_token(&self, user: &User, ttl: Duration) -> String {
        let claims = Claims {
            sub: user.id,
            org: user.org_id,
            exp: (self.clock.now() + ttl).timestamp(),
        };
        jwt::encode(&self.jwt_secret, &claims)
    }

    /// Adds a user directly (administration and tests; the API invites instead).
    pub fn create_user(&self, org_id: OrgId, email: Email, role: Role, branch_ids: Vec<BranchId>) -> Result<User> {
        let now = self.clock.now();
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
    pub fn organizations(&self) -> Result<Vec<Organization>> {
        self.store.read(|tx| Ok(tx.list_orgs()?))
    }
}

/// Keys act for a user: the CLI makes keys for the organization's oldest admin, which
/// `bootstrap` always creates.
fn admin_of(tx: &mut dyn Tx, org: &Organization) -> Result<User> {
    tx.first_org_admin(org.id)?
        .ok_or_else(|| Error::rule(Code::SERVICE_ERROR, format!("no administrator recorded for organization '{}'", org.id)))
}

#[allow(clippy::too_many_arguments)]
fn new_key(org: &Organization, user: &User, pair: &KeyPair, name: &str, branch_ids: Vec<BranchId>, default: BranchId, all: bool, now: Timestamp) -> ApiKey {
    ApiKey {
        id: ApiKeyId::new(),
        org_id: org.id,
        user_id: user.id,
        name: name.to_string(),
        key: pair.key.clone(),
        secret_hash: crate::auth::hash_secret(&pair.secret),
        branch_ids,
        default_branch_id: default,
        is_all_branches: all,
        created_at: now,
        revoked_at: None,
    }
}

#[derive(Debug, Clone)]
pub struct BootstrapRequest {
    pub org_name: String,
    pub admin_email: Email,
    pub sandbox: bool,
}

#[derive(Debug, Clone)]
pub struct Bootstrap {
    pub org: Organization,
    pub branch: Branch,
    pub user: User,
    pub api_key: KeyPair,
    pub token: String,
}

#[derive(Debug, Clone, Default)]
pub struct NewApiKey {
    pub name: String,
    pub branch_ids: Vec<BranchId>,
    pub default_branch_id: Option<BranchId>,
    pub is_all_branches: bool,
}

/// OrganizationInviteCreate.
#[derive(Debug, Clone, PartialEq)]
pub struct InviteRequest {
    pub email: Email,
    pub role: Role,
    pub branches: Vec<BranchId>,
}

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
