//! /api/v2/coupons: percentage and fixed-amount coupons, list filters, search and sorts,
//! updates, deletes, and the freeze once a finalised invoice uses a coupon.

use crate::common::fixtures::*;
use crate::common::TestServer;
use serde_json::{json, Value};

const COUPON_FIELDS: [&str; 8] = [
    "id",
    "name",
    "discount_value",
    "currency",
    "is_percentage",
    "is_active",
    "created_at",
    "updated_at",
];

fn coupon_path(id: &str) -> String {
    format!("/api/v2/coupons/{id}")
}

fn percentage_coupon(srv: &TestServer) {
    let c = ok(srv.post("/api/v2/coupons", json!({"name": "TENOFF", "discount_value": 10, "is_percentage": true})));
    for f in COUPON_FIELDS {
        assert!(c.get(f).is_some(), "CouponDto.{f}: {c}");
    }
    assert_eq!(c["name"], "TENOFF");
    assert_eq!(c["discount_value"], "10.00");
    assert_eq!(c["is_percentage"], true);
    assert_eq!(c["currency"], Value::Null);
    assert_eq!(c["is_active"], true, "active by default");
    assert_eq!(c["updated_at"], Value::Null);
    time_of(&c["created_at"]);

    // GET is CouponDetailed: the DTO plus redemptions.
    let got = ok(srv.get(&coupon_path(&id_of(&c))));
    assert_eq!(got["redemptions"], 0);
    for f in COUPON_FIELDS {
        assert_eq!(got[f], c[f], "{f}");
    }

    for (v, shown) in [
        (json!("100"), "100.00"),
        (json!(0.5), "0.50"),
        (json!("12.5"), "12.50"),
        (json!(99.99), "99.99"),
    ] {
        let c = ok(srv.post("/api/v2/coupons", json!({"name": "p", "discount_value": v, "is_percentage": true})));
        assert_eq!(c["discount_value"], shown);
    }
    for v in [json!(0), json!("-1"), json!(100.01), json!(101)] {
        let r = srv.unchanged(|| srv.post("/api/v2/coupons", json!({"name": "bad", "discount_value": v, "is_percentage": true})));
        assert_invalid(&r, json!(["body", "discount_value"]), None);
    }
}

fn fixed_amount_coupon(srv: &TestServer) {
    let c = ok(srv.post(
        "/api/v2/coupons",
        json!({"name": "FIFTY", "discount_value": "50", "is_percentage": false, "currency": "SAR", "is_active": false}),
    ));
    assert_eq!(c["discount_value"], "50.00");
    assert_eq!(c["currency"], "SAR");
    assert_eq!(c["is_percentage"], false);
    assert_eq!(c["is_active"], false);
    // `is_percentage` defaults to false.
    let c = ok(srv.post("/api/v2/coupons", json!({"name": "KWD", "discount_value": 5, "currency": "KWD"})));
    assert_eq!(c["discount_value"], "5.000", "KWD has 3 decimals");
    assert_eq!(c["is_percentage"], false);
    let c = ok(srv.post("/api/v2/coupons", json!({"name": "big", "discount_value": 1000, "currency": "USD"})));
    assert_eq!(c["discount_value"], "1000.00", "a fixed amount has no upper bound of 100");

    let cases: Vec<(Value, Value, &str)> = vec![
        (json!({"name": "x", "discount_value": 5}), json!(["body", "currency"]), "missing"),
        (
            json!({"name": "x", "discount_value": 5, "is_percentage": false}),
            json!(["body", "currency"]),
            "missing",
        ),
        (
            json!({"name": "x", "discount_value": 0, "currency": "SAR"}),
            json!(["body", "discount_value"]),
            "greater_than",
        ),
        (
            json!({"name": "x", "discount_value": -3, "currency": "SAR"}),
            json!(["body", "discount_value"]),
            "greater_than",
        ),
        (
            json!({"name": "x", "discount_value": "1.001", "currency": "SAR"}),
            json!(["body", "discount_value"]),
            "decimal_max_places",
        ),
        (
            json!({"name": "x", "discount_value": "1.0001", "currency": "KWD"}),
            json!(["body", "discount_value"]),
            "decimal_max_places",
        ),
        (
            json!({"name": "x", "discount_value": 5, "currency": "XXX"}),
            json!(["body", "currency"]),
            "enum",
        ),
        (
            json!({"name": "x", "discount_value": "five", "currency": "SAR"}),
            json!(["body", "discount_value"]),
            "decimal_parsing",
        ),
        (json!({"name": "x", "currency": "SAR"}), json!(["body", "discount_value"]), "missing"),
        (json!({"discount_value": 5, "currency": "SAR"}), json!(["body", "name"]), "missing"),
        (
            json!({"name": "", "discount_value": 5, "currency": "SAR"}),
            json!(["body", "name"]),
            "string_too_short",
        ),
        (
            json!({"name": "x", "discount_value": 5, "currency": "SAR", "is_active": "yes"}),
            json!(["body", "is_active"]),
            "bool_type",
        ),
        (
            json!({"name": "x", "discount_value": 5, "is_percentage": 1}),
            json!(["body", "is_percentage"]),
            "bool_type",
        ),
    ];
    for (body, loc, kind) in cases {
        let r = srv.unchanged(|| srv.post("/api/v2/coupons", body.clone()));
        assert_invalid(&r, loc, Some(kind));
    }
}

