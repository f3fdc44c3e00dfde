//! Accepting an invitation: `POST /organization/invite/accept` with the token of the
//! invitation's e-mail creates the invited user (the invitation's e-mail, role and branches)
//! and answers a bearer token for it. The service has no passwords: users act with bearer
//! tokens and API keys.
//!
//! The token is `<invitation id>.<HMAC-SHA256 of the id under the server's JWT secret>`
//! (base64url): nothing secret is stored, a forged or altered token is refused, and it stops
//! working when the secret changes. It works once (the invitation is marked accepted in the
//! transaction that creates the user; a second use is `INVITATION_EXPIRED`, 410) and until the
//! invitation expires (7 days, organization time; then 410 too).

pub use billing_model::org::accept::*;

use super::{Role, User};
use crate::engine::Engine;
use crate::error::{Code, Error, Result};
use crate::ids::{InvitationId, UserId};
use crate::lane::Lane;
use crate::store::Store;
use base64::Engine as _;
use chrono::Duration;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub mod lane {
    use super::Lane;
    pub const ACCEPT: Lane = Lane::Write;
    pub const PAGE: Lane = Lane::Read;
}
fn mac(secret: &[u8], id: InvitationId) -> Hmac<Sha256> {
    let mut m = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(b"invitation:");
    m.update(id.0.as_bytes());
    m
}

impl<S: Store> Engine<S> {
    /// The token of an invitation's link; `None` without a JWT secret (no token can be made).
    pub(crate) fn invite_token(&self, id: InvitationId) -> Option<String> {
        if self.jwt_secret.is_empty() {
            return None;
        }
        let sig = mac(&self.jwt_secret, id).finalize().into_bytes();
        Some(format!("{}.{}", id.0.simple(), base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig)))
    }

    /// The link of an invitation's e-mail (see [`Self::set_invite_url`]); notifications
    /// render it.
    pub(crate) fn invite_link(&self, id: InvitationId) -> Option<String> {
        let token = self.invite_token(id)?;
        let base = self.invite_url();
        let sep = if base.contains('?') { '&' } else { '?' };
        Some(format!("{base}{sep}token={token}"))
    }

    /// The invitation a token names, when its signature holds.
    fn invitation_of_token(&self, token: &str) -> Option<InvitationId> {
        if self.jwt_secret.is_empty() {
            return None;
        }
        let (id, sig) = token.split_once('.')?;
        let id = InvitationId(uuid::Uuid::parse_str(id).ok()?);
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(sig).ok()?;
        mac(&self.jwt_secret, id).verify_slice(&sig).ok()?;
        Some(id)
    }
}

impl<S: Store> super::ops::Organizations<'_, S> {
    /// The token of an invitation's link; `None` without a JWT secret (no token can be made).
    pub fn invite_token(&self, id: InvitationId) -> Option<String> {
        Engine::invite_token(self, id)
    }

    /// The link of an invitation's e-mail (see [`Engine::set_invite_url`]).
    pub fn invite_link(&self, id: InvitationId) -> Option<String> {
        Engine::invite_link(self, id)
    }

    /// The invitation a token names and its organization, for the page that accepts it: a 404
    /// for an unknown or forged token, a 410 `INVITATION_EXPIRED` for a used or expired one.
    pub fn invitation(&self, token: &str) -> Result<(super::Invitation, super::Organization)> {
        let id = self.invitation_of_token(token).ok_or_else(|| Error::not_found("Invitation", "of this token"))?;
        let (inv, org) = self
            .store
            .read(|tx| {
                let Some(inv) = tx.invitation(id)? else { return Ok(None) };
                Ok(tx.org(inv.organization_id)?.map(|o| (inv, o)))
            })?
            .ok_or_else(|| Error::not_found("Invitation", "of this token"))?;
        if inv.accepted_at.is_some() {
            return Err(Error::rule(Code::INVITATION_EXPIRED, "the invitation was already accepted"));
        }
        if org.now(self.clock()) >= inv.expire_at {
            return Err(Error::rule(Code::INVITATION_EXPIRED, "the invitation has expired"));
        }
        Ok((inv, org))
    }

    /// Accepts an invitation: creates its user and a bearer token of it (InviteAccepted). An
    /// unknown or forged token is a 404; a used or expired one a 410 `INVITATION_EXPIRED`; an
    /// e-mail that is already a user of the organization a 422 `USER_ALREADY_REGISTERED`.
    /// Nothing is written when it is refused.
    pub fn accept(&self, req: &AcceptRequest) -> Result<Accepted> {
        let id = self
            .invitation_of_token(&req.token)
            .ok_or_else(|| Error::not_found("Invitation", "of this token"))?;
        let server_now = self.clock().now();
        let (user, org) = self.store.write(|tx| {
            let inv = tx.invitation(id)?.ok_or_else(|| Error::not_found("Invitation", "of this token"))?;
            let org = tx.org(inv.organization_id)?.ok_or_else(|| Error::not_found("Invitation", "of this token"))?;
            let now = org.now(self.clock());
            if inv.accepted_at.is_some() {
                return Err(Error::rule(Code::INVITATION_EXPIRED, "the invitation was already accepted"));
            }
            if now >= inv.expire_at {
                return Err(Error::rule(Code::INVITATION_EXPIRED, "the invitation has expired"));
            }
            if tx.user_by_email(org.id, inv.email.as_str())?.is_some() {
                return Err(Error::rule(
                    Code::USER_ALREADY_REGISTERED,
                    format!("{} is already a user of the organization", inv.email.as_str()),
                ));
            }
            let mut branch_ids = Vec::new();
            for b in &inv.branches {
                if tx.branch(org.id, *b)?.is_some_and(|b| b.deleted_at.is_none()) {
                    branch_ids.push(*b);
                }
            }
            if inv.role != Role::OrganizationAdmin && branch_ids.is_empty() {
                return Err(Error::rule(Code::INVITATION_EXPIRED, "the invitation's branches no longer exist"));
            }
            let local = inv.email.as_str().split('@').next().unwrap_or_default().to_string();
            let user = User {
                id: UserId::new(),
                org_id: org.id,
                email: inv.email.clone(),
                first_name: req.first_name.clone().unwrap_or(local),
                last_name: req.last_name.clone().unwrap_or_default(),
                en_first_name: req.first_name.clone(),
                en_last_name: req.last_name.clone(),
                role: inv.role,
                branch_ids,
                created_at: now,
            };
            if !tx.accept_invitation(id, now, user.id)? {
                return Err(Error::rule(Code::INVITATION_EXPIRED, "the invitation was already accepted"));
            }
            tx.insert_user(&user)?;
            Ok((user, org))
        })?;
        let ttl = Duration::days(ACCEPT_TOKEN_DAYS);
        let access_token = crate::auth::ops::Auth::new(self).issue_token(&user, ttl);
        Ok(Accepted {
            user,
            org,
            access_token,
            expires_at: server_now + ttl,
        })
    }
}
