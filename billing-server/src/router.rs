//! The route table and its resolver. Every resource's file in [`crate::api`] lists its rows —
//! method, path under `/api/v2` (`{name}` marks a path parameter), handler and the core's
//! [`Lane`] for the operation — and [`crate::api::TABLES`] lists the resources. A request
//! resolves to one row; a known path with another method is a 405, anything else a 404.

use crate::api::{Reply, Request, TABLES};
use crate::backend::Backend;
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::{Billing, Lane};
use hyper::Method;

/// Runs one operation for an authenticated caller.
pub type Handler = fn(&Billing<Backend>, &Scope, Request) -> Result<Reply>;

/// One row of the route table.
pub struct Route {
    pub method: Method,
    /// Under `/api/v2`, e.g. `/consumers/{consumer_id}`.
    pub path: &'static str,
    pub handler: Handler,
    /// Where the operation runs (see `respond` in the crate root).
    pub lane: Lane,
}

/// A row of the table: `route(Method::GET, "/consumers/{consumer_id}", get, lane::GET)`.
pub const fn route(method: Method, path: &'static str, handler: Handler, lane: Lane) -> Route {
    Route { method, path, handler, lane }
}

pub enum Resolution {
    /// The row and the path parameters, by name.
    Found(&'static Route, Vec<(&'static str, String)>),
    MethodNotAllowed,
    NotFound,
}

/// How a row's path matches `segments`: the captured parameters and how many literal segments
/// matched (a literal beats a parameter: `/payments/auto-charge-on-demand/{id}` over
/// `/payments/{payment_id}/…`).
fn matches(pattern: &'static str, segments: &[&str]) -> Option<(usize, Vec<(&'static str, String)>)> {
    let parts: Vec<&'static str> = pattern.trim_start_matches('/').split('/').collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut literals = 0;
    let mut params = Vec::new();
    for (p, s) in parts.iter().zip(segments) {
        match p.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Some(name) => params.push((name, (*s).to_string())),
            None if p == s => literals += 1,
            None => return None,
        }
    }
    Some((literals, params))
}

pub fn resolve(method: &Method, path: &str) -> Resolution {
    let Some(rest) = path.strip_prefix("/api/v2/") else {
        return Resolution::NotFound;
    };
    let segments: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let mut best: Option<usize> = None;
    let mut found = None;
    for r in TABLES.iter().flat_map(|t| t.iter()) {
        let Some((literals, params)) = matches(r.path, &segments) else { continue };
        if best.is_some_and(|b| b > literals) {
            continue;
        }
        if best != Some(literals) {
            best = Some(literals);
            found = None;
        }
        if r.method == *method && found.is_none() {
            found = Some((r, params));
        }
    }
    match (best, found) {
        (_, Some((r, params))) => Resolution::Found(r, params),
        (Some(_), None) => Resolution::MethodNotAllowed,
        (None, _) => Resolution::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(method: Method, path: &str) -> (&'static str, Vec<(&'static str, String)>) {
        match resolve(&method, path) {
            Resolution::Found(r, params) => (r.path, params),
            Resolution::MethodNotAllowed => panic!("{method} {path}: 405"),
            Resolution::NotFound => panic!("{method} {path}: 404"),
        }
    }

    #[test]
    fn resolves_paths_and_methods() {
        assert_eq!(found(Method::GET, "/api/v2/me").0, "/me");
        assert_eq!(
            found(Method::GET, "/api/v2/consumers/abc"),
            ("/consumers/{consumer_id}", vec![("consumer_id", "abc".to_string())])
        );
        assert_eq!(found(Method::GET, "/api/v2/consumers/").0, "/consumers");
        assert!(matches!(resolve(&Method::PATCH, "/api/v2/consumers/abc"), Resolution::MethodNotAllowed));
        assert!(matches!(resolve(&Method::GET, "/api/v2/nothing"), Resolution::NotFound));
        assert!(matches!(resolve(&Method::GET, "/api/v1/me"), Resolution::NotFound));
        assert_eq!(
            found(Method::DELETE, "/api/v2/products/p/prices/x").1,
            vec![("product_id", "p".to_string()), ("price_id", "x".to_string())]
        );
        assert_eq!(
            found(Method::POST, "/api/v2/payments/auto-charge-on-demand/x").0,
            "/payments/auto-charge-on-demand/{payment_id}"
        );
        assert_eq!(found(Method::GET, "/api/v2/webhooks/deliveries/d").0, "/webhooks/deliveries/{delivery_id}");
        assert_eq!(found(Method::GET, "/api/v2/webhooks/w/deliveries").0, "/webhooks/{webhook_id}/deliveries");
    }

    #[test]
    fn every_row_is_reachable_and_unique() {
        let rows: Vec<&Route> = TABLES.iter().flat_map(|t| t.iter()).collect();
        for r in &rows {
            let path = format!("/api/v2{}", r.path.replace(['{', '}'], ""));
            match resolve(&r.method, &path) {
                Resolution::Found(hit, _) => assert!(std::ptr::eq(hit, *r), "{} {} is shadowed by {}", r.method, r.path, hit.path),
                _ => panic!("{} {} does not resolve", r.method, r.path),
            }
        }
        let mut keys: Vec<(String, &str)> = rows.iter().map(|r| (r.method.to_string(), r.path)).collect();
        keys.sort();
        let before = keys.len();
        keys.dedup();
        assert_eq!(before, keys.len(), "a (method, path) pair is listed twice");
    }
}