fn get_unknown_or_malformed(srv: &TestServer) {
    assert_error(&srv.get(&coupon_path(&random_id())), 404, "NOT_FOUND");
    assert_invalid(&srv.get("/api/v2/coupons/x-y"), json!(["path", "coupon_id"]), Some("uuid_parsing"));
    let r = srv.unchanged(|| srv.put(&coupon_path(&random_id()), json!({"name": "x"})));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.delete(&coupon_path(&random_id())));
    assert_error(&r, 404, "NOT_FOUND");
}

fn update_coupon(srv: &TestServer) {
    let c = percent_coupon(srv, "SPRING", "10");
    let path = coupon_path(&id_of(&c));

    let u = ok(srv.put(&path, json!({"name": "SUMMER"})));
    assert_eq!(u["name"], "SUMMER");
    for f in ["discount_value", "is_percentage", "currency", "is_active", "created_at", "id"] {
        assert_eq!(u[f], c[f], "{f} unchanged");
    }
    assert!(u["updated_at"].is_string());
    assert!(u.get("redemptions").is_none() || u["redemptions"] == 0);

    let u = ok(srv.put(&path, json!({"discount_value": "25", "is_active": false, "name": null})));
    assert_eq!(
        (u["discount_value"].clone(), u["is_active"].clone(), u["name"].clone()),
        (json!("25.00"), json!(false), json!("SUMMER"))
    );

    // Percentage -> fixed needs a currency.
    let r = srv.unchanged(|| srv.put(&path, json!({"is_percentage": false})));
    assert_invalid(&r, json!(["body", "currency"]), Some("missing"));
    let u = ok(srv.put(&path, json!({"is_percentage": false, "currency": "SAR", "discount_value": 40})));
    assert_eq!(
        (u["is_percentage"].clone(), u["currency"].clone(), u["discount_value"].clone()),
        (json!(false), json!("SAR"), json!("40.00"))
    );
    // Fixed -> percentage keeps the value when valid, drops the currency.
    let u = ok(srv.put(&path, json!({"is_percentage": true})));
    assert_eq!(
        (u["is_percentage"].clone(), u["currency"].clone(), u["discount_value"].clone()),
        (json!(true), Value::Null, json!("40.00"))
    );
    // A percentage above 100 is refused on update too.
    let r = srv.unchanged(|| srv.put(&path, json!({"discount_value": 150})));
    assert_invalid(&r, json!(["body", "discount_value"]), None);
    let r = srv.unchanged(|| srv.put(&path, json!({"name": "  "})));
    assert_invalid(&r, json!(["body", "name"]), Some("string_too_short"));
    assert_eq!(ok(srv.get(&path))["discount_value"], "40.00");

    // A fixed coupon's value must fit its currency.
    let f = fixed_coupon(srv, "FIX", "10", "SAR");
    let r = srv.unchanged(|| srv.put(&coupon_path(&id_of(&f)), json!({"discount_value": "1.005"})));
    assert_invalid(&r, json!(["body", "discount_value"]), Some("decimal_max_places"));
    let u = ok(srv.put(&coupon_path(&id_of(&f)), json!({"currency": "KWD", "discount_value": "1.005"})));
    assert_eq!((u["currency"].clone(), u["discount_value"].clone()), (json!("KWD"), json!("1.005")));
}

