//! Idempotency keys: a client sends `Idempotency-Key` with a request that changes something, and
//! a retry of the same request with the same key is answered with the first answer instead of
//! running again.
//!
//! A key lives in a record per organization and credential ([`IdempotencyRecord::scope`]: the
//! API key, or the user of a bearer token), for [`retention`] (24 hours) of the organization's time. Its
//! life:
//!
//! 1. [`Billing::idempotency_begin`](crate::Billing::idempotency_begin) claims the key in a
//!    transaction of its own: a new record is [`State::Running`], owned by a fresh token and
//!    leased for [`lease`] (60 seconds). A record that exists decides instead: another request under the key
//!    is a mismatch, a finished one is replayed, one still running makes the caller wait.
//! 2. The operation runs with the claim [`Marking`] its thread: every write transaction it
//!    commits also marks the record [`State::Committed`] (and renews the lease), in that same
//!    transaction ([`mark`], called by the host's store for every write). The mark checks the
//!    owner token, so a request whose claim was taken over (its lease ran out before it wrote
//!    anything) cannot commit anything: two runs of one key never both write.
//! 3. [`Billing::idempotency_finish`](crate::Billing::idempotency_finish) stores the response
//!    (status, headers, body) and marks the record [`State::Done`]; a response that is not kept
//!    (a 5xx) releases a record that committed nothing, so the key may be used again.
//!
//! A record left [`State::Committed`] without a response (the process died between the
//! operation's commit and the response's, or the operation failed after committing part of its
//! work) is never run again: a retry is answered `IDEMPOTENCY_OUTCOME_UNKNOWN` once its lease
//! has run out.

pub mod store;

pub use store::IdempotencyTx;

use crate::clock::{Clock, Timestamp};
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::{BranchId, OrgId};
use chrono::Duration;
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::sync::Arc;
use uuid::Uuid;

/// The longest key accepted, in characters.
pub const MAX_KEY_LEN: usize = 255;

/// How long a key is remembered, in the organization's time (a sandbox organization's test clock
/// moves it too).
pub fn retention() -> Duration {
    Duration::hours(24)
}

/// How long a claim holds without a write before another request with the key may take it over,
/// in server time. Every write of the operation renews it.
pub fn lease() -> Duration {
    Duration::seconds(60)
}

