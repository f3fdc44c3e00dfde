//! Shared request bodies and setup steps for the endpoint tests.
#![allow(dead_code)]

use super::{Resp, TestServer};
use billing_core::auth::NewApiKey;
use billing_core::fields::Email;
use billing_core::ids::BranchId;
use billing_core::org::Role;
use billing_core::store::Store;
use hyper::Method;
use serde_json::{json, Value};

/// Asserts a 200 and returns the body.
#[track_caller]
pub fn ok(r: Resp) -> Value {
    assert_eq!(r.status, 200, "expected 200, got {}: {}", r.status, r.text);
    r.body
}

/// Asserts a handled error (`{"error": {code, ...}}`) with this status and code.
#[track_caller]
pub fn assert_error(r: &Resp, status: u16, code: &str) {
    assert_eq!(r.status, status, "status of {}", r.text);
    assert_eq!(r.code(), code, "code of {}", r.text);
    assert!(r.body["error"]["message"].is_string(), "an error envelope carries a message: {}", r.text);
    assert!(r.body.get("detail").is_none(), "{}", r.text);
}

/// Asserts a 422 validation error whose `detail` has an entry at `loc`, optionally of `kind`.
#[track_caller]
pub fn assert_invalid(r: &Resp, loc: Value, kind: Option<&str>) {
    assert_eq!(r.status, 422, "expected 422 at {loc}, got {}: {}", r.status, r.text);
    assert!(r.body.get("error").is_none(), "a validation error has no error envelope: {}", r.text);
    let detail = r.body["detail"].as_array().unwrap_or_else(|| panic!("no detail list: {}", r.text));
    let hit = detail
        .iter()
        .find(|d| d["loc"] == loc)
        .unwrap_or_else(|| panic!("no detail at {loc}: {}", r.text));
    if let Some(k) = kind {
        assert_eq!(hit["type"], k, "type at {loc}: {}", r.text);
    }
    assert!(hit["msg"].as_str().is_some_and(|m| !m.is_empty()), "msg at {loc}: {}", r.text);
}

/// Percent-encodes a query-string value (`+` would otherwise read as a space).
pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A fresh random UUID string (an id that exists nowhere).
pub fn random_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A valid Saudi mobile number in E.164, distinct for each `n` below 10 000 000.
pub fn phone(n: u32) -> String {
    format!("+96650{n:07}")
}

/// The `id` of a response body as a string.
#[track_caller]
pub fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id in {v}")).to_string()
}

/// The ids of a list response's `data`, in order.
#[track_caller]
pub fn ids(r: &Resp) -> Vec<String> {
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data list: {}", r.text))
        .iter()
        .map(id_of)
        .collect()
}

// ----- requests under another credential -----

/// A request with `Authorization: Bearer <token>` and an optional `x-branch-id`.
pub fn call_bearer(srv: &TestServer, token: &str, branch: Option<&str>, method: Method, path: &str, body: Option<Value>) -> Resp {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("authorization", auth.as_str()), ("content-type", "application/json")];
    if let Some(b) = branch {
        headers.push(("x-branch-id", b));
    }
    srv.raw(method, path, &headers, body.map(|b| serde_json::to_vec(&b).unwrap()))
}

/// A request as the admin key acting in `branch` (`x-branch-id`).
pub fn in_branch(srv: &TestServer, branch: &str, method: Method, path: &str, body: Option<Value>) -> Resp {
    srv.call_as(&srv.key, Some(branch), method, path, body)
}

// ----- credentials -----

fn branch_ids(ids: &[&str]) -> Vec<BranchId> {
    ids.iter().map(|b| b.parse().expect("branch id")).collect()
}

/// An API key limited to `branches` (a branch admin), defaulting to `default`; returns its
/// `x-api-key` value.
pub fn scoped_key(srv: &TestServer, branches: &[&str], default: &str) -> String {
    let (_, pair) = srv
        .app
        .billing
        .api_keys()
        .create_for(
            srv.boot.org.id,
            &NewApiKey {
                name: "scoped".into(),
                branch_ids: branch_ids(branches),
                default_branch_id: Some(default.parse().unwrap()),
                is_all_branches: false,
            },
        )
        .expect("create scoped key");
    pair.header_value()
}

/// An all-branches API key (organization admin) with an optional default branch.
pub fn all_branches_key(srv: &TestServer, default: Option<&str>) -> String {
    let (_, pair) = srv
        .app
        .billing
        .api_keys()
        .create_for(
            srv.boot.org.id,
            &NewApiKey {
                name: "all".into(),
                branch_ids: vec![],
                default_branch_id: default.map(|d| d.parse().unwrap()),
                is_all_branches: true,
            },
        )
        .expect("create all-branches key");
    pair.header_value()
}

/// A user with `role` on `branches`, and a bearer token for it (valid one hour).
pub fn user_token(srv: &TestServer, email: &str, role: Role, branches: &[&str]) -> (billing_core::org::User, String) {
    let user = srv
        .app
        .billing
        .org()
        .create_user(srv.boot.org.id, Email::parse(email).unwrap(), role, branch_ids(branches))
        .expect("create user");
    let token = srv.app.billing.auth().issue_token(&user, chrono::Duration::hours(1));
    (user, token)
}

// ----- resources -----

/// Creates a branch (as the organization admin) and returns its id.
pub fn branch(srv: &TestServer, name: &str) -> String {
    id_of(&ok(srv.post("/api/v2/branch", json!({ "name": name }))))
}