fn delete_coupon(srv: &TestServer) {
    let gone = id_of(&percent_coupon(srv, "GONE", "5"));
    let kept = id_of(&percent_coupon(srv, "KEPT", "5"));
    let r = srv.delete(&coupon_path(&gone));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({}));
    assert_error(&srv.get(&coupon_path(&gone)), 404, "NOT_FOUND");
    assert_eq!(ids(&srv.get("/api/v2/coupons")), vec![kept]);
    let r = srv.unchanged(|| srv.delete(&coupon_path(&gone)));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.put(&coupon_path(&gone), json!({"name": "back"})));
    assert_error(&r, 404, "NOT_FOUND");
}

fn list_filters_search_and_sorts(srv: &TestServer) {
    let a = id_of(&ok(
        srv.post("/api/v2/coupons", json!({"name": "Welcome Ten", "discount_value": 10, "is_percentage": true}))
    ));
    let b = id_of(&ok(srv.post(
        "/api/v2/coupons",
        json!({"name": "Loyalty Fixed", "discount_value": 30, "currency": "SAR", "is_active": false}),
    )));
    let c = id_of(&ok(srv.post(
        "/api/v2/coupons",
        json!({"name": "Bonus", "discount_value": 5, "is_percentage": true, "is_active": false}),
    )));
    let d = id_of(&ok(
        srv.post("/api/v2/coupons", json!({"name": "Cashback welcome", "discount_value": 20, "currency": "SAR"}))
    ));

    let list = |q: &str| {
        let mut v = ids(&srv.get(&format!("/api/v2/coupons?{q}")));
        v.sort();
        v
    };
    let set = |v: &[&String]| {
        let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(list(""), set(&[&a, &b, &c, &d]));
    assert_eq!(list("active=true"), set(&[&a, &d]));
    assert_eq!(list("active=false"), set(&[&b, &c]));
    assert_eq!(list("is_percentage=true"), set(&[&a, &c]));
    assert_eq!(list("is_percentage=false"), set(&[&b, &d]));
    assert_eq!(list("is_percentage=false&active=true"), set(&[&d]));
    assert_eq!(list("search_term=welcome"), set(&[&a, &d]), "name, case-insensitive, partial");
    assert_eq!(list("search_term=LOYAL"), set(&[&b]));
    assert_eq!(list("search_term=welcome&active=true&is_percentage=true"), set(&[&a]));
    assert_eq!(list("search_term=none"), set(&[]));

    // Items are CouponDetailed.
    let r = srv.get("/api/v2/coupons");
    for item in r.body["data"].as_array().unwrap() {
        assert_eq!(item["redemptions"], 0, "{item}");
        for f in COUPON_FIELDS {
            assert!(item.get(f).is_some(), "{f}");
        }
    }

    let ordered = |q: &str| ids(&srv.get(&format!("/api/v2/coupons?{q}")));
    assert_eq!(ordered(""), vec![d.clone(), c.clone(), b.clone(), a.clone()], "created_at desc by default");
    assert_eq!(
        ordered("sort_field=created_at&sort_direction=asc"),
        vec![a.clone(), b.clone(), c.clone(), d.clone()]
    );
    assert_eq!(ordered("sort_field=name&sort_direction=asc"), vec![c.clone(), d.clone(), b.clone(), a.clone()]);
    assert_eq!(ordered("sort_field=name&sort_direction=desc"), vec![a.clone(), b.clone(), d.clone(), c.clone()]);
    assert_eq!(
        ordered("sort_field=discount_value&sort_direction=asc"),
        vec![c.clone(), a.clone(), d.clone(), b.clone()]
    );
    assert_eq!(
        ordered("sort_field=discount_value&sort_direction=desc"),
        vec![b.clone(), d.clone(), a.clone(), c.clone()]
    );

    // Pagination reflects the filters.
    let r = srv.get("/api/v2/coupons?active=true&limit=1");
    assert_eq!(
        r.body["pagination"],
        json!({"total_count": 1, "max_page": 2, "current_page": 1, "limit": 1, "has_next_page": true, "has_previous_page": false})
    );

    for (q, loc) in [
        ("active=perhaps", "active"),
        ("is_percentage=2", "is_percentage"),
        ("sort_field=currency", "sort_field"),
        ("sort_direction=x", "sort_direction"),
        ("limit=0", "limit"),
        ("page=0", "page"),
    ] {
        let r = srv.get(&format!("/api/v2/coupons?{q}"));
        assert_invalid(&r, json!(["query", loc]), None);
    }
}

fn coupon_used_in_finalized_invoice_cannot_change(srv: &TestServer) {
    let c = percent_coupon(srv, "LOCKED", "15");
    let id = id_of(&c);
    freeze_coupon(srv, &id);
    let before = ok(srv.get(&coupon_path(&id)));
    for body in [
        json!({"name": "UNLOCKED"}),
        json!({"discount_value": 20}),
        json!({"is_active": false}),
        json!({}),
    ] {
        let r = srv.unchanged(|| srv.put(&coupon_path(&id), body.clone()));
        assert_error(&r, 400, "COUPON_USED_IN_FINALIZED_INVOICE");
    }
    assert_eq!(ok(srv.get(&coupon_path(&id))), before);
}

/// A discount the store cannot hold is a client error, not a crash.
fn discount_out_of_range_is_422(srv: &TestServer) {
    let huge = "100000000000000000";
    let r = srv.unchanged(|| srv.post("/api/v2/coupons", json!({"name": "Huge", "discount_value": huge, "currency": "SAR"})));
    assert_invalid(&r, json!(["body", "discount_value"]), None);
    let c = fixed_coupon(srv, "Normal", "10", "SAR");
    let r = srv.unchanged(|| srv.put(&coupon_path(&id_of(&c)), json!({"discount_value": huge})));
    assert_invalid(&r, json!(["body", "discount_value"]), None);
    assert_eq!(ok(srv.get(&coupon_path(&id_of(&c))))["discount_value"], "10.00");
}

fn search_is_case_insensitive_beyond_ascii(srv: &TestServer) {
    let id = id_of(&percent_coupon(srv, "Été Spécial", "10"));
    percent_coupon(srv, "Plain", "10");
    for term in ["été", "ÉTÉ", "spécial", "SPÉCIAL", "é"] {
        assert_eq!(
            ids(&srv.get(&format!("/api/v2/coupons?search_term={}", enc(term)))),
            vec![id.clone()],
            "search_term={term}"
        );
    }
}

http_tests!(
    percentage_coupon,
    fixed_amount_coupon,
    get_unknown_or_malformed,
    update_coupon,
    delete_coupon,
    list_filters_search_and_sorts,
    coupon_used_in_finalized_invoice_cannot_change,
    discount_out_of_range_is_422,
    search_is_case_insensitive_beyond_ascii,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(percentage_coupon, fixed_amount_coupon, list_filters_search_and_sorts,);
