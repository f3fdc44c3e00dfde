//! Branch isolation: a credential scoped to branch A, with or without `x-branch-id: B`, never
//! sees or changes branch B's consumers, products or coupons. Asking for B is a 403; acting in A
//! on B's ids is a 404; B's data is unchanged either way.

use crate::common::fixtures::*;
use crate::common::{Resp, TestServer};
use billing_core::org::Role;
use hyper::Method;
use serde_json::{json, Value};

/// Branch B with one consumer, one product (with a USD price) and one coupon, made by the admin.
struct B {
    id: String,
    consumer: String,
    product: String,
    price: String,
    coupon: String,
}

fn setup_b(srv: &TestServer) -> B {
    let id = branch(srv, "Branch B");
    let c = ok(in_branch(
        srv,
        &id,
        Method::POST,
        "/api/v2/consumers",
        Some(json!({"name": "B consumer", "phone_number": phone(1), "email": "b@example.com", "external_id": "b-ext", "external_metadata": {"k": "v"}})),
    ));
    let p = ok(in_branch(
        srv,
        &id,
        Method::POST,
        "/api/v2/products",
        Some(json!({"name": "B product", "type": "ONE_OFF", "price": 100, "prices": [{"currency": "USD", "amount": 30}]})),
    ));
    let cp = ok(in_branch(
        srv,
        &id,
        Method::POST,
        "/api/v2/coupons",
        Some(json!({"name": "B coupon", "discount_value": 10, "is_percentage": true})),
    ));
    let usd = p["prices"].as_array().unwrap().iter().find(|x| x["currency"] == "USD").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // They live in B, not in the admin key's default branch A.
    assert_eq!(c["branch"]["id"], json!(id));
    B {
        id,
        consumer: id_of(&c),
        product: id_of(&p),
        price: usd,
        coupon: id_of(&cp),
    }
}

/// Every request on B's resources, as (method, path, body).
fn requests_on(b: &B) -> Vec<(Method, String, Option<Value>)> {
    vec![
        (Method::GET, "/api/v2/consumers".into(), None),
        (Method::GET, "/api/v2/consumers?external_id=b-ext".into(), None),
        (Method::GET, format!("/api/v2/consumers/{}", b.consumer), None),
        (Method::PUT, format!("/api/v2/consumers/{}", b.consumer), Some(json!({"name": "hijacked"}))),
        (Method::DELETE, format!("/api/v2/consumers/{}", b.consumer), None),
        (Method::GET, "/api/v2/products".into(), None),
        (Method::GET, format!("/api/v2/products/{}", b.product), None),
        (
            Method::PUT,
            format!("/api/v2/products/{}", b.product),
            Some(json!({"name": "hijacked", "price": 1})),
        ),
        (Method::DELETE, format!("/api/v2/products/{}", b.product), None),
        (
            Method::POST,
            format!("/api/v2/products/{}/prices", b.product),
            Some(json!({"currency": "EUR", "amount": 1})),
        ),
        (
            Method::PUT,
            format!("/api/v2/products/{}/prices/{}", b.product, b.price),
            Some(json!({"amount": 1})),
        ),
        (Method::DELETE, format!("/api/v2/products/{}/prices/{}", b.product, b.price), None),
        (Method::GET, "/api/v2/coupons".into(), None),
        (Method::GET, format!("/api/v2/coupons/{}", b.coupon), None),
        (Method::PUT, format!("/api/v2/coupons/{}", b.coupon), Some(json!({"name": "hijacked"}))),
        (Method::DELETE, format!("/api/v2/coupons/{}", b.coupon), None),
        (Method::POST, "/api/v2/consumers".into(), Some(json!({"name": "planted"}))),
        (Method::POST, "/api/v2/products".into(), Some(json!({"name": "planted", "type": "ONE_OFF"}))),
        (
            Method::POST,
            "/api/v2/coupons".into(),
            Some(json!({"name": "planted", "discount_value": 1, "is_percentage": true})),
        ),
    ]
}

/// B's resources as the admin sees them in B.
fn b_view(srv: &TestServer, b: &B) -> Vec<Value> {
    vec![
        ok(in_branch(srv, &b.id, Method::GET, &format!("/api/v2/consumers/{}", b.consumer), None)),
        ok(in_branch(srv, &b.id, Method::GET, &format!("/api/v2/products/{}", b.product), None)),
        ok(in_branch(srv, &b.id, Method::GET, &format!("/api/v2/coupons/{}", b.coupon), None)),
        ok(in_branch(srv, &b.id, Method::GET, "/api/v2/consumers", None))["data"].clone(),
        ok(in_branch(srv, &b.id, Method::GET, "/api/v2/products", None))["data"].clone(),
        ok(in_branch(srv, &b.id, Method::GET, "/api/v2/coupons", None))["data"].clone(),
    ]
}

/// Runs every request on B with `send`; each must be refused with `status`/`code` and write
/// nothing, except lists and creations (which act in A) when `acting_in_a`.
fn check_isolation(srv: &TestServer, b: &B, acting_in_a: bool, send: impl Fn(Method, &str, Option<Value>) -> Resp) {
    let before = b_view(srv, b);
    for (method, path, body) in requests_on(b) {
        let is_list = method == Method::GET && !path.contains(&b.consumer) && !path.contains(&b.product) && !path.contains(&b.coupon);
        let is_create = method == Method::POST && !path.contains("/prices");
        if acting_in_a && (is_list || is_create) {
            // Acting in A: lists show A only, creations land in A; B is untouched.
            let r = send(method.clone(), &path, body.clone());
            assert_eq!(r.status, 200, "{method} {path}: {}", r.text);
            if is_list {
                let ids = ids(&r);
                for theirs in [&b.consumer, &b.product, &b.coupon] {
                    assert!(!ids.contains(theirs), "{method} {path} lists B's {theirs}");
                }
            } else {
                assert_ne!(r.body["branch"]["id"], json!(b.id), "{path} created in B");
            }
            continue;
        }
        let r = srv.unchanged(|| send(method.clone(), &path, body.clone()));
        if acting_in_a {
            assert_error(&r, 404, "NOT_FOUND");
        } else {
            assert_error(&r, 403, "PERMISSION_FORBIDDEN");
        }
    }
    assert_eq!(b_view(srv, b), before, "B's data is unchanged");
}

