//! The route tables and their resolver. Every resource's file in [`crate::api`] lists its rows —
//! method, path under `/api/v2` (`{name}` marks a path parameter), handler and the core's
//! [`Lane`] for the operation — and [`crate::api::TABLES`] lists the resources. The public
//! rows ([`crate::api::PUBLIC_TABLES`]: the checkout, no credentials) have full paths under
//! `/pay/`. A request resolves to one row; a known path with another method is a 405, anything
//! else a 404.

use crate::api::{Reply, Request, PUBLIC_TABLES, TABLES};
use crate::backend::Backend;
use crate::openapi::doc::Doc;
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
    /// What `/openapi.json` and the MCP tools say of it (every API row has one).
    pub doc: Option<Doc>,
}

/// A row of the table: `route(Method::GET, "/consumers/{consumer_id}", get, lane::GET)`, with
/// its description: `.doc(doc("get_customer", "Consumers", "One consumer").ok::<…>())`.
pub const fn route(method: Method, path: &'static str, handler: Handler, lane: Lane) -> Route {
    Route {
        method,
        path,
        handler,
        lane,
        doc: None,
    }
}

impl Route {
    pub const fn doc(mut self, doc: Doc) -> Route {
        self.doc = Some(doc);
        self
    }
}

/// Runs one operation for anybody (the public checkout): no scope, the operation finds its own.
pub type PublicHandler = fn(&Billing<Backend>, Request) -> Result<Reply>;

/// One row of a public table: a full path (under `/pay/`), no credentials.
pub struct PublicRoute {
    pub method: Method,
    pub path: &'static str,
    pub handler: PublicHandler,
    pub lane: Lane,
    /// The API's public endpoints are documented (accepting an invitation); pages are not.
    pub doc: Option<Doc>,
}

/// A public row: `public(Method::POST, "/pay/{short_id}/attempts", pay_attempt, lane::PAY)`.
pub const fn public(method: Method, path: &'static str, handler: PublicHandler, lane: Lane) -> PublicRoute {
    PublicRoute {
        method,
        path,
        handler,
        lane,
        doc: None,
    }
}

impl PublicRoute {
    pub const fn doc(mut self, doc: Doc) -> PublicRoute {
        self.doc = Some(doc);
        self
    }
}

/// What a row is to the resolver.
trait Row: Sync + 'static {
    fn method(&self) -> &Method;
    fn path(&self) -> &'static str;
}

impl Row for Route {
    fn method(&self) -> &Method {
        &self.method
    }
    fn path(&self) -> &'static str {
        self.path
    }
}

impl Row for PublicRoute {
    fn method(&self) -> &Method {
        &self.method
    }
    fn path(&self) -> &'static str {
        self.path
    }
}

pub enum Resolution<R: 'static = Route> {
    /// The row and the path parameters, by name.
    Found(&'static R, Vec<(&'static str, String)>),
    MethodNotAllowed,
    NotFound,
}

/// One segment of a row's path.
enum Segment {
    Literal(&'static str),
    Param(&'static str),
}

/// A row with its path split once (resolving runs on every request).
struct Compiled<R: 'static> {
    route: &'static R,
    segments: Vec<Segment>,
    literals: usize,
}

static COMPILED: std::sync::LazyLock<Vec<Compiled<Route>>> = std::sync::LazyLock::new(|| compile(TABLES));
static COMPILED_PUBLIC: std::sync::LazyLock<Vec<Compiled<PublicRoute>>> = std::sync::LazyLock::new(|| compile(PUBLIC_TABLES));

fn compile<R: Row>(tables: &'static [&'static [R]]) -> Vec<Compiled<R>> {
    tables
        .iter()
        .flat_map(|t| t.iter())
        .map(|route| {
            let segments: Vec<Segment> = route
                .path()
                .trim_start_matches('/')
                .split('/')
                .map(|p| match p.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                    Some(name) => Segment::Param(name),
                    None => Segment::Literal(p),
                })
                .collect();
            let literals = segments.iter().filter(|s| matches!(s, Segment::Literal(_))).count();
            Compiled { route, segments, literals }
        })
        .collect()
}

