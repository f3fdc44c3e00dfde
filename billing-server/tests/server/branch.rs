//! /api/v2/branch: visibility by role, create (same name returns the existing branch), rename,
//! get, delete, and what each role may not do.

use crate::common::fixtures::*;
use crate::common::TestServer;
use billing_core::org::Role;
use hyper::Method;
use serde_json::json;

fn branch_path(id: &str) -> String {
    format!("/api/v2/branch/{id}")
}

fn names(r: &crate::common::Resp) -> Vec<String> {
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap().to_string())
        .collect()
}

fn create_and_get(srv: &TestServer) {
    let b = ok(srv.post("/api/v2/branch", json!({"name": "  Jeddah  "})));
    for f in ["id", "name", "user_count", "created_at"] {
        assert!(b.get(f).is_some(), "BranchItem.{f}: {b}");
    }
    assert_eq!(b["name"], "Jeddah", "trimmed");
    assert_eq!(b["user_count"], 0);
    time_of(&b["created_at"]);
    let id = id_of(&b);
    assert_eq!(ok(srv.get(&branch_path(&id))), b);

    // The bootstrap branch counts its admin.
    let main = ok(srv.get(&branch_path(&srv.branch_id())));
    assert_eq!(main["name"], "Main");
    assert_eq!(main["user_count"], 1);

    assert_eq!(names(&srv.get("/api/v2/branch")), vec!["Main", "Jeddah"], "oldest first");

    let cases = [
        (json!({}), "missing"),
        (json!({"name": ""}), "string_too_short"),
        (json!({"name": 4}), "string_type"),
        (json!({"name": "x".repeat(256)}), "string_too_long"),
    ];
    for (body, kind) in cases {
        let r = srv.unchanged(|| srv.post("/api/v2/branch", body.clone()));
        assert_invalid(&r, json!(["body", "name"]), Some(kind));
    }
    assert_error(&srv.get(&branch_path(&random_id())), 404, "NOT_FOUND");
    assert_invalid(&srv.get("/api/v2/branch/main"), json!(["path", "branch_id"]), Some("uuid_parsing"));
}

fn create_with_an_existing_name_returns_that_branch(srv: &TestServer) {
    let first = ok(srv.post("/api/v2/branch", json!({"name": "Riyadh North"})));
    let again = srv.unchanged(|| ok(srv.post("/api/v2/branch", json!({"name": "Riyadh North"}))));
    assert_eq!(again, first);
    let again = srv.unchanged(|| ok(srv.post("/api/v2/branch", json!({"name": "riyadh north "}))));
    assert_eq!(again["id"], first["id"], "case and surrounding spaces do not make a new branch");
    let main = srv.unchanged(|| ok(srv.post("/api/v2/branch", json!({"name": "Main"}))));
    assert_eq!(main["id"], json!(srv.branch_id()));
    assert_eq!(names(&srv.get("/api/v2/branch")), vec!["Main", "Riyadh North"]);
}

fn list_visibility_by_role(srv: &TestServer) {
    let a = srv.branch_id();
    let b = branch(srv, "B");
    let c = branch(srv, "C");

    // Organization admins: the bootstrap key, another all-branches key, the admin's JWT.
    assert_eq!(names(&srv.get("/api/v2/branch")), vec!["Main", "B", "C"]);
    let all = all_branches_key(srv, Some(&c));
    assert_eq!(names(&srv.call_as(&all, None, Method::GET, "/api/v2/branch", None)), vec!["Main", "B", "C"]);
    assert_eq!(
        names(&call_bearer(srv, &srv.boot.token, None, Method::GET, "/api/v2/branch", None)),
        vec!["Main", "B", "C"]
    );

    // A branch admin (scoped key) sees only its branches, whatever x-branch-id says.
    let scoped = scoped_key(srv, &[&b, &c], &b);
    assert_eq!(names(&srv.call_as(&scoped, None, Method::GET, "/api/v2/branch", None)), vec!["B", "C"]);
    assert_eq!(names(&srv.call_as(&scoped, Some(&c), Method::GET, "/api/v2/branch", None)), vec!["B", "C"]);
    let r = srv.call_as(&scoped, Some(&a), Method::GET, "/api/v2/branch", None);
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");

    // Branch users and branch admins by JWT.
    let (_, user) = user_token(srv, "user@example.com", Role::BranchUser, &[&c]);
    assert_eq!(names(&call_bearer(srv, &user, None, Method::GET, "/api/v2/branch", None)), vec!["C"]);
    let (_, badmin) = user_token(srv, "badmin@example.com", Role::BranchAdmin, &[&a, &b]);
    assert_eq!(names(&call_bearer(srv, &badmin, None, Method::GET, "/api/v2/branch", None)), vec!["Main", "B"]);

    // Assigned users are counted.
    let c_item = ok(srv.get(&branch_path(&c)));
    assert_eq!(c_item["user_count"], 1);
}

