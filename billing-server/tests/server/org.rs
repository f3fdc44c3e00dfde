//! GET /api/v2/me and POST /api/v2/organization/invite: who may invite whom to which branch,
//! the invitation's shape and expiry, and the e-mail notification it records.

use crate::common::fixtures::*;
use crate::common::TestServer;
use billing_core::fields::Language;
use billing_core::notification::Channel;
use billing_core::org::Role;
use billing_core::store::Store;
use hyper::Method;
use serde_json::{json, Value};

fn notifications(srv: &TestServer) -> Vec<billing_core::notification::Notification> {
    srv.app.billing.engine().store.read(|tx| Ok(tx.list_notifications(srv.boot.org.id)?)).unwrap()
}

fn invite_as(srv: &TestServer, key: &str, language: Option<&str>, body: Value) -> crate::common::Resp {
    let mut headers = vec![("x-api-key", key), ("content-type", "application/json")];
    if let Some(l) = language {
        headers.push(("language", l));
    }
    srv.raw(Method::POST, "/api/v2/organization/invite", &headers, Some(serde_json::to_vec(&body).unwrap()))
}

fn me_as_admin_key(srv: &TestServer) {
    let me = ok(srv.get("/api/v2/me"));
    let u = &me["user"];
    assert_eq!(u["id"], json!(srv.boot.user.id));
    assert_eq!(u["email"], "admin@example.com");
    assert_eq!(u["first_name"], "Admin");
    assert_eq!(u["last_name"], "User");
    assert_eq!(u["en_first_name"], "Admin");
    assert_eq!(u["en_last_name"], "User");
    time_of(&u["created_at"]);
    let o = &me["organization"];
    assert_eq!(o["id"], json!(srv.boot.org.id));
    assert_eq!(o["name"], "Test Org");
    assert_eq!(o["name_en"], "Test Org");
    assert_eq!(o["sandbox"], true);
    time_of(&o["created_at"]);
    assert_eq!(
        o["currency_config"],
        json!({"home_currency": "SAR", "default_currency": "SAR", "enabled_currencies": ["SAR"]})
    );
}

fn me_as_other_credentials(srv: &TestServer) {
    let b = branch(srv, "B");
    let (user, token) = user_token(srv, "member@example.com", Role::BranchUser, &[&b]);
    let me = ok(call_bearer(srv, &token, None, Method::GET, "/api/v2/me", None));
    assert_eq!(me["user"]["id"], json!(user.id));
    assert_eq!(me["user"]["email"], "member@example.com");
    assert_eq!(me["user"]["first_name"], "Team");
    assert_eq!(me["user"]["en_first_name"], Value::Null);
    assert_eq!(me["organization"]["id"], json!(srv.boot.org.id));

    // A scoped key acts for the organization's admin.
    let scoped = scoped_key(srv, &[&b], &b);
    let me = ok(srv.call_as(&scoped, None, Method::GET, "/api/v2/me", None));
    assert_eq!(me["user"]["id"], json!(srv.boot.user.id));

    // A malformed token is refused.
    let r = call_bearer(srv, "x.y.z", None, Method::GET, "/api/v2/me", None);
    assert_error(&r, 401, "UNAUTHORIZED");
}

