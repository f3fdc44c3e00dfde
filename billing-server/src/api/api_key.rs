//! API keys: `/api-keys`, `/api-keys/{api_key_id}` (revoke), `/api-keys/{api_key_id}/rotate`.
//! Not in the specification; organization admins only.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::doc;
use crate::router::{route, Route};
use billing_core::auth::keys::lane;
use billing_core::auth::wire::request;
use billing_core::auth::{ApiKeyCreated, ApiKeyList, ApiKeyResponse, NewApiKey, Scope};
use billing_core::error::Result;
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/api-keys", list, lane::LIST).doc(doc("list_api_keys", "API keys", "The organization's API keys (never a secret)").ok::<ApiKeyList>()),
    route(Method::POST, "/api-keys", create, lane::CREATE).doc(doc("create_api_key", "API keys", "Create an API key (its secret is shown once)").body::<request::ApiKeyCreate>(r#"{"name": "shop backend", "branch_ids": ["0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90"], "default_branch_id": "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90"}"#).ok::<ApiKeyCreated>()),
    route(Method::DELETE, "/api-keys/{api_key_id}", revoke, lane::REVOKE).doc(doc("revoke_api_key", "API keys", "Revoke an API key").ok::<ApiKeyResponse>()),
    route(Method::POST, "/api-keys/{api_key_id}/rotate", rotate, lane::ROTATE).doc(doc("rotate_api_key", "API keys", "Replace a key by a new one with the same reach").ok::<ApiKeyCreated>()),
];

fn list(b: &Billing<Backend>, s: &Scope, _r: Request) -> Result<Reply> {
    let keys = b.api_keys().list(s)?;
    Ok(Reply::of(&ApiKeyList::of(&keys)))
}

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (key, pair) = b.api_keys().create(s, &NewApiKey::parse(r.body()?)?)?;
    Ok(Reply::of(&key.created(&pair)))
}

fn revoke(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.api_keys().revoke(s, r.id("api_key_id")?)?.response()))
}

fn rotate(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (key, pair) = b.api_keys().rotate(s, r.id("api_key_id")?)?;
    Ok(Reply::of(&key.created(&pair)))
}