/// A consumer body with every field set.
pub fn full_consumer(name: &str, n: u32) -> Value {
    json!({
        "name": name,
        "phone_number": phone(n),
        "email": format!("consumer{n}@example.com"),
        "external_id": format!("ext-{n}"),
        "iban": format!("SA03800000006080101675{:02}", n % 100),
        "alias": format!("alias {n}"),
        "comment": "a comment",
        "preferred_language": "EN",
        "communication_methods": ["EMAIL", "SMS"],
        "consumer_type": "BUSINESS",
        "address": {"address_line_1": "1 King Fahd Rd", "address_line_2": "Floor 2", "city": "Riyadh", "postal_code": "12211", "country": "SA"},
        "vat_number": "300000000000003",
        "commercial_registration": "1010101010",
        "external_metadata": {"plan": "gold", "n": n.to_string()},
    })
}

/// Creates a consumer in the admin key's default branch from `body`; returns the response.
pub fn consumer(srv: &TestServer, body: Value) -> Value {
    ok(srv.post("/api/v2/consumers", body))
}

/// Creates a consumer with a name, phone and e-mail; returns its id.
pub fn simple_consumer(srv: &TestServer, name: &str, n: u32) -> String {
    id_of(&consumer(
        srv,
        json!({"name": name, "phone_number": phone(n), "email": format!("c{n}@example.com")}),
    ))
}

/// Creates a ONE_OFF product with a SAR price (VAT inclusive); returns the response.
pub fn one_off_product(srv: &TestServer, name: &str, price: &str) -> Value {
    ok(srv.post("/api/v2/products", json!({"name": name, "type": "ONE_OFF", "price": price})))
}

/// Creates a monthly RECURRING product with a SAR price; returns the response.
pub fn recurring_product(srv: &TestServer, name: &str, price: &str) -> Value {
    ok(srv.post(
        "/api/v2/products",
        json!({"name": name, "type": "RECURRING", "recurring_interval": "MONTH", "price": price}),
    ))
}

/// Creates a percentage coupon; returns the response.
pub fn percent_coupon(srv: &TestServer, name: &str, value: &str) -> Value {
    ok(srv.post("/api/v2/coupons", json!({"name": name, "discount_value": value, "is_percentage": true})))
}

/// Creates a fixed-amount coupon; returns the response.
pub fn fixed_coupon(srv: &TestServer, name: &str, value: &str, currency: &str) -> Value {
    ok(srv.post(
        "/api/v2/coupons",
        json!({"name": name, "discount_value": value, "is_percentage": false, "currency": currency}),
    ))
}

/// Marks a product as used by a finalised invoice, straight in the store (there are no
/// invoices in the foundation).
pub fn freeze_product(srv: &TestServer, product_id: &str) {
    let branch: BranchId = srv.boot.branch.id;
    let id = product_id.parse().unwrap();
    srv.app
        .billing
        .engine()
        .store
        .write(|tx| {
            let mut p = tx.product(branch, id)?.expect("product exists");
            p.used_in_finalized_invoice = true;
            tx.update_product(&p, billing_core::money::Currency::SAR)?;
            Ok(())
        })
        .unwrap();
}

/// Marks a coupon as used by a finalised invoice, straight in the store.
pub fn freeze_coupon(srv: &TestServer, coupon_id: &str) {
    let branch: BranchId = srv.boot.branch.id;
    let id = coupon_id.parse().unwrap();
    srv.app
        .billing
        .engine()
        .store
        .write(|tx| {
            let mut c = tx.coupon(branch, id)?.expect("coupon exists");
            c.used_in_finalized_invoice = true;
            tx.update_coupon(&c)?;
            Ok(())
        })
        .unwrap();
}

/// Parses a response date-time.
#[track_caller]
pub fn time_of(v: &Value) -> chrono::DateTime<chrono::Utc> {
    let s = v.as_str().unwrap_or_else(|| panic!("not a date-time: {v}"));
    // RFC 3339 in UTC with exactly six fractional digits and `Z`: 2026-11-21T10:15:30.123456Z.
    let b = s.as_bytes();
    let shape = b.len() == 27
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            26 => *c == b'Z',
            _ => c.is_ascii_digit(),
        });
    assert!(shape, "date-times are RFC 3339 UTC with microseconds and Z: {s}");
    chrono::DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .with_timezone(&chrono::Utc)
}

/// Sends all `requests` at once (as the admin key) over separate connections and returns each
/// `(status, body)` in the order given.
pub fn concurrently(srv: &TestServer, requests: Vec<(Method, String, Option<Value>)>) -> Vec<(u16, Value)> {
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap();
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    rt.block_on(async {
        let start = std::sync::Arc::new(tokio::sync::Barrier::new(requests.len()));
        let mut handles = Vec::new();
        for (method, path, body) in requests {
            let req = hyper::Request::builder()
                .method(method)
                .uri(format!("{}{}", srv.base, path))
                .header("x-api-key", &srv.key)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body.map(|b| serde_json::to_vec(&b).unwrap()).unwrap_or_default())))
                .unwrap();
            let (client, start) = (client.clone(), start.clone());
            handles.push(tokio::spawn(async move {
                start.wait().await;
                let resp = client.request(req).await.expect("request sent");
                let status = resp.status().as_u16();
                let bytes = resp.into_body().collect().await.unwrap().to_bytes();
                (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
            }));
        }
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    })
}