fn get_of_an_inaccessible_branch_is_forbidden(srv: &TestServer) {
    let a = srv.branch_id();
    let b = branch(srv, "B");
    let scoped = scoped_key(srv, &[&a], &a);
    let r = srv.call_as(&scoped, None, Method::GET, &branch_path(&b), None);
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    assert_eq!(ok(srv.call_as(&scoped, None, Method::GET, &branch_path(&a), None))["name"], "Main");
    let (_, user) = user_token(srv, "u@example.com", Role::BranchUser, &[&b]);
    let r = call_bearer(srv, &user, None, Method::GET, &branch_path(&a), None);
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    assert_eq!(ok(call_bearer(srv, &user, None, Method::GET, &branch_path(&b), None))["name"], "B");
}

fn rename(srv: &TestServer) {
    let b = branch(srv, "Dammam");
    let u = ok(srv.put(&branch_path(&b), json!({"name": "Khobar"})));
    assert_eq!(u["name"], "Khobar");
    assert_eq!(u["id"], json!(b));
    assert_eq!(ok(srv.get(&branch_path(&b)))["name"], "Khobar");
    // Renaming to its own name in another case is fine.
    let u = ok(srv.put(&branch_path(&b), json!({"name": "KHOBAR"})));
    assert_eq!(u["name"], "KHOBAR");

    // Onto another branch's name: refused.
    for name in ["Main", "main", " MAIN "] {
        let r = srv.unchanged(|| srv.put(&branch_path(&b), json!({ "name": name })));
        assert_error(&r, 422, "RESOURCE_ALREADY_EXISTS");
    }
    let r = srv.unchanged(|| srv.put(&branch_path(&b), json!({"name": ""})));
    assert_invalid(&r, json!(["body", "name"]), Some("string_too_short"));
    let r = srv.unchanged(|| srv.put(&branch_path(&b), json!({})));
    assert_invalid(&r, json!(["body", "name"]), Some("missing"));
    let r = srv.unchanged(|| srv.put(&branch_path(&random_id()), json!({"name": "Nowhere"})));
    assert_error(&r, 404, "NOT_FOUND");

    // The old name is free for a new branch.
    let d = branch(srv, "Dammam");
    assert_ne!(d, b);
}

fn branch_roles_may_not_manage_branches(srv: &TestServer) {
    let a = srv.branch_id();
    let b = branch(srv, "B");

    // Branch user: no create, no rename, no delete.
    let (_, user) = user_token(srv, "user@example.com", Role::BranchUser, &[&a]);
    let r = srv.unchanged(|| call_bearer(srv, &user, None, Method::POST, "/api/v2/branch", Some(json!({"name": "New"}))));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let r = srv.unchanged(|| call_bearer(srv, &user, None, Method::PUT, &branch_path(&a), Some(json!({"name": "Renamed"}))));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let r = srv.unchanged(|| call_bearer(srv, &user, None, Method::DELETE, &branch_path(&b), None));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    // Even an existing name does not hand a branch user the branch.
    let r = srv.unchanged(|| call_bearer(srv, &user, None, Method::POST, "/api/v2/branch", Some(json!({"name": "B"}))));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");

    // Branch admin (scoped key): may rename its own branch only; no create, no delete.
    let scoped = scoped_key(srv, &[&a], &a);
    let r = srv.unchanged(|| srv.call_as(&scoped, None, Method::POST, "/api/v2/branch", Some(json!({"name": "New"}))));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let r = srv.unchanged(|| srv.call_as(&scoped, None, Method::PUT, &branch_path(&b), Some(json!({"name": "Mine now"}))));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let r = srv.unchanged(|| srv.call_as(&scoped, None, Method::DELETE, &branch_path(&b), None));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let u = ok(srv.call_as(&scoped, None, Method::PUT, &branch_path(&a), Some(json!({"name": "Main HQ"}))));
    assert_eq!(u["name"], "Main HQ");
}