/// The header's value: 1 to 255 printable ASCII characters (space to `~`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Parses the raw header value; anything else is a 422 at `["header", "idempotency-key"]`.
    pub fn parse(raw: &[u8]) -> Result<Self> {
        let invalid = |kind: &str, msg: &str| Error::invalid(FieldError::new(kind, vec!["header".into(), "idempotency-key".into()], msg));
        if raw.is_empty() {
            return Err(invalid("string_too_short", "Idempotency-Key must have at least 1 character"));
        }
        if raw.len() > MAX_KEY_LEN {
            return Err(invalid("string_too_long", "Idempotency-Key must have at most 255 characters"));
        }
        if !raw.iter().all(|b| (0x20..=0x7e).contains(b)) {
            return Err(invalid("string_pattern_mismatch", "Idempotency-Key must be printable ASCII characters"));
        }
        Ok(IdempotencyKey(String::from_utf8_lossy(raw).into_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What makes two requests "the same request": SHA-256 over the method, the path, the query, the
/// branch it acts in and the body's bytes, kept as 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(pub String);

impl Fingerprint {
    pub fn of(method: &str, path: &str, query: &str, branch: BranchId, body: &[u8]) -> Self {
        let mut h = Sha256::new();
        for part in [method.as_bytes(), path.as_bytes(), query.as_bytes(), branch.to_string().as_bytes()] {
            // Length-prefixed, so that no two different requests hash the same parts.
            h.update((part.len() as u64).to_be_bytes());
            h.update(part);
        }
        h.update((body.len() as u64).to_be_bytes());
        h.update(body);
        Fingerprint(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }
}

crate::wire_enum!(
    /// Where a key's request stands: `RUNNING` (claimed, nothing committed yet), `COMMITTED`
    /// (the operation committed at least one transaction, no response stored yet), `DONE`
    /// (finished, the response stored).
    State { Running = "RUNNING", Committed = "COMMITTED", Done = "DONE" }
);

/// A response as sent: status, headers (name, value) and body bytes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// One key of one organization and credential.
#[derive(Debug, Clone, PartialEq)]
pub struct IdempotencyRecord {
    pub org_id: OrgId,
    /// Whose key it is within the organization: `key:<api key id>` or `user:<user id>`.
    pub scope: String,
    pub key: String,
    pub fingerprint: String,
    pub state: State,
    /// The token of the request running it (a takeover gives a new one).
    pub owner: Uuid,
    /// In the organization's time: the record is forgotten [`retention`] after it.
    pub created_at: Timestamp,
    /// In server time: until then the owner is presumed alive.
    pub lease_until: Timestamp,
    /// Set when [`State::Done`].
    pub response: Option<StoredResponse>,
}

/// A claimed key: what the operation's transactions mark, and what finishing names.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub org_id: OrgId,
    pub scope: String,
    pub key: String,
    pub owner: Uuid,
}

/// What [`Billing::idempotency_begin`](crate::Billing::idempotency_begin) found.
#[derive(Debug, Clone, PartialEq)]
pub enum Begin {
    /// The key is this request's: run the operation (marking), then finish.
    Run(Claim),
    /// The same request already finished: answer this.
    Replay(StoredResponse),
    /// The same request is running elsewhere: ask again shortly.
    InProgress,
}

/// Fields of a response that are shown once and never stored (an API key's secret): a stored
/// response keeps them as `null`, so a replay answers the same record without its secret.
pub const SHOWN_ONCE: &[&str] = &["api_secret", "x_api_key"];

impl StoredResponse {
    /// The response as it may be stored: the [`SHOWN_ONCE`] fields of a JSON object body set to
    /// `null` (the body is re-serialized only when it had one).
    pub fn without_secrets(mut self) -> StoredResponse {
        let Ok(serde_json::Value::Object(mut body)) = serde_json::from_slice::<serde_json::Value>(&self.body) else {
            return self;
        };
        let mut changed = false;
        for field in SHOWN_ONCE {
            if let Some(v) = body.get_mut(*field).filter(|v| !v.is_null()) {
                *v = serde_json::Value::Null;
                changed = true;
            }
        }
        if changed {
            self.body = serde_json::to_vec(&body).expect("JSON values serialize");
        }
        self
    }
}

thread_local! {
    static MARKING: RefCell<Option<(Claim, Arc<dyn Clock>)>> = const { RefCell::new(None) };
}

/// While alive, every write transaction committed on this thread marks its claim (see
/// [`mark`]). Made by [`Billing::idempotency_marking`](crate::Billing::idempotency_marking).
pub struct Marking(());

impl Marking {
    pub fn start(claim: &Claim, clock: Arc<dyn Clock>) -> Marking {
        MARKING.with(|m| *m.borrow_mut() = Some((claim.clone(), clock)));
        Marking(())
    }
}

impl Drop for Marking {
    fn drop(&mut self) {
        MARKING.with(|m| *m.borrow_mut() = None);
    }
}

/// Called by a store host at the end of every successful write closure, inside its
/// transaction: when a [`Marking`] is active on this thread, marks the claimed record
/// [`State::Committed`] and renews its lease. A record no longer owned by the claim (taken over
/// by another request after the lease ran out) fails the transaction with
/// `IDEMPOTENCY_KEY_IN_USE`, so nothing of it is kept.
pub fn mark<T: IdempotencyTx + ?Sized>(tx: &mut T) -> Result<()> {
    let Some((claim, clock)) = MARKING.with(|m| m.borrow().clone()) else {
        return Ok(());
    };
    if tx.mark_idempotency_committed(&claim, clock.now() + lease())? {
        Ok(())
    } else {
        Err(Error::rule(
            Code::IDEMPOTENCY_KEY_IN_USE,
            format!("the request with Idempotency-Key '{}' was taken over by a retry", claim.key),
        ))
    }
}

/// Whether a [`Marking`] is active on this thread.
pub fn marking_active() -> bool {
    MARKING.with(|m| m.borrow().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_printable_ascii_up_to_255() {
        assert_eq!(IdempotencyKey::parse(b"abc-123 ~").unwrap().as_str(), "abc-123 ~");
        assert!(IdempotencyKey::parse(&[b'a'; 255]).is_ok());
        for bad in [&b""[..], &[b'a'; 256][..], b"tab\there", "caf\u{e9}".as_bytes(), b"nul\0"] {
            match IdempotencyKey::parse(bad) {
                Err(Error::Validation(d)) => assert_eq!(d[0].loc, vec!["header".into(), "idempotency-key".into()]),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn secrets_shown_once_are_not_stored() {
        let r = |body: &[u8]| StoredResponse {
            status: 200,
            headers: vec![],
            body: body.to_vec(),
        };
        let kept = r(br#"{"id":"k","api_secret":"s3cret","x_api_key":"eHl6","name":"n"}"#).without_secrets();
        let v: serde_json::Value = serde_json::from_slice(&kept.body).unwrap();
        assert_eq!(v, serde_json::json!({"id": "k", "api_secret": null, "x_api_key": null, "name": "n"}));
        assert!(!String::from_utf8_lossy(&kept.body).contains("s3cret"));
        // Anything else is kept byte for byte.
        for body in [&br#"{"id": "k",  "name":"n"}"#[..], b"[1]", b"not json", br#"{"api_secret":null}"#] {
            assert_eq!(r(body).without_secrets().body, body);
        }
    }

    #[test]
    fn fingerprints_tell_requests_apart() {
        let b = BranchId::new();
        let f = |m: &str, p: &str, q: &str, br: BranchId, body: &[u8]| Fingerprint::of(m, p, q, br, body);
        let base = f("POST", "/api/v2/consumers", "", b, b"{}");
        assert_eq!(base, f("POST", "/api/v2/consumers", "", b, b"{}"));
        assert_eq!(base.0.len(), 64);
        assert_ne!(base, f("PUT", "/api/v2/consumers", "", b, b"{}"));
        assert_ne!(base, f("POST", "/api/v2/products", "", b, b"{}"));
        assert_ne!(base, f("POST", "/api/v2/consumers", "a=1", b, b"{}"));
        assert_ne!(base, f("POST", "/api/v2/consumers", "", BranchId::new(), b"{}"));
        assert_ne!(base, f("POST", "/api/v2/consumers", "", b, b"{ }"));
        // The parts are delimited: moving bytes between them changes the hash.
        assert_ne!(f("POST", "/a", "b", b, b""), f("POST", "/ab", "", b, b""));
    }
}