fn org_admin_invites_to_any_branch(srv: &TestServer) {
    let a = srv.branch_id();
    let b = branch(srv, "B");
    let before = chrono::Utc::now();
    let r = ok(srv.post(
        "/api/v2/organization/invite",
        json!({"email": "new.admin@example.com", "role": "branch_admin", "branches": [a, b]}),
    ));
    for f in ["id", "email", "organization_id", "expire_at", "created_by", "role", "branches"] {
        assert!(r.get(f).is_some(), "OrganizationInviteResponse.{f}: {r}");
    }
    assert!(uuid::Uuid::parse_str(r["id"].as_str().unwrap()).is_ok());
    assert_eq!(r["email"], "new.admin@example.com");
    assert_eq!(r["organization_id"], json!(srv.boot.org.id));
    assert_eq!(r["created_by"], json!(srv.boot.user.id));
    assert_eq!(r["role"], "branch_admin");
    assert_eq!(r["branches"], json!([a, b]));
    let expire = time_of(&r["expire_at"]);
    let week = chrono::Duration::days(7);
    assert!(
        expire >= before + week - chrono::Duration::seconds(5) && expire <= chrono::Utc::now() + week + chrono::Duration::seconds(5),
        "expire_at = now + 7 days: {expire}"
    );

    // The e-mail is recorded, in Arabic by default.
    let n = notifications(srv);
    assert_eq!(n.len(), 1, "{n:?}");
    assert_eq!(n[0].channel, Channel::Email);
    assert_eq!(n[0].recipient, "new.admin@example.com");
    assert_eq!(n[0].kind, billing_core::notification::Kind::OrganizationInvite);
    assert_eq!(n[0].language, Language::Ar);
    assert_eq!(n[0].payload["invitation_id"], r["id"]);
    assert_eq!(n[0].sent_at, None);

    // Any role, including organization_admin with no branches.
    let r = ok(srv.post(
        "/api/v2/organization/invite",
        json!({"email": "boss@example.com", "role": "organization_admin", "branches": []}),
    ));
    assert_eq!(r["role"], "organization_admin");
    assert_eq!(r["branches"], json!([]));
    let r = ok(srv.post(
        "/api/v2/organization/invite",
        json!({"email": "clerk@example.com", "role": "branch_user", "branches": [b]}),
    ));
    assert_eq!(r["role"], "branch_user");
    assert_eq!(notifications(srv).len(), 3);
}

fn language_header(srv: &TestServer) {
    let a = srv.branch_id();
    for (header, want) in [
        (Some("EN"), Language::En),
        (Some("en"), Language::En),
        (Some("AR"), Language::Ar),
        (None, Language::Ar),
    ] {
        let email = format!("lang{}@example.com", notifications(srv).len());
        ok(invite_as(
            srv,
            &srv.key,
            header,
            json!({"email": email, "role": "branch_user", "branches": [a]}),
        ));
        let n = notifications(srv);
        let last = n.last().unwrap();
        assert_eq!(last.recipient, email);
        assert_eq!(last.language, want, "language header {header:?}");
    }
}

fn branch_admin_invites_only_to_its_branches(srv: &TestServer) {
    let a = srv.branch_id();
    let b = branch(srv, "B");
    let scoped = scoped_key(srv, &[&a], &a);

    let r = ok(invite_as(
        srv,
        &scoped,
        None,
        json!({"email": "teller@example.com", "role": "branch_user", "branches": [a]}),
    ));
    assert_eq!(r["branches"], json!([a]));
    let r = ok(invite_as(
        srv,
        &scoped,
        None,
        json!({"email": "deputy@example.com", "role": "branch_admin", "branches": [a]}),
    ));
    assert_eq!(r["role"], "branch_admin");

    let r = srv.unchanged(|| invite_as(srv, &scoped, None, json!({"email": "x@example.com", "role": "branch_user", "branches": [b]})));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let r = srv.unchanged(|| invite_as(srv, &scoped, None, json!({"email": "x@example.com", "role": "branch_user", "branches": [a, b]})));
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let r = srv.unchanged(|| {
        invite_as(
            srv,
            &scoped,
            None,
            json!({"email": "x@example.com", "role": "organization_admin", "branches": [a]}),
        )
    });
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let r = srv.unchanged(|| {
        invite_as(
            srv,
            &scoped,
            None,
            json!({"email": "x@example.com", "role": "organization_admin", "branches": []}),
        )
    });
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");

    // A branch admin by JWT: same rules.
    let (_, token) = user_token(srv, "badmin@example.com", Role::BranchAdmin, &[&b]);
    let r = ok(call_bearer(
        srv,
        &token,
        None,
        Method::POST,
        "/api/v2/organization/invite",
        Some(json!({"email": "b1@example.com", "role": "branch_user", "branches": [b]})),
    ));
    assert_eq!(r["branches"], json!([b]));
    let r = srv.unchanged(|| {
        call_bearer(
            srv,
            &token,
            None,
            Method::POST,
            "/api/v2/organization/invite",
            Some(json!({"email": "b2@example.com", "role": "branch_user", "branches": [a]})),
        )
    });
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
}

fn branch_user_cannot_invite(srv: &TestServer) {
    let a = srv.branch_id();
    let (_, token) = user_token(srv, "user@example.com", Role::BranchUser, &[&a]);
    let r = srv.unchanged(|| {
        call_bearer(
            srv,
            &token,
            None,
            Method::POST,
            "/api/v2/organization/invite",
            Some(json!({"email": "friend@example.com", "role": "branch_user", "branches": [a]})),
        )
    });
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    assert!(notifications(srv).is_empty());
}

