//! `Idempotency-Key` at the HTTP edge (the rules are `billing_core::idempotency`'s): on a POST,
//! PUT, PATCH or DELETE under `/api/v2`, the key is claimed once the request is authenticated
//! and its body read; the operation then runs marking the key in each of its transactions, and
//! its response (status, headers, body) is stored — on SQLite in the same commit as the
//! operation's (the write executor's batch), on PostgreSQL in the transaction right after. A
//! retry of the same request is answered with the stored response and `idempotent-replayed:
//! true`; one arriving while the first still runs waits for it (up to [`WAIT`]). Secrets shown
//! once (a new API key's `api_secret` and `x_api_key`) are not stored: a replay has them `null`.

use crate::api::Request as OpRequest;
use crate::http::{error_response, HttpResponse};
use crate::router::Route;
use crate::App;
use billing_core::auth::Scope;
use billing_core::error::{Code, Error};
use billing_core::idempotency::{Begin, Claim, Fingerprint, IdempotencyKey, StoredResponse};
use billing_core::Lane;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Body;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Response, StatusCode};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a request waits for another one with the same key to finish before it is answered
/// 409 `IDEMPOTENCY_KEY_IN_USE`.
pub const WAIT: Duration = Duration::from_secs(10);

/// The response header that marks a replayed response.
pub const REPLAYED: &str = "idempotent-replayed";

/// The raw `Idempotency-Key` of a request that may carry one (POST, PUT, PATCH, DELETE), if
/// sent; sent twice is refused like a malformed one.
pub fn raw_key(method: &Method, headers: &hyper::HeaderMap) -> Option<Vec<u8>> {
    if !matches!(*method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE) {
        return None;
    }
    let mut values = headers.get_all("idempotency-key").iter();
    let first = values.next()?;
    match values.next() {
        // Not a valid key: parsing it reports the header.
        Some(_) => Some(vec![0]),
        None => Some(first.as_bytes().to_vec()),
    }
}

/// What identifies the request behind a key.
pub struct Identity {
    pub key: IdempotencyKey,
    pub fingerprint: Fingerprint,
}

impl Identity {
    pub fn new(raw: &[u8], method: &Method, path: &str, query: &str, scope: &Scope, body: &[u8]) -> Result<Identity, Error> {
        let key = IdempotencyKey::parse(raw)?;
        let fingerprint = Fingerprint::of(method.as_str(), path, query, scope.branch_id(), body);
        Ok(Identity { key, fingerprint })
    }
}

/// Runs `route`'s operation under the key: replays a finished request, waits for a running one,
/// or claims the key, runs the operation and stores its response.
pub async fn respond(app: Arc<App>, route: &'static Route, scope: Scope, id: Identity, input: OpRequest) -> HttpResponse {
    let deadline = Instant::now() + WAIT;
    let mut pause = Duration::from_millis(5);
    let claim = loop {
        let (s, k, f) = (scope.clone(), id.key.clone(), id.fingerprint.clone());
        let begun = crate::on_lane(app.clone(), Lane::Write, move |app| app.billing.engine().idempotency_begin(&s, &k, &f)).await;
        match begun {
            Ok(Begin::Run(claim)) => break claim,
            Ok(Begin::Replay(stored)) => return replayed(stored),
            Ok(Begin::InProgress) if Instant::now() < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Ok(Begin::InProgress) => {
                return error_response(&Error::rule(
                    Code::IDEMPOTENCY_KEY_IN_USE,
                    format!("a request with Idempotency-Key '{}' is still in progress; retry later", id.key.as_str()),
                ))
            }
            Err(e) => return error_response(&e),
        }
    };
    let handler = route.handler;
    let running = claim.clone();
    let run = move |app: Arc<App>| -> Result<StoredResponse, Error> {
        let result = {
            let _marking = app.billing.engine().idempotency_marking(&running);
            input.query.check().and_then(|_| handler(&app.billing, &scope, input))
        };
        let stored = stored(crate::reply(result));
        // In the operation's write batch on SQLite: stored in the same commit. A 5xx is not
        // kept: the key is released when nothing was committed under it.
        let keep = stored.status < 500;
        if let Err(e) = app
            .billing
            .engine()
            .idempotency_finish(&running, keep.then(|| stored.clone().without_secrets()))
        {
            tracing::error!(error = %e, key = running.key.as_str(), "the response of an idempotent request was not stored");
        }
        Ok(stored)
    };
    match crate::on_lane(app.clone(), route.lane, run).await {
        Ok(stored) => response(stored, false),
        Err(e) => {
            // The operation's commit failed (or it panicked): nothing of it is kept, so neither
            // is the key.
            release(app, claim).await;
            error_response(&e)
        }
    }
}

async fn release(app: Arc<App>, claim: Claim) {
    let released = crate::on_lane(app, Lane::Write, move |app| app.billing.engine().idempotency_finish(&claim, None)).await;
    if let Err(e) = released {
        tracing::error!(error = %e, "an idempotency key could not be released");
    }
}

/// The response as it will be sent (before `x-request-id`, which is each request's own).
fn stored(resp: HttpResponse) -> StoredResponse {
    let (parts, body) = resp.into_parts();
    let headers = parts
        .headers
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect();
    StoredResponse {
        status: parts.status.as_u16(),
        headers,
        body: full_bytes(body).to_vec(),
    }
}

/// The bytes of a complete body (a `Full` has one frame, ready at once).
fn full_bytes(body: Full<Bytes>) -> Bytes {
    let mut body = std::pin::pin!(body);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match body.as_mut().poll_frame(&mut cx) {
        std::task::Poll::Ready(Some(Ok(frame))) => frame.into_data().unwrap_or_default(),
        _ => Bytes::new(),
    }
}

fn replayed(stored: StoredResponse) -> HttpResponse {
    response(stored, true)
}

fn response(stored: StoredResponse, replay: bool) -> HttpResponse {
    let mut r = Response::new(Full::new(Bytes::from(stored.body)));
    *r.status_mut() = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    let h = r.headers_mut();
    for (name, value) in stored.headers {
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&value)) {
            h.append(n, v);
        }
    }
    if replay {
        h.insert(REPLAYED, HeaderValue::from_static("true"));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_round_trips_through_storage() {
        let original = crate::http::json_response(StatusCode::CREATED, &serde_json::json!({"a": 1}));
        let s = stored(original);
        assert_eq!(s.status, 201);
        assert_eq!(s.body, br#"{"a":1}"#);
        assert!(s.headers.contains(&("content-type".into(), "application/json".into())));
        let back = replayed(s.clone());
        assert_eq!(back.status(), StatusCode::CREATED);
        assert_eq!(back.headers()[REPLAYED], "true");
        assert_eq!(stored(back).body, s.body);
    }

    #[test]
    fn only_changing_methods_take_a_key() {
        let mut h = hyper::HeaderMap::new();
        h.insert("idempotency-key", HeaderValue::from_static("k1"));
        assert_eq!(raw_key(&Method::POST, &h), Some(b"k1".to_vec()));
        assert_eq!(raw_key(&Method::DELETE, &h), Some(b"k1".to_vec()));
        assert_eq!(raw_key(&Method::GET, &h), None);
        h.append("idempotency-key", HeaderValue::from_static("k2"));
        assert!(IdempotencyKey::parse(&raw_key(&Method::POST, &h).unwrap()).is_err());
    }
}
