//! API keys: `/api-keys`, `/api-keys/{api_key_id}` (revoke), `/api-keys/{api_key_id}/rotate`.
//! Not in the specification; organization admins only.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::doc;
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::keys::lane;
use billing_core::auth::{NewApiKey, Scope};
use billing_core::error::Result;
use billing_core::Billing;
use hyper::Method;
use serde_json::json;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/api-keys", list, lane::LIST).doc(doc("list_api_keys", "API keys", "The organization's API keys (never a secret)").ok::<wire::ApiKeyList>()),
    route(Method::POST, "/api-keys", create, lane::CREATE).doc(doc("create_api_key", "API keys", "Create an API key (its secret is shown once)").body::<wire::ApiKeyCreate>(r#"{"name": "shop backend", "branch_ids": ["0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90"], "default_branch_id": "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90"}"#).ok::<wire::ApiKeyCreated>()),
    route(Method::DELETE, "/api-keys/{api_key_id}", revoke, lane::REVOKE).doc(doc("revoke_api_key", "API keys", "Revoke an API key").ok::<wire::ApiKey>()),
    route(Method::POST, "/api-keys/{api_key_id}/rotate", rotate, lane::ROTATE).doc(doc("rotate_api_key", "API keys", "Replace a key by a new one with the same reach").ok::<wire::ApiKeyCreated>()),
];

fn list(b: &Billing<Backend>, s: &Scope, _r: Request) -> Result<Reply> {
    let keys: Vec<_> = b.list_api_keys(s)?.iter().map(|k| k.to_json()).collect();
    Ok(Reply::Json(json!({ "data": keys })))
}

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (key, pair) = b.create_api_key_in(s, &NewApiKey::parse(r.body()?)?)?;
    Ok(Reply::Json(key.to_created_json(&pair)))
}

fn revoke(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.revoke_api_key(s, r.id("api_key_id")?)?.to_json()))
}

fn rotate(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (key, pair) = b.rotate_api_key(s, r.id("api_key_id")?)?;
    Ok(Reply::Json(key.to_created_json(&pair)))
}