/// The most segments a path of the API has; longer paths are not looked at.
const MAX_SEGMENTS: usize = 8;

impl<R> Compiled<R> {
    fn matches(&self, segments: &[&str]) -> bool {
        self.segments.len() == segments.len()
            && self.segments.iter().zip(segments).all(|(p, s)| match p {
                Segment::Literal(l) => l == s,
                Segment::Param(_) => true,
            })
    }

    fn params(&self, segments: &[&str]) -> Vec<(&'static str, String)> {
        self.segments
            .iter()
            .zip(segments)
            .filter_map(|(p, s)| match p {
                Segment::Param(name) => Some((*name, (*s).to_string())),
                Segment::Literal(_) => None,
            })
            .collect()
    }
}

/// The row for `method` and `path`. Of the rows whose path matches, those with the most literal
/// segments win (`/payments/auto-charge-on-demand/{id}` over `/payments/{payment_id}/…`); a
/// matching path with no row for the method is a 405.
pub fn resolve(method: &Method, path: &str) -> Resolution {
    let Some(rest) = path.strip_prefix("/api/v2/") else {
        return Resolution::NotFound;
    };
    find(&COMPILED, method, rest)
}

/// The route template a request is logged and counted under: the matched row's path
/// (`/api/v2/consumers/{consumer_id}`), so that ids never reach a log line as a path; `other`
/// for what no row matches (the health probes are their own paths).
pub fn template(method: &Method, path: &str) -> std::borrow::Cow<'static, str> {
    if let Resolution::Found(r, _) = resolve(method, path) {
        return format!("/api/v2{}", r.path).into();
    }
    if let Resolution::Found(r, _) = resolve_public(method, path) {
        return r.path.into();
    }
    match path {
        "/healthz" | "/readyz" | "/metrics" | "/openapi.json" | "/docs" | "/mcp" => std::borrow::Cow::Owned(path.to_string()),
        _ => "other".into(),
    }
}

/// The public row for `method` and `path` (a full path: `/pay/…`, or `/embed.js`).
pub fn resolve_public(method: &Method, path: &str) -> Resolution<PublicRoute> {
    let Some(rest) = path.strip_prefix('/') else {
        return Resolution::NotFound;
    };
    find(&COMPILED_PUBLIC, method, rest)
}

fn find<R: Row>(compiled: &'static [Compiled<R>], method: &Method, rest: &str) -> Resolution<R> {
    let mut segments = [""; MAX_SEGMENTS];
    let mut n = 0;
    for s in rest.trim_end_matches('/').split('/') {
        if n == MAX_SEGMENTS {
            return Resolution::NotFound;
        }
        segments[n] = s;
        n += 1;
    }
    let segments = &segments[..n];
    let mut best: Option<usize> = None;
    let mut found: Option<&Compiled<R>> = None;
    for c in compiled.iter().filter(|c| c.matches(segments)) {
        if best.is_some_and(|b| b > c.literals) {
            continue;
        }
        if best != Some(c.literals) {
            best = Some(c.literals);
            found = None;
        }
        if c.route.method() == method && found.is_none() {
            found = Some(c);
        }
    }
    match (best, found) {
        (_, Some(c)) => Resolution::Found(c.route, c.params(segments)),
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
        for r in PUBLIC_TABLES.iter().flat_map(|t| t.iter()) {
            // `respond` looks at the public rows for these paths only.
            assert!(
                r.path.starts_with("/pay/") || r.path == "/embed.js" || crate::api::PUBLIC_API_PATHS.contains(&r.path),
                "public rows live under /pay/: {}",
                r.path
            );
            match resolve_public(&r.method, &r.path.replace(['{', '}'], "")) {
                Resolution::Found(hit, _) => assert!(std::ptr::eq(hit, r), "{} {} is shadowed", r.method, r.path),
                _ => panic!("{} {} does not resolve", r.method, r.path),
            }
        }
        assert!(matches!(resolve_public(&Method::GET, "/pay/x/attempts"), Resolution::MethodNotAllowed));
        assert!(matches!(resolve_public(&Method::POST, "/pay/x/other"), Resolution::NotFound));
    }
}