fn invite_refuses_bad_input(srv: &TestServer) {
    let a = srv.branch_id();
    let cases: Vec<(Value, Value, &str)> = vec![
        (
            json!({"email": "not-an-email", "role": "branch_user", "branches": [a]}),
            json!(["body", "email"]),
            "value_error",
        ),
        (
            json!({"email": "x@localhost", "role": "branch_user", "branches": [a]}),
            json!(["body", "email"]),
            "value_error",
        ),
        (json!({"role": "branch_user", "branches": [a]}), json!(["body", "email"]), "missing"),
        (
            json!({"email": 5, "role": "branch_user", "branches": [a]}),
            json!(["body", "email"]),
            "string_type",
        ),
        (
            json!({"email": "x@example.com", "role": "owner", "branches": [a]}),
            json!(["body", "role"]),
            "enum",
        ),
        (
            json!({"email": "x@example.com", "role": "BRANCH_USER", "branches": [a]}),
            json!(["body", "role"]),
            "enum",
        ),
        (json!({"email": "x@example.com", "branches": [a]}), json!(["body", "role"]), "missing"),
        (json!({"email": "x@example.com", "role": "branch_user"}), json!(["body", "branches"]), "missing"),
        (
            json!({"email": "x@example.com", "role": "branch_user", "branches": a}),
            json!(["body", "branches"]),
            "list_type",
        ),
        (
            json!({"email": "x@example.com", "role": "branch_user", "branches": ["nope"]}),
            json!(["body", "branches", 0]),
            "uuid_parsing",
        ),
        (
            json!({"email": "x@example.com", "role": "branch_user", "branches": [a, 7]}),
            json!(["body", "branches", 1]),
            "uuid_parsing",
        ),
        (
            json!({"email": "x@example.com", "role": "branch_user", "branches": []}),
            json!(["body", "branches"]),
            "too_short",
        ),
        (
            json!({"email": "x@example.com", "role": "branch_admin", "branches": []}),
            json!(["body", "branches"]),
            "too_short",
        ),
        (json!(null), json!(["body"]), "missing"),
    ];
    for (body, loc, kind) in cases {
        let r = srv.unchanged(|| srv.post("/api/v2/organization/invite", body.clone()));
        assert_invalid(&r, loc, Some(kind));
    }
    // All problems at once.
    let r = srv.unchanged(|| srv.post("/api/v2/organization/invite", json!({"email": "bad", "role": "bad", "branches": ["bad"]})));
    assert_eq!(
        r.locs(),
        vec![json!(["body", "email"]), json!(["body", "role"]), json!(["body", "branches", 0])]
    );
    // A branch that does not exist.
    let r = srv.unchanged(|| {
        srv.post(
            "/api/v2/organization/invite",
            json!({"email": "x@example.com", "role": "branch_user", "branches": [random_id()]}),
        )
    });
    assert_error(&r, 404, "NOT_FOUND");
    assert!(notifications(srv).is_empty());
}

fn settings_as(srv: &TestServer, key: &str, method: Method, body: Option<Value>) -> crate::common::Resp {
    srv.call_as(key, None, method, "/api/v2/organization/settings", body)
}

