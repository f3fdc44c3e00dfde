//! Bytes a store cannot take (NUL, other control characters) in every place a request carries
//! them: query parameters of every route, path parameters, and the credentials. Each is a clear
//! 4xx, never a 500, on both stores, and changes nothing. The routes come from the server's own
//! route tables, so a new route is covered without being listed here.

use crate::common::TestServer;
use base64::Engine;
use hyper::Method;
use serde_json::json;

/// Query parameters the lists read, and one they do not.
const PARAMS: &[&str] = &[
    "search_term",
    "external_id",
    "external_metadata.plan",
    "statuses",
    "payment_statuses",
    "currencies",
    "sort_field",
    "sort_direction",
    "status",
    "event_type",
    "page",
    "limit",
    "unknown",
];

/// Every route, its path parameters filled with `fill`.
fn routes(fill: &str) -> Vec<(Method, String)> {
    billing_server::api::TABLES
        .iter()
        .flat_map(|t| t.iter())
        .map(|r| {
            let mut path = String::new();
            let mut rest = r.path;
            while let Some(open) = rest.find('{') {
                let close = rest[open..].find('}').unwrap() + open;
                path.push_str(&rest[..open]);
                path.push_str(fill);
                rest = &rest[close + 1..];
            }
            path.push_str(rest);
            (r.method.clone(), format!("/api/v2{path}"))
        })
        .collect()
}

fn nul_in_any_query_parameter_is_a_422(srv: &TestServer) {
    let id = uuid::Uuid::now_v7().to_string();
    srv.unchanged(|| {
        for (method, path) in routes(&id) {
            let mut cases: Vec<(String, &str)> = PARAMS.iter().flat_map(|p| ["a%00b", "%01", "x%7F"].map(|v| (format!("{p}={v}"), *p))).collect();
            // In a parameter's name, too.
            cases.push(("external_metadata.a%00b=1".into(), "external_metadata.a\u{0}b"));
            for (query, name) in cases {
                let r = srv.call(method.clone(), &format!("{path}?{query}"), Some(json!({})));
                assert_eq!(r.status, 422, "{method} {path}?{query}: {}", r.text);
                assert!(r.locs().contains(&json!(["query", name])), "{method} {path}?{query}: {}", r.text);
            }
        }
    });
}

fn control_characters_in_path_parameters_are_refused(srv: &TestServer) {
    srv.unchanged(|| {
        for fill in ["a%00b", "%0A", "%ZZ", "..%2F..", &"9".repeat(300)] {
            for (method, path) in routes(fill) {
                if !path.contains(fill) {
                    continue;
                }
                let r = srv.call(method.clone(), &path, Some(json!({})));
                assert!(matches!(r.status, 404 | 422), "{method} {path}: {} {}", r.status, r.text);
            }
        }
    });
}

fn credentials_with_control_characters_are_a_401(srv: &TestServer) {
    let b64 = |s: &[u8]| base64::engine::general_purpose::STANDARD.encode(s);
    srv.unchanged(|| {
        for key in [b64(b"ke\0y:secret"), b64(b"key:sec\0ret"), b64(b"\x01:\x02"), b64(b"key\nx:secret")] {
            let r = srv.raw(Method::GET, "/api/v2/consumers", &[("x-api-key", &key)], None);
            assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"), "{key}: {}", r.text);
            let body = Some(serde_json::to_vec(&json!({"name": "N"})).unwrap());
            let r = srv.raw(
                Method::POST,
                "/api/v2/consumers",
                &[("x-api-key", &key), ("content-type", "application/json")],
                body,
            );
            assert_eq!(r.status, 401, "{key}: {}", r.text);
        }
        let r = srv.raw(
            Method::GET,
            "/api/v2/consumers",
            &[("authorization", &format!("Bearer {}", b64(b"a\0b")))],
            None,
        );
        assert_eq!(r.status, 401, "{}", r.text);
    });
}

http_tests!(
    nul_in_any_query_parameter_is_a_422,
    control_characters_in_path_parameters_are_refused,
    credentials_with_control_characters_are_a_401,
);

// Every value reaches the store differently on PostgreSQL (which refuses NUL in text).
postgres_smoke!(
    nul_in_any_query_parameter_is_a_422,
    control_characters_in_path_parameters_are_refused,
    credentials_with_control_characters_are_a_401,
);
