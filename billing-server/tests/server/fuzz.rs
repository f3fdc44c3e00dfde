//! A bounded fuzz of the request edge (proptest; `PROPTEST_CASES` sets how many cases, 256 by
//! default): raw bytes, and requests built from the route tables with hostile paths, query
//! strings, headers and JSON bodies. The server must answer every one — never a 500, never a
//! dropped connection for a well-formed request — and keep serving.

use crate::common::TestServer;
use proptest::prelude::*;
use serde_json::{Map, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::LazyLock;
use std::time::Duration;

/// One server for every case (a server per case would spend the time budget on start-up).
static SERVER: LazyLock<TestServer> = LazyLock::new(TestServer::sqlite);

/// Sends `raw` on a new connection and reads until the server closes it; the status line's
/// code, or `None` when the server closed without answering.
fn exchange(raw: &[u8]) -> Option<u16> {
    let addr: std::net::SocketAddr = SERVER.base.trim_start_matches("http://").parse().unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(raw);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

fn route_paths() -> Vec<&'static str> {
    billing_server::api::TABLES.iter().flat_map(|t| t.iter()).map(|r| r.path).collect()
}

/// Bytes as they might appear in a URL: printable, percent escapes of any byte, and the
/// characters that split URLs.
fn url_part() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-zA-Z0-9_.~-]{1,8}",
        any::<u8>().prop_map(|b| format!("%{b:02X}")),
        Just("%".to_string()),
        Just("%G1".to_string()),
        Just("+".to_string()),
        Just("..".to_string()),
        Just("=".to_string()),
        Just("&".to_string()),
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        Just("ü€".to_string()),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|v| v.concat())
}

/// A path from the route tables with each parameter replaced by hostile text.
fn path() -> impl Strategy<Value = String> {
    let paths = route_paths();
    (prop::sample::select(paths), prop::collection::vec(url_part(), 3)).prop_map(|(template, fills)| {
        let mut out = String::from("/api/v2");
        let mut rest = template;
        let mut k = 0;
        while let Some(open) = rest.find('{') {
            let close = rest[open..].find('}').unwrap() + open;
            out.push_str(&rest[..open]);
            out.push_str(&fills[k % fills.len()]);
            k += 1;
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        out
    })
}

const FIELDS: &[&str] = &[
    "name",
    "email",
    "phone_number",
    "external_id",
    "external_metadata",
    "price",
    "prices",
    "currency",
    "type",
    "items",
    "product_id",
    "quantity",
    "coupons",
    "discount_value",
    "is_percentage",
    "organization_consumer_id",
    "payment_methods",
    "url",
    "event_types",
    "seconds",
    "to",
    "payment_method",
    "note",
    "description",
    "scheduled_on",
    "due_date",
    "role",
    "branches",
    "enabled",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("115.00"),
            Just("-1"),
            Just("1e400"),
            Just("0.001"),
            Just("NaN"),
            Just("SAR"),
            Just("all"),
            Just("\u{0}")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(FIELDS), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>())),
        ]
    })
}

fn request() -> impl Strategy<Value = Vec<u8>> {
    let method = prop::sample::select(vec!["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "BREW"]);
    let query =
        prop::collection::vec((url_part(), url_part()), 0..4).prop_map(|kv| kv.into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&"));
    let key = prop_oneof![Just(SERVER.key.clone()), "[ -~]{0,40}", Just(String::new())];
    let branch = prop::option::of(prop_oneof![Just(SERVER.branch_id()), "[ -~]{0,40}"]);
    let body = prop_oneof![
        json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        prop::collection::vec(any::<u8>(), 0..64),
    ];
    (method, path(), query, key, branch, body).prop_map(|(method, path, query, key, branch, body)| {
        let mut head = format!("{method} {path}?{query} HTTP/1.1\r\nhost: fuzz\r\nconnection: close\r\n");
        if !key.is_empty() {
            head.push_str(&format!("x-api-key: {key}\r\n"));
        }
        if let Some(b) = branch {
            head.push_str(&format!("x-branch-id: {b}\r\n"));
        }
        head.push_str(&format!("content-type: application/json\r\ncontent-length: {}\r\n\r\n", body.len()));
        let mut raw = head.into_bytes();
        raw.extend_from_slice(&body);
        raw
    })
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    /// Requests shaped like the API's, with hostile parts: always answered, never a 500.
    #[test]
    fn shaped_requests_never_get_a_500(raw in request()) {
        let status = exchange(&raw);
        prop_assert!(status.is_some(), "no answer to {}", String::from_utf8_lossy(&raw));
        prop_assert_ne!(status, Some(500), "{}", String::from_utf8_lossy(&raw));
    }

    /// Arbitrary bytes: whatever the server answers, it is not a 500, and it keeps serving.
    #[test]
    fn arbitrary_bytes_never_get_a_500(raw in prop::collection::vec(any::<u8>(), 0..512)) {
        prop_assert_ne!(exchange(&raw), Some(500));
        prop_assert_eq!(SERVER.get("/api/v2/me").status, 200);
    }

    /// The query-string decoder takes any text without panicking, and what it refuses is a
    /// 422 naming the parameter.
    #[test]
    fn the_query_decoder_takes_any_text(q in "\\PC{0,64}|[%&=+a-z0-9]{0,64}") {
        let params = billing_core::list::QueryParams::parse(&q);
        if let Err(e) = params.check() {
            prop_assert!(matches!(e, billing_core::Error::Validation(_)));
        }
    }
}
