//! API keys: `/api-keys`, `/api-keys/{api_key_id}` (revoke), `/api-keys/{api_key_id}/rotate`.
//! Not in the specification; organization admins only.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::router::{route, Route};
use billing_core::auth::keys::lane;
use billing_core::auth::{NewApiKey, Scope};
use billing_core::error::Result;
use billing_core::Billing;
use hyper::Method;
use serde_json::json;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/api-keys", list, lane::LIST),
    route(Method::POST, "/api-keys", create, lane::CREATE),
    route(Method::DELETE, "/api-keys/{api_key_id}", revoke, lane::REVOKE),
    route(Method::POST, "/api-keys/{api_key_id}/rotate", rotate, lane::ROTATE),
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