/// GET/PATCH /api/v2/organization/settings: an admin reads and patches; the new default
/// currency and VAT rate are what the next product and invoice use.
fn settings_admin_reads_and_patches(srv: &TestServer) {
    let s = ok(srv.get("/api/v2/organization/settings"));
    assert_eq!(
        s,
        json!({
            "organization_id": srv.boot.org.id,
            "home_currency": "SAR",
            "default_currency": "SAR",
            "enabled_currencies": ["SAR"],
            "vat_rate": "15",
            "default_payment_methods": {"mada": true, "visa": true, "mastercard": true, "amex": true, "bank_transfer": false, "installment": true, "qurrah": false},
            "auto_charge_on_demand": false,
            "installment_minimums": {"SAR": "100.00"},
            "installment_split_months": 1,
            "subscription_invoice_lead_days": 0,
            "subscription_renewal_retry_days": [1, 3, 7],
            "consumer_notifications": true,
            "notifications": {"invoice_sent": true, "payment_receipt": true, "installment_reminder": true, "installment_failed": true, "subscription_renewal_failed": true, "installment_reminder_days": 3},
            "webhook_defaults": {"event_types": billing_core::event::EventType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>(), "all_event_types": true},
        })
    );
    let r = ok(srv.call(
        Method::PATCH,
        "/api/v2/organization/settings",
        Some(json!({"default_currency": "USD", "enabled_currencies": ["SAR", "USD"], "vat_rate": "5", "default_payment_methods": {"amex": false}})),
    ));
    assert_eq!(r["default_currency"], "USD");
    assert_eq!(r["enabled_currencies"], json!(["SAR", "USD"]));
    assert_eq!(r["vat_rate"], "5");
    assert_eq!(r["default_payment_methods"]["amex"], false);
    assert_eq!(r["default_payment_methods"]["visa"], true);
    assert_eq!(ok(srv.get("/api/v2/organization/settings")), r);
    assert!(notifications(srv).is_empty(), "a settings change notifies nobody");

    // The next product is priced in USD with 5 % VAT included.
    let p = one_off_product(srv, "Widget", "105");
    assert_eq!(p["currency"], "USD");
    assert_eq!(p["price"], "105.00");
    assert_eq!(p["vat_amount"], "5.00");
    assert_eq!(p["price_excluding_vat"], "100.00");
    // The next invoice without a currency is in USD, with 5 % VAT.
    let c = crate::common::invoice_fixtures::quiet_consumer(srv, "Settings Payer");
    let mut body = crate::common::invoice_fixtures::invoice_body(&c, &[(&id_of(&p), 1)], &[]);
    body.as_object_mut().unwrap().remove("currency");
    let inv = ok(srv.post("/api/v2/invoices", body));
    assert_eq!(inv["currency"], "USD", "{inv}");
    assert_eq!(inv["total_vat_amount"], "5.00", "{inv}");
}

/// Only organization admins: a branch admin and a branch user get a 403 and change nothing.
fn settings_need_an_org_admin(srv: &TestServer) {
    let b = branch(srv, "B");
    for (email, role) in [("ba@example.com", Role::BranchAdmin), ("bu@example.com", Role::BranchUser)] {
        let (_, token) = user_token(srv, email, role, &[&b]);
        let r = call_bearer(srv, &token, Some(&b), Method::GET, "/api/v2/organization/settings", None);
        assert_error(&r, 403, "PERMISSION_FORBIDDEN");
        let r = srv.unchanged(|| {
            call_bearer(
                srv,
                &token,
                Some(&b),
                Method::PATCH,
                "/api/v2/organization/settings",
                Some(json!({"vat_rate": "0"})),
            )
        });
        assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    }
    assert_eq!(ok(srv.get("/api/v2/organization/settings"))["vat_rate"], "15");
}

/// Bad bodies are a 422 with the spec's detail entries; support-level fields a 403 naming the
/// command; neither writes anything.
fn settings_refuse_bad_patches(srv: &TestServer) {
    let key = srv.key.clone();
    for (body, loc, kind) in [
        (json!({"colour": "red"}), json!(["body", "colour"]), "extra_forbidden"),
        (json!({"vat_rate": "101"}), json!(["body", "vat_rate"]), "value_error"),
        (json!({"vat_rate": "ten"}), json!(["body", "vat_rate"]), "decimal_parsing"),
        (json!({"default_currency": "XXX"}), json!(["body", "default_currency"]), "enum"),
        (json!({"default_currency": true}), json!(["body", "default_currency"]), "string_type"),
        (json!({"enabled_currencies": ["SAR", 7]}), json!(["body", "enabled_currencies", 1]), "enum"),
        (
            json!({"default_payment_methods": {"visa": 3}}),
            json!(["body", "default_payment_methods", "visa"]),
            "bool_type",
        ),
        (json!({"default_currency": "USD"}), json!(["body", "default_currency"]), "value_error"),
        (json!([1]), json!(["body"]), "model_attributes_type"),
        (
            json!({"notifications": {"invoice_sent": "no"}}),
            json!(["body", "notifications", "invoice_sent"]),
            "bool_type",
        ),
        (
            json!({"notifications": {"sms": true}}),
            json!(["body", "notifications", "sms"]),
            "extra_forbidden",
        ),
        (
            json!({"notifications": {"installment_reminder_days": 0}}),
            json!(["body", "notifications", "installment_reminder_days"]),
            "value_error",
        ),
        (
            json!({"notifications": {"installment_reminder_days": 31}}),
            json!(["body", "notifications", "installment_reminder_days"]),
            "value_error",
        ),
        (json!({"notifications": true}), json!(["body", "notifications"]), "model_attributes_type"),
        (
            json!({"webhook_defaults": {"event_types": []}}),
            json!(["body", "webhook_defaults", "event_types"]),
            "too_short",
        ),
        (
            json!({"webhook_defaults": {"event_types": ["NOPE"]}}),
            json!(["body", "webhook_defaults", "event_types", 0]),
            "enum",
        ),
        (
            json!({"webhook_defaults": {"url": "x"}}),
            json!(["body", "webhook_defaults", "url"]),
            "extra_forbidden",
        ),
    ] {
        let r = srv.unchanged(|| settings_as(srv, &key, Method::PATCH, Some(body.clone())));
        assert_invalid(&r, loc, Some(kind));
    }
    for field in [
        "auto_charge_on_demand",
        "installment_minimums",
        "installment_split_months",
        "consumer_notifications",
    ] {
        let r = srv.unchanged(|| settings_as(srv, &key, Method::PATCH, Some(json!({"vat_rate": "1", field: 1}))));
        assert_error(&r, 403, "PERMISSION_FORBIDDEN");
        let msg = r.body["error"].to_string();
        assert!(msg.contains(field) && msg.contains("billing-server org settings set"), "{msg}");
    }
}

