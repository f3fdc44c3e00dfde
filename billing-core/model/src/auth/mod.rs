//! Who is calling and what they may touch. A request is authenticated either by an API key
//! (`x-api-key`: base64 of `<api-key>:<api-secret>`) or by a JWT bearer token, and resolved to a
//! [`Scope`]: the organization, the one branch the request acts in, and the actor with its role.

pub mod store;
pub mod view;
pub mod wire;

pub use store::ApiKeyTx;
pub use view::{ApiKeyCreated, ApiKeyList, ApiKeyResponse};

use crate::branch::Branch;
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::ids::{ApiKeyId, BranchId, OrgId, UserId};
use crate::org::{Organization, Role, User};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Which branches a credential reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BranchAccess {
    /// Every present and future branch (organization admins, all-branches keys).
    All,
    Only(Vec<BranchId>),
}

impl BranchAccess {
    pub fn allows(&self, b: BranchId) -> bool {
        match self {
            BranchAccess::All => true,
            BranchAccess::Only(ids) => ids.contains(&b),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Actor {
    pub user_id: UserId,
    pub role: Role,
    pub access: BranchAccess,
    /// The API key used, if any (None for a JWT).
    pub api_key_id: Option<ApiKeyId>,
}

impl Actor {
    pub fn is_org_admin(&self) -> bool {
        self.role == Role::OrganizationAdmin
    }
}

/// What every operation acts within: one organization, one branch, one actor.
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    pub org: Organization,
    pub branch: Branch,
    pub actor: Actor,
}

impl Scope {
    pub fn org_id(&self) -> OrgId {
        self.org.id
    }
    pub fn branch_id(&self) -> BranchId {
        self.branch.id
    }
}

/// An API key: the public `key` names it, only a SHA-256 of the secret is kept. The secrets
/// are 256-bit random strings, so a fast hash is enough (no password-hash cost per request).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKey {
    pub id: ApiKeyId,
    pub org_id: OrgId,
    /// The user the key acts for (the admin who made it).
    pub user_id: UserId,
    pub name: String,
    pub key: String,
    pub secret_hash: String,
    pub branch_ids: Vec<BranchId>,
    pub default_branch_id: BranchId,
    pub is_all_branches: bool,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

impl ApiKey {
    pub fn role(&self) -> Role {
        if self.is_all_branches {
            Role::OrganizationAdmin
        } else {
            Role::BranchAdmin
        }
    }
    pub fn access(&self) -> BranchAccess {
        if self.is_all_branches {
            BranchAccess::All
        } else {
            BranchAccess::Only(self.branch_ids.clone())
        }
    }
    pub fn secret_matches(&self, secret: &str) -> bool {
        let h = hash_secret(secret);
        h.as_bytes().ct_eq(self.secret_hash.as_bytes()).into()
    }
}

/// A newly generated key pair; the secret is shown once and never stored.
#[derive(Debug, Clone)]
pub struct KeyPair {
    pub key: String,
    pub secret: String,
}

impl KeyPair {
    pub fn generate() -> Self {
        KeyPair {
            key: format!("ak_{}", random_token(16)),
            secret: format!("sk_{}", random_token(32)),
        }
    }
    /// The `x-api-key` header value.
    pub fn header_value(&self) -> String {
        STANDARD.encode(format!("{}:{}", self.key, self.secret))
    }
}

fn random_token(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut b);
    hex(&b)
}

/// Lower-case hex, without the formatting machinery (this runs on every request).
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    out
}

pub fn hash_secret(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// Credentials as sent by a client, before they are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    ApiKey { key: String, secret: String },
    Bearer(String),
}

impl Credential {
    /// Decodes an `x-api-key` header value.
    pub fn from_api_key_header(v: &str) -> Result<Self> {
        let raw = STANDARD.decode(v.trim()).map_err(|_| Error::unauthorized("x-api-key is not valid base64"))?;
        let text = String::from_utf8(raw).map_err(|_| Error::unauthorized("x-api-key is not valid text"))?;
        let (key, secret) = text
            .split_once(':')
            .ok_or_else(|| Error::unauthorized("x-api-key must encode <api-key>:<api-secret>"))?;
        if key.is_empty() || secret.is_empty() {
            return Err(Error::unauthorized("x-api-key must encode <api-key>:<api-secret>"));
        }
        if text.chars().any(char::is_control) {
            return Err(Error::unauthorized("x-api-key holds control characters"));
        }
        Ok(Credential::ApiKey {
            key: key.to_string(),
            secret: secret.to_string(),
        })
    }

    /// Decodes an `Authorization` header value (`Bearer <jwt>`).
    pub fn from_authorization_header(v: &str) -> Result<Self> {
        let (scheme, token) = v
            .trim()
            .split_once(' ')
            .ok_or_else(|| Error::unauthorized("Authorization must be 'Bearer <token>'"))?;
        if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() || token.chars().any(char::is_control) {
            return Err(Error::unauthorized("Authorization must be 'Bearer <token>'"));
        }
        Ok(Credential::Bearer(token.trim().to_string()))
    }
}