fn scoped_key_naming_b_is_forbidden(srv: &TestServer) {
    let b = setup_b(srv);
    let a = srv.branch_id();
    let key = scoped_key(srv, &[&a], &a);
    check_isolation(srv, &b, false, |m, p, body| srv.call_as(&key, Some(&b.id), m, p, body));
}

fn scoped_key_in_its_own_branch_does_not_find_b(srv: &TestServer) {
    let b = setup_b(srv);
    let a = srv.branch_id();
    let key = scoped_key(srv, &[&a], &a);
    // Without x-branch-id (the default branch A), and naming A explicitly.
    check_isolation(srv, &b, true, |m, p, body| srv.call_as(&key, None, m, p, body));
    check_isolation(srv, &b, true, |m, p, body| srv.call_as(&key, Some(&a), m, p, body));
}

fn branch_user_jwt_is_isolated_too(srv: &TestServer) {
    let b = setup_b(srv);
    let a = srv.branch_id();
    let (_, token) = user_token(srv, "teller@example.com", Role::BranchUser, &[&a]);
    check_isolation(srv, &b, false, |m, p, body| call_bearer(srv, &token, Some(&b.id), m, p, body));
    check_isolation(srv, &b, true, |m, p, body| call_bearer(srv, &token, None, m, p, body));
}

fn admin_acting_in_a_does_not_reach_b(srv: &TestServer) {
    // Even an all-branches key acts in one branch per request.
    let b = setup_b(srv);
    check_isolation(srv, &b, true, |m, p, body| srv.call(m, p, body));
    let a = srv.branch_id();
    check_isolation(srv, &b, true, |m, p, body| in_branch(srv, &a, m, p, body));
}

fn a_key_with_both_branches_reaches_b_only_when_asked(srv: &TestServer) {
    let b = setup_b(srv);
    let a = srv.branch_id();
    let key = scoped_key(srv, &[&a, &b.id], &a);
    assert_error(
        &srv.call_as(&key, None, Method::GET, &format!("/api/v2/consumers/{}", b.consumer), None),
        404,
        "NOT_FOUND",
    );
    let c = ok(srv.call_as(&key, Some(&b.id), Method::GET, &format!("/api/v2/consumers/{}", b.consumer), None));
    assert_eq!(c["name"], "B consumer");
    assert_eq!(c["branch"], json!({"id": b.id, "name": "Branch B"}));
}

fn unknown_or_malformed_branch_header(srv: &TestServer) {
    let b = setup_b(srv);
    let a = srv.branch_id();
    let key = scoped_key(srv, &[&a], &a);
    let r = srv.call_as(&srv.key, Some(&random_id()), Method::GET, "/api/v2/consumers", None);
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let r = srv.unchanged(|| srv.call_as(&srv.key, Some(&random_id()), Method::POST, "/api/v2/consumers", Some(json!({"name": "x"}))));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let r = srv.unchanged(|| srv.call_as(&key, Some("not-a-uuid"), Method::POST, "/api/v2/consumers", Some(json!({"name": "x"}))));
    assert_invalid(&r, json!(["header", "x-branch-id"]), Some("uuid_parsing"));
    // Another organization's branch is not reachable either.
    let other = srv
        .app
        .billing
        .org()
        .bootstrap(&billing_core::org::BootstrapRequest {
            org_name: "Other".into(),
            admin_email: billing_core::fields::Email::parse("o@example.com").unwrap(),
            sandbox: true,
        })
        .unwrap();
    let other_key = other.api_key.header_value();
    let r = srv.unchanged(|| srv.call_as(&other_key, Some(&b.id), Method::GET, &format!("/api/v2/consumers/{}", b.consumer), None));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let r = srv.unchanged(|| srv.call_as(&other_key, None, Method::DELETE, &format!("/api/v2/consumers/{}", b.consumer), None));
    assert_error(&r, 404, "NOT_FOUND");
}

fn uniqueness_is_per_branch(srv: &TestServer) {
    let b = setup_b(srv);
    // B's consumer has phone(1) and b@example.com; A may have the same.
    let c = consumer(srv, json!({"name": "A twin", "phone_number": phone(1), "email": "B@example.com"}));
    assert_eq!(c["branch"]["id"], json!(srv.branch_id()));
    // But not twice in B.
    let r = srv.unchanged(|| {
        in_branch(
            srv,
            &b.id,
            Method::POST,
            "/api/v2/consumers",
            Some(json!({"name": "B twin", "phone_number": phone(1)})),
        )
    });
    assert_error(&r, 422, "DUPLICATE_CONSUMER");
}

http_tests!(
    scoped_key_naming_b_is_forbidden,
    scoped_key_in_its_own_branch_does_not_find_b,
    branch_user_jwt_is_isolated_too,
    admin_acting_in_a_does_not_reach_b,
    a_key_with_both_branches_reaches_b_only_when_asked,
    unknown_or_malformed_branch_header,
    uniqueness_is_per_branch,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(admin_acting_in_a_does_not_reach_b, uniqueness_is_per_branch,);