http_tests!(
    me_as_admin_key,
    me_as_other_credentials,
    org_admin_invites_to_any_branch,
    language_header,
    branch_admin_invites_only_to_its_branches,
    branch_user_cannot_invite,
    invite_refuses_bad_input,
    api_keys_are_listed_created_rotated_and_revoked,
    settings_admin_reads_and_patches,
    settings_need_an_org_admin,
    settings_refuse_bad_patches,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(
    me_as_admin_key,
    org_admin_invites_to_any_branch,
    api_keys_are_listed_created_rotated_and_revoked,
    settings_admin_reads_and_patches,
);

/// `/api-keys`: an organization admin lists, creates (the secret shown once), rotates and
/// revokes keys; a revoked key is a 401 on its next request; a branch admin gets a 403; a bad
/// body is a 422 that creates nothing.
fn api_keys_are_listed_created_rotated_and_revoked(s: &TestServer) {
    let made = s.post("/api/v2/api-keys", json!({"name": "ci", "is_all_branches": true}));
    assert_eq!(made.status, 200, "{}", made.body);
    let (id, key) = (
        made.body["id"].as_str().unwrap().to_string(),
        made.body["x_api_key"].as_str().unwrap().to_string(),
    );
    assert!(made.body["api_secret"].is_string());
    assert!(made.body.get("secret_hash").is_none());
    let listed = s.get("/api/v2/api-keys");
    let row = listed.body["data"].as_array().unwrap().iter().find(|k| k["id"] == id.as_str()).unwrap().clone();
    assert!(
        row.get("api_secret").is_none() && row.get("x_api_key").is_none(),
        "the secret is shown once: {row}"
    );
    assert!(row["revoked_at"].is_null());
    assert_eq!(s.call_as(&key, None, Method::GET, "/api/v2/consumers", None).status, 200);

    let bad = s.post("/api/v2/api-keys", json!({"branch_ids": ["not-a-uuid"]}));
    assert_eq!(bad.status, 422, "{}", bad.body);
    assert_eq!(
        s.get("/api/v2/api-keys").body["data"].as_array().unwrap().len(),
        listed.body["data"].as_array().unwrap().len()
    );

    let rotated = s.post(&format!("/api/v2/api-keys/{id}/rotate"), json!({}));
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    let new_key = rotated.body["x_api_key"].as_str().unwrap().to_string();
    assert_eq!(s.call_as(&key, None, Method::GET, "/api/v2/consumers", None).status, 401);
    assert_eq!(s.call_as(&new_key, None, Method::GET, "/api/v2/consumers", None).status, 200);
    let gone = s.delete(&format!("/api/v2/api-keys/{}", rotated.body["id"].as_str().unwrap()));
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert_eq!(s.call_as(&new_key, None, Method::GET, "/api/v2/consumers", None).status, 401);
    assert_eq!(s.delete(&format!("/api/v2/api-keys/{}", uuid::Uuid::new_v4())).status, 404);
}
