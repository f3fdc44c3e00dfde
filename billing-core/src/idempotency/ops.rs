//! Idempotency operations on [`Engine`]: claim a key, finish it.

use super::*;
use crate::auth::Scope;
use crate::engine::Engine;
use crate::error::StoreError;
use crate::error::{Code, Error, Result};
use crate::lane::Lane;
use crate::store::Store;
use uuid::Uuid;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const BEGIN: Lane = Lane::Write;
    pub const FINISH: Lane = Lane::Write;
}

/// Whose keys a request uses within its organization: its API key, or the user of its bearer
/// token.
pub fn scope_of(scope: &Scope) -> String {
    match scope.actor.api_key_id {
        Some(k) => format!("key:{k}"),
        None => format!("user:{}", scope.actor.user_id),
    }
}

fn mismatch(key: &IdempotencyKey) -> Error {
    Error::rule(
        Code::IDEMPOTENCY_KEY_MISMATCH,
        format!(
            "Idempotency-Key '{}' was used with another request (method, path, query, branch or body)",
            key.as_str()
        ),
    )
}

impl<S: Store> Engine<S> {
    /// Claims `key` for a request of `scope` whose [`Fingerprint`] is `fingerprint`, in a
    /// transaction of its own, and forgets the organization's records older than
    /// [`retention`] on the way.
    ///
    /// - no record (or one past [`retention`]): a new `RUNNING` record → [`Begin::Run`];
    /// - a record of another request: `IDEMPOTENCY_KEY_MISMATCH` (422);
    /// - `DONE`: [`Begin::Replay`] of its response;
    /// - `RUNNING` or `COMMITTED` within its lease: [`Begin::InProgress`];
    /// - `RUNNING` past its lease (its request died before writing anything): taken over →
    ///   [`Begin::Run`] with a new owner;
    /// - `COMMITTED` past its lease (done, but no response was kept): `IDEMPOTENCY_OUTCOME_UNKNOWN`
    ///   (409); it is never run again.
    pub fn idempotency_begin(&self, scope: &Scope, key: &IdempotencyKey, fingerprint: &Fingerprint) -> Result<Begin> {
        let server_now = self.clock().now();
        let org_now = scope.org.now(self.clock());
        let who = scope_of(scope);
        let org = scope.org_id();
        self.store.write(|tx| {
            tx.purge_idempotency_records(org, org_now - retention())?;
            let owner = Uuid::now_v7();
            let fresh = IdempotencyRecord {
                org_id: org,
                scope: who.clone(),
                key: key.as_str().to_string(),
                fingerprint: fingerprint.0.clone(),
                state: State::Running,
                owner,
                created_at: org_now,
                lease_until: server_now + lease(),
                response: None,
            };
            let claim = Claim {
                org_id: org,
                scope: who.clone(),
                key: key.as_str().to_string(),
                owner,
            };
            let Some(found) = tx.idempotency_record(org, &who, key.as_str())? else {
                return match tx.insert_idempotency_record(&fresh) {
                    Ok(()) => Ok(Begin::Run(claim)),
                    // A concurrent claim inserted it first (a store that lets both read nothing):
                    // that request runs it; ask again.
                    Err(StoreError::UniqueViolation(_)) => Ok(Begin::InProgress),
                    Err(e) => Err(e.into()),
                };
            };
            if found.fingerprint != fingerprint.0 {
                return Err(mismatch(key));
            }
            let live = found.lease_until > server_now;
            match found.state {
                State::Done => Ok(Begin::Replay(found.response.unwrap_or_else(|| StoredResponse {
                    status: 200,
                    headers: vec![],
                    body: b"{}".to_vec(),
                }))),
                State::Running | State::Committed if live => Ok(Begin::InProgress),
                State::Running => {
                    let taken = IdempotencyRecord {
                        created_at: found.created_at,
                        ..fresh
                    };
                    match tx.update_idempotency_record(&taken, found.owner)? {
                        true => Ok(Begin::Run(claim)),
                        false => Ok(Begin::InProgress),
                    }
                }
                State::Committed => Err(Error::rule(
                    Code::IDEMPOTENCY_OUTCOME_UNKNOWN,
                    format!(
                        "the request with Idempotency-Key '{}' was carried out, but its response was not kept; look up the result before sending it again under a new key",
                        key.as_str()
                    ),
                )),
            }
        })
    }

    /// Marks `claim` on this thread while the guard lives: every write transaction the
    /// operation commits marks the record `COMMITTED` (see [`mark`]). Drop it before
    /// [`Self::idempotency_finish`].
    pub fn idempotency_marking(&self, claim: &Claim) -> Marking {
        Marking::start(claim, self.clock_arc())
    }

    /// Ends a claimed request: with `Some(response)`, stores it and marks the record `DONE`
    /// (replays answer it from now on); with `None` (a response that is not kept, a 5xx),
    /// deletes the record if the operation committed nothing, so the key may be used again, and
    /// otherwise ends its lease (a retry is then answered `IDEMPOTENCY_OUTCOME_UNKNOWN`).
    /// Returns whether the claim still held.
    pub fn idempotency_finish(&self, claim: &Claim, response: Option<StoredResponse>) -> Result<bool> {
        let server_now = self.clock().now();
        self.store.write(|tx| {
            let Some(found) = tx.idempotency_record(claim.org_id, &claim.scope, &claim.key)? else {
                return Ok(false);
            };
            if found.owner != claim.owner || found.state == State::Done {
                return Ok(false);
            }
            match (&response, found.state) {
                (None, State::Running) => Ok(tx.release_idempotency_record(claim)?),
                (None, _) => {
                    let ended = IdempotencyRecord {
                        lease_until: server_now,
                        ..found
                    };
                    Ok(tx.update_idempotency_record(&ended, claim.owner)?)
                }
                (Some(r), _) => {
                    let done = IdempotencyRecord {
                        state: State::Done,
                        response: Some(r.clone()),
                        ..found
                    };
                    Ok(tx.update_idempotency_record(&done, claim.owner)?)
                }
            }
        })
    }
}