/// JWT claims: `sub` (user id), `org`, `exp` (UNIX seconds).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Claims {
    pub sub: UserId,
    pub org: OrgId,
    pub exp: i64,
}

/// HS256 JSON Web Tokens, signed with the server's secret.
pub mod jwt {
    use super::*;

    const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

    fn sign(secret: &[u8], input: &str) -> Vec<u8> {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("hmac accepts any key length");
        mac.update(input.as_bytes());
        mac.finalize().into_bytes().to_vec()
    }

    pub fn encode(secret: &[u8], claims: &Claims) -> String {
        let h = URL_SAFE_NO_PAD.encode(HEADER);
        let p = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).expect("claims serialize"));
        let input = format!("{h}.{p}");
        let sig = URL_SAFE_NO_PAD.encode(sign(secret, &input));
        format!("{input}.{sig}")
    }

    /// Checks the algorithm, the signature (constant time) and the expiry against `now`.
    pub fn decode(secret: &[u8], token: &str, now: Timestamp) -> Result<Claims> {
        let bad = || Error::unauthorized("invalid bearer token");
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let header: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).map_err(|_| bad())?).map_err(|_| bad())?;
        if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
            return Err(bad());
        }
        let sig = URL_SAFE_NO_PAD.decode(s).map_err(|_| bad())?;
        let expected = sign(secret, &format!("{h}.{p}"));
        if !bool::from(sig.ct_eq(&expected)) {
            return Err(bad());
        }
        let claims: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).map_err(|_| bad())?).map_err(|_| bad())?;
        if claims.exp <= now.timestamp() {
            return Err(Error::unauthorized("bearer token expired"));
        }
        Ok(claims)
    }
}

#[allow(clippy::too_many_arguments)]
pub fn new_key(org: &Organization, user: &User, pair: &KeyPair, name: &str, branch_ids: Vec<BranchId>, default: BranchId, all: bool, now: Timestamp) -> ApiKey {
    ApiKey {
        id: ApiKeyId::new(),
        org_id: org.id,
        user_id: user.id,
        name: name.to_string(),
        key: pair.key.clone(),
        secret_hash: hash_secret(&pair.secret),
        branch_ids,
        default_branch_id: default,
        is_all_branches: all,
        created_at: now,
        revoked_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_headers_with_control_characters_are_refused() {
        let header = |text: &str| STANDARD.encode(text);
        assert!(Credential::from_api_key_header(&header("key:secret")).is_ok());
        for bad in ["k\0ey:secret", "key:sec\nret", "key\u{7f}:secret"] {
            let e = Credential::from_api_key_header(&header(bad)).unwrap_err();
            assert_eq!(e.rule_code(), Some(crate::error::Code::UNAUTHORIZED), "{bad:?}");
        }
        assert!(Credential::from_authorization_header("Bearer a\u{0}b").is_err());
    }
    use crate::clock::{Clock, SystemClock};

    #[test]
    fn api_key_header_round_trip() {
        let kp = KeyPair::generate();
        let c = Credential::from_api_key_header(&kp.header_value()).unwrap();
        assert_eq!(
            c,
            Credential::ApiKey {
                key: kp.key.clone(),
                secret: kp.secret.clone()
            }
        );
        assert!(Credential::from_api_key_header("!!!").is_err());
        assert!(Credential::from_api_key_header(&STANDARD.encode("nocolon")).is_err());
    }

    #[test]
    fn jwt_round_trip_and_refusals() {
        let now = SystemClock.now();
        let claims = Claims {
            sub: UserId::new(),
            org: OrgId::new(),
            exp: now.timestamp() + 60,
        };
        let t = jwt::encode(b"secret", &claims);
        assert_eq!(jwt::decode(b"secret", &t, now).unwrap(), claims);
        assert!(jwt::decode(b"other", &t, now).is_err());
        assert!(jwt::decode(b"secret", &t, now + chrono::Duration::seconds(61)).is_err());
        let mut tampered = t.clone();
        tampered.insert(t.find('.').unwrap() + 2, 'x');
        assert!(jwt::decode(b"secret", &tampered, now).is_err());
        let none_alg = format!("{}.{}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#), t.split('.').nth(1).unwrap());
        assert!(jwt::decode(b"secret", &none_alg, now).is_err());
    }

    #[test]
    fn hex_encoding() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hash_secret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn secret_check() {
        let kp = KeyPair::generate();
        let k = ApiKey {
            id: ApiKeyId::new(),
            org_id: OrgId::new(),
            user_id: UserId::new(),
            name: "k".into(),
            key: kp.key.clone(),
            secret_hash: hash_secret(&kp.secret),
            branch_ids: vec![],
            default_branch_id: BranchId::new(),
            is_all_branches: true,
            created_at: SystemClock.now(),
            revoked_at: None,
        };
        assert!(k.secret_matches(&kp.secret));
        assert!(!k.secret_matches("sk_wrong"));
    }
}

/// `billing-server keys create`: another key for an organization.
#[derive(Debug, Clone, Default)]
pub struct NewApiKey {
    pub name: String,
    pub branch_ids: Vec<BranchId>,
    pub default_branch_id: Option<BranchId>,
    pub is_all_branches: bool,
}
