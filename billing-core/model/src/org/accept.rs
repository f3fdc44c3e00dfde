//! Accepting an invitation: the request.

use crate::error::Result;
use crate::wire::Body;
use serde_json::Value;

/// How long the bearer token answered on acceptance is valid.
pub const ACCEPT_TOKEN_DAYS: i64 = 30;

/// The body of `POST /organization/invite/accept`.
#[derive(Debug, Clone, PartialEq)]
pub struct AcceptRequest {
    pub token: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
}

impl AcceptRequest {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let token = b.req_str("token").map(|t| t.trim().to_string());
        if token.as_ref().is_some_and(|t| t.is_empty() || t.len() > 200) {
            b.fail("string_pattern_mismatch", "token", "Value error, not an invitation token");
        }
        let name = |b: &mut Body<'_>, field: &str| {
            let v = b.opt_str(field).map(|s| s.trim().to_string());
            if v.as_ref()
                .is_some_and(|s| s.is_empty() || s.chars().count() > 100 || s.chars().any(char::is_control))
            {
                b.fail("string_too_long", field, "String should have 1 to 100 characters");
            }
            v
        };
        let first_name = name(&mut b, "first_name");
        let last_name = name(&mut b, "last_name");
        b.finish()?;
        Ok(AcceptRequest {
            token: token.expect("checked"),
            first_name,
            last_name,
        })
    }
}

/// What accepting an invitation made: the new user, its organization and a bearer token of
/// the user (see [`super::view::InviteAccepted`]).
#[derive(Debug, Clone)]
pub struct Accepted {
    pub user: super::User,
    pub org: super::Organization,
    pub access_token: String,
    /// When the token expires (server time).
    pub expires_at: crate::clock::Timestamp,
}