fn delete_rules(srv: &TestServer) {
    let main = srv.branch_id();
    // The only branch (also the admin key's default).
    let r = srv.unchanged(|| srv.delete(&branch_path(&main)));
    assert_error(&r, 400, "BRANCH_IN_USE");

    let b = branch(srv, "B");
    let c = branch(srv, "C");
    // Still the bootstrap key's default branch.
    let r = srv.unchanged(|| srv.delete(&branch_path(&main)));
    assert_error(&r, 400, "BRANCH_IN_USE");
    // The default branch of another key.
    let _key = scoped_key(srv, &[&b], &b);
    let r = srv.unchanged(|| srv.delete(&branch_path(&b)));
    assert_error(&r, 400, "BRANCH_IN_USE");

    // A branch nobody defaults to can go.
    let consumer_in_c = id_of(&ok(in_branch(srv, &c, Method::POST, "/api/v2/consumers", Some(json!({"name": "In C"})))));
    let r = srv.delete(&branch_path(&c));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({}));
    assert_error(&srv.get(&branch_path(&c)), 404, "NOT_FOUND");
    assert_eq!(names(&srv.get("/api/v2/branch")), vec!["Main", "B"]);
    let r = srv.unchanged(|| srv.delete(&branch_path(&c)));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.put(&branch_path(&c), json!({"name": "Back"})));
    assert_error(&r, 404, "NOT_FOUND");
    // Nobody acts in a deleted branch any more; organization admins may still read its records.
    let r = srv.unchanged(|| in_branch(srv, &c, Method::GET, &format!("/api/v2/consumers/{consumer_in_c}"), None));
    assert_eq!(ok(r)["name"], "In C");
    let r = srv.unchanged(|| in_branch(srv, &c, Method::POST, "/api/v2/consumers", Some(json!({"name": "late"}))));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    // Its name is free again, for a new branch.
    let c2 = branch(srv, "C");
    assert_ne!(c2, c);

    assert_error(&srv.delete(&branch_path(&random_id())), 404, "NOT_FOUND");
    assert_invalid(&srv.delete("/api/v2/branch/abc"), json!(["path", "branch_id"]), None);
}

fn concurrent_creates_of_one_name_make_one_branch(srv: &TestServer) {
    let requests = (0..8)
        .map(|i| {
            (
                Method::POST,
                "/api/v2/branch".to_string(),
                Some(json!({"name": if i % 2 == 0 { "Tabuk" } else { "TABUK" }})),
            )
        })
        .collect();
    let results = concurrently(srv, requests);
    assert!(results.iter().all(|(s, _)| *s == 200), "{results:?}");
    let first = &results[0].1["id"];
    assert!(results.iter().all(|(_, b)| &b["id"] == first), "all return the same branch: {results:?}");
    let listed: Vec<String> = names(&srv.get("/api/v2/branch")).iter().map(|n| n.to_lowercase()).collect();
    assert_eq!(listed, vec!["main", "tabuk"]);
}

/// A branch holding an open invoice is not deleted (400 BRANCH_IN_USE naming it, nothing
/// changed); once the invoice is voided it is, and the invoice stays readable by the
/// organization admin naming the retired branch, who can no longer write in it.
fn deleting_a_branch_with_open_money_is_refused(srv: &TestServer) {
    let b = id_of(&ok(srv.post("/api/v2/branch", json!({"name": "Kiosk"}))));
    let in_b = |method: Method, path: &str, body: Option<serde_json::Value>| srv.call_as(&srv.key, Some(&b), method, path, body);
    let c = id_of(&ok(in_b(Method::POST, "/api/v2/consumers", Some(json!({"name": "Payer"})))));
    let p = id_of(&ok(in_b(
        Method::POST,
        "/api/v2/products",
        Some(json!({"name": "Thing", "type": "ONE_OFF", "price": "10.00"})),
    )));
    let body = crate::common::invoice_fixtures::invoice_body(&c, &[(&p, 1)], &[]);
    let inv = id_of(&ok(in_b(Method::POST, "/api/v2/invoices", Some(body))));
    let r = srv.unchanged(|| srv.delete(&branch_path(&b)));
    assert_error(&r, 400, "BRANCH_IN_USE");
    assert!(r.text.contains("1 open invoice"), "{}", r.text);

    ok(in_b(Method::POST, &format!("/api/v2/invoices/{inv}/void"), None));
    ok(srv.delete(&branch_path(&b)));
    let read = ok(in_b(Method::GET, &format!("/api/v2/invoices/{inv}"), None));
    assert_eq!(read["status"], "CANCELED");
    assert_error(
        &in_b(Method::POST, "/api/v2/consumers", Some(json!({"name": "Late"}))),
        403,
        "PERMISSION_FORBIDDEN",
    );
}

http_tests!(
    deleting_a_branch_with_open_money_is_refused,
    create_and_get,
    create_with_an_existing_name_returns_that_branch,
    list_visibility_by_role,
    get_of_an_inaccessible_branch_is_forbidden,
    rename,
    branch_roles_may_not_manage_branches,
    delete_rules,
    concurrent_creates_of_one_name_make_one_branch,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(
    create_and_get,
    delete_rules,
    concurrent_creates_of_one_name_make_one_branch,
    deleting_a_branch_with_open_money_is_refused,
);
