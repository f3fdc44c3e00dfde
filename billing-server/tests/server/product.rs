//! /api/v2/products and /api/v2/products/{id}/prices: ONE_OFF and RECURRING products, prices
//! per currency with VAT, list filters and sorts, updates, deletes, and the freeze once a
//! finalised invoice uses a product.

use crate::common::fixtures::*;
use crate::common::TestServer;
use serde_json::{json, Value};

const PRODUCT_FIELDS: [&str; 20] = [
    "id",
    "name",
    "description",
    "type",
    "recurring_interval",
    "recurring_interval_count",
    "price",
    "currency",
    "amount_in_smallest_unit",
    "is_price_exempt_from_vat",
    "is_price_inclusive_of_vat",
    "price_excluding_vat",
    "vat_amount",
    "prices",
    "is_active",
    "is_one_time",
    "is_used_in_finalized_invoice",
    "external_metadata",
    "created_at",
    "updated_at",
];

const PRICE_FIELDS: [&str; 11] = [
    "id",
    "currency",
    "amount",
    "is_active",
    "is_price_inclusive_of_vat",
    "is_price_exempt_from_vat",
    "price_excluding_vat",
    "vat_amount",
    "amount_in_smallest_unit",
    "created_at",
    "updated_at",
];

fn product_path(id: &str) -> String {
    format!("/api/v2/products/{id}")
}

fn one_off_with_vat_inclusive_price(srv: &TestServer) {
    let p = ok(srv.post(
        "/api/v2/products",
        json!({"name": "Gym pass", "description": "One visit", "type": "ONE_OFF", "price": "115.00"}),
    ));
    for f in PRODUCT_FIELDS {
        assert!(p.get(f).is_some(), "ProductDto.{f}: {p}");
    }
    assert_eq!(p["name"], "Gym pass");
    assert_eq!(p["description"], "One visit");
    assert_eq!(p["type"], "ONE_OFF");
    assert_eq!(p["is_one_time"], true);
    assert_eq!(p["recurring_interval"], Value::Null);
    assert_eq!(p["recurring_interval_count"], 1);
    assert_eq!(p["price"], "115.00");
    assert_eq!(p["currency"], "SAR", "the default currency");
    assert_eq!(p["amount_in_smallest_unit"], 11500);
    assert_eq!(p["is_price_inclusive_of_vat"], true, "inclusive by default");
    assert_eq!(p["is_price_exempt_from_vat"], false);
    assert_eq!(p["price_excluding_vat"], "100.00");
    assert_eq!(p["vat_amount"], "15.00");
    assert_eq!(p["is_active"], true);
    assert_eq!(p["is_used_in_finalized_invoice"], false);
    assert_eq!(p["external_metadata"], json!({}));
    assert_eq!(p["updated_at"], Value::Null);
    time_of(&p["created_at"]);

    let prices = p["prices"].as_array().unwrap();
    assert_eq!(prices.len(), 1);
    let pr = &prices[0];
    for f in PRICE_FIELDS {
        assert!(pr.get(f).is_some(), "price.{f}: {pr}");
    }
    assert_eq!(pr["currency"], "SAR");
    assert_eq!(pr["amount"], "115.00");
    assert_eq!(pr["amount_in_smallest_unit"], 11500);
    assert_eq!(pr["is_active"], true);
    assert_eq!(pr["is_price_inclusive_of_vat"], true);
    assert_eq!(pr["is_price_exempt_from_vat"], false);
    assert_eq!(pr["price_excluding_vat"], "100.00");
    assert_eq!(pr["vat_amount"], "15.00");

    assert_eq!(ok(srv.get(&product_path(&id_of(&p)))), p, "GET returns the same ProductDto");
}

fn vat_exclusive_and_exempt(srv: &TestServer) {
    let p = ok(srv.post(
        "/api/v2/products",
        json!({"name": "Excl", "type": "ONE_OFF", "price": 100, "is_price_inclusive_of_vat": false}),
    ));
    assert_eq!(p["price"], "100.00");
    assert_eq!(p["is_price_inclusive_of_vat"], false);
    assert_eq!(p["is_price_exempt_from_vat"], false);
    assert_eq!(p["price_excluding_vat"], "100.00");
    assert_eq!(p["vat_amount"], "15.00");

    let p = ok(srv.post(
        "/api/v2/products",
        json!({"name": "Exempt", "type": "ONE_OFF", "price": "100", "is_price_exempt_from_vat": true, "is_price_inclusive_of_vat": false}),
    ));
    assert_eq!(p["is_price_exempt_from_vat"], true);
    assert_eq!(p["is_price_inclusive_of_vat"], false);
    assert_eq!(p["price_excluding_vat"], "100.00");
    assert_eq!(p["vat_amount"], "0.00");

    // Exempt alone (inclusive left to its default) is exempt, not a conflict.
    let p = ok(srv.post(
        "/api/v2/products",
        json!({"name": "Exempt2", "type": "ONE_OFF", "price": "50", "is_price_exempt_from_vat": true}),
    ));
    assert_eq!(p["is_price_exempt_from_vat"], true);
    assert_eq!(p["vat_amount"], "0.00");

    // Rounding: 99.99 inclusive -> 86.95 + 13.04.
    let p = ok(srv.post("/api/v2/products", json!({"name": "Odd", "type": "ONE_OFF", "price": 99.99})));
    assert_eq!(p["price"], "99.99");
    assert_eq!(p["price_excluding_vat"], "86.95");
    assert_eq!(p["vat_amount"], "13.04");

    // A number is read exactly, and printed with the currency's digits.
    let p = ok(srv.post("/api/v2/products", json!({"name": "Half", "type": "ONE_OFF", "price": 99.5})));
    assert_eq!(p["price"], "99.50");
    assert_eq!(p["amount_in_smallest_unit"], 9950);

    let r = srv.unchanged(|| {
        srv.post(
            "/api/v2/products",
            json!({"name": "Both", "type": "ONE_OFF", "price": 10, "is_price_exempt_from_vat": true, "is_price_inclusive_of_vat": true}),
        )
    });
    assert_invalid(&r, json!(["body", "is_price_exempt_from_vat"]), Some("value_error"));
}

fn recurring_products(srv: &TestServer) {
    let p = ok(srv.post(
        "/api/v2/products",
        json!({"name": "Monthly", "type": "RECURRING", "recurring_interval": "MONTH", "recurring_interval_count": 3, "price": "49.90"}),
    ));
    assert_eq!(p["type"], "RECURRING");
    assert_eq!(p["is_one_time"], false);
    assert_eq!(p["recurring_interval"], "MONTH");
    assert_eq!(p["recurring_interval_count"], 3);
    assert_eq!(p["price"], "49.90");
    for interval in ["WEEK", "SEMESTER", "YEAR"] {
        let p = ok(srv.post(
            "/api/v2/products",
            json!({"name": interval, "type": "RECURRING", "recurring_interval": interval, "price": 1}),
        ));
        assert_eq!(p["recurring_interval"], interval);
        assert_eq!(p["recurring_interval_count"], 1, "count defaults to 1");
    }
    // `is_one_time` is the older spelling of the type.
    let p = ok(srv.post("/api/v2/products", json!({"name": "Legacy", "is_one_time": true, "price": 1})));
    assert_eq!(p["type"], "ONE_OFF");

    let cases: Vec<(Value, Value, &str)> = vec![
        (
            json!({"name": "x", "type": "RECURRING", "price": 1}),
            json!(["body", "recurring_interval"]),
            "missing",
        ),
        (
            json!({"name": "x", "type": "RECURRING", "recurring_interval": "DAILY", "price": 1}),
            json!(["body", "recurring_interval"]),
            "enum",
        ),
        (
            json!({"name": "x", "type": "ONE_OFF", "recurring_interval": "MONTH", "price": 1}),
            json!(["body", "recurring_interval"]),
            "value_error",
        ),
        (
            json!({"name": "x", "type": "RECURRING", "recurring_interval": "MONTH", "recurring_interval_count": 0}),
            json!(["body", "recurring_interval_count"]),
            "greater_than_equal",
        ),
        (
            json!({"name": "x", "type": "RECURRING", "recurring_interval": "MONTH", "recurring_interval_count": "many"}),
            json!(["body", "recurring_interval_count"]),
            "int_type",
        ),
        (json!({"name": "x", "type": "SUBSCRIPTION"}), json!(["body", "type"]), "enum"),
        (json!({"name": "x"}), json!(["body", "type"]), "missing"),
        (json!({"type": "ONE_OFF"}), json!(["body", "name"]), "missing"),
        (json!({"name": "", "type": "ONE_OFF"}), json!(["body", "name"]), "string_too_short"),
        (json!({"name": 3, "type": "ONE_OFF"}), json!(["body", "name"]), "string_type"),
    ];
    for (body, loc, kind) in cases {
        let r = srv.unchanged(|| srv.post("/api/v2/products", body.clone()));
        assert_invalid(&r, loc, Some(kind));
    }
}

fn prices_per_currency(srv: &TestServer) {
    let p = ok(srv.post(
        "/api/v2/products",
        json!({
            "name": "Multi",
            "type": "ONE_OFF",
            "price": "115",
            "prices": [
                {"currency": "USD", "amount": "30", "is_price_inclusive_of_vat": false},
                {"currency": "KWD", "amount": "1.25", "is_price_exempt_from_vat": true},
            ],
        }),
    ));
    assert_eq!(p["price"], "115.00", "the top-level price is the default currency's");
    assert_eq!(p["currency"], "SAR");
    let prices = p["prices"].as_array().unwrap();
    assert_eq!(prices.len(), 3);
    let by = |c: &str| {
        prices
            .iter()
            .find(|x| x["currency"] == c)
            .unwrap_or_else(|| panic!("no {c} price in {p}"))
            .clone()
    };
    let usd = by("USD");
    assert_eq!(
        (usd["amount"].clone(), usd["price_excluding_vat"].clone(), usd["vat_amount"].clone()),
        (json!("30.00"), json!("30.00"), json!("4.50"))
    );
    assert_eq!(usd["amount_in_smallest_unit"], 3000);
    let kwd = by("KWD");
    assert_eq!(kwd["amount"], "1.250", "KWD has 3 decimals");
    assert_eq!(kwd["amount_in_smallest_unit"], 1250);
    assert_eq!(kwd["vat_amount"], "0.000");
    assert_eq!(kwd["price_excluding_vat"], "1.250");
    assert_eq!(kwd["is_price_exempt_from_vat"], true);
    assert_eq!(kwd["is_price_inclusive_of_vat"], false);
    let sar = by("SAR");
    assert_eq!(
        (sar["price_excluding_vat"].clone(), sar["vat_amount"].clone()),
        (json!("100.00"), json!("15.00"))
    );

    // Only `prices`, without a SAR price: the top-level fields show the first active price.
    let p = ok(srv.post(
        "/api/v2/products",
        json!({"name": "KWD only", "type": "ONE_OFF", "prices": [{"currency": "KWD", "amount": 2}]}),
    ));
    assert_eq!(p["price"], "2.000");
    assert_eq!(p["currency"], "KWD");
    assert_eq!(p["amount_in_smallest_unit"], 2000);

    // No price at all is allowed.
    let p = ok(srv.post("/api/v2/products", json!({"name": "Free", "type": "ONE_OFF"})));
    assert_eq!(p["prices"], json!([]));
    assert_eq!(p["price"], Value::Null);

    let cases: Vec<(Value, Value, &str)> = vec![
        (json!({"price": "10.001"}), json!(["body", "price"]), "decimal_max_places"),
        (json!({"price": 10.125}), json!(["body", "price"]), "decimal_max_places"),
        (json!({"price": "0"}), json!(["body", "price"]), "greater_than"),
        (json!({"price": -5}), json!(["body", "price"]), "greater_than"),
        (json!({"price": "ten"}), json!(["body", "price"]), "decimal_parsing"),
        (
            json!({"prices": [{"currency": "KWD", "amount": "1.2345"}]}),
            json!(["body", "prices", 0, "amount"]),
            "decimal_max_places",
        ),
        (
            json!({"prices": [{"currency": "USD", "amount": "1.001"}]}),
            json!(["body", "prices", 0, "amount"]),
            "decimal_max_places",
        ),
        (
            json!({"prices": [{"currency": "XYZ", "amount": "1"}]}),
            json!(["body", "prices", 0, "currency"]),
            "enum",
        ),
        (json!({"prices": [{"amount": "1"}]}), json!(["body", "prices", 0, "currency"]), "missing"),
        (json!({"prices": [{"currency": "USD"}]}), json!(["body", "prices", 0, "amount"]), "missing"),
        (
            json!({"prices": [{"currency": "USD", "amount": 0}]}),
            json!(["body", "prices", 0, "amount"]),
            "greater_than",
        ),
        (
            json!({"prices": [{"currency": "USD", "amount": 1}, {"currency": "EUR", "amount": 1, "is_price_inclusive_of_vat": true, "is_price_exempt_from_vat": true}]}),
            json!(["body", "prices", 1, "is_price_exempt_from_vat"]),
            "value_error",
        ),
        (
            json!({"price": 1, "prices": [{"currency": "SAR", "amount": 2}]}),
            json!(["body", "prices"]),
            "value_error",
        ),
        (
            json!({"prices": [{"currency": "USD", "amount": 1}, {"currency": "USD", "amount": 2}]}),
            json!(["body", "prices"]),
            "value_error",
        ),
        (json!({"prices": {"currency": "USD", "amount": 1}}), json!(["body", "prices"]), "list_type"),
        (json!({"price": 1, "external_metadata": [1]}), json!(["body", "external_metadata"]), "dict_type"),
        (json!({"price": 1, "is_active": "maybe"}), json!(["body", "is_active"]), "bool_type"),
    ];
    for (extra, loc, kind) in cases {
        let mut body = json!({"name": "Bad", "type": "ONE_OFF"});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = srv.unchanged(|| srv.post("/api/v2/products", body.clone()));
        assert_invalid(&r, loc, Some(kind));
    }
}

fn get_unknown_or_malformed(srv: &TestServer) {
    assert_error(&srv.get(&product_path(&random_id())), 404, "NOT_FOUND");
    assert_invalid(&srv.get("/api/v2/products/nope"), json!(["path", "product_id"]), Some("uuid_parsing"));
    let r = srv.unchanged(|| srv.put(&product_path(&random_id()), json!({"name": "x"})));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.delete(&product_path(&random_id())));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.put("/api/v2/products/1", json!({"name": "x"})));
    assert_invalid(&r, json!(["path", "product_id"]), None);
}

fn update_product(srv: &TestServer) {
    let p = ok(srv.post(
        "/api/v2/products",
        json!({"name": "Old", "description": "old text", "type": "ONE_OFF", "price": "115", "external_metadata": {"sku": "A1"}}),
    ));
    let path = product_path(&id_of(&p));

    // Partial: only the name.
    let u = ok(srv.put(&path, json!({"name": "New"})));
    assert_eq!(u["name"], "New");
    for f in [
        "description",
        "type",
        "price",
        "prices",
        "is_active",
        "external_metadata",
        "created_at",
        "currency",
        "price_excluding_vat",
        "vat_amount",
    ] {
        assert_eq!(u[f], p[f], "{f} unchanged");
    }
    assert!(u["updated_at"].is_string());

    // Null is "not given".
    let u2 = ok(srv.put(&path, json!({"name": null, "description": null, "price": null, "prices": null})));
    assert_eq!(
        (u2["name"].clone(), u2["description"].clone(), u2["price"].clone()),
        (json!("New"), json!("old text"), json!("115.00"))
    );

    // Price and description; the SAR price keeps its id.
    let old_price_id = p["prices"][0]["id"].clone();
    let u3 = ok(srv.put(&path, json!({"price": "230", "description": "new text", "is_price_inclusive_of_vat": false})));
    assert_eq!(u3["description"], "new text");
    assert_eq!(u3["price"], "230.00");
    assert_eq!(u3["is_price_inclusive_of_vat"], false);
    assert_eq!(u3["price_excluding_vat"], "230.00");
    assert_eq!(u3["vat_amount"], "34.50");
    assert_eq!(u3["prices"].as_array().unwrap().len(), 1);
    assert_eq!(u3["prices"][0]["id"], old_price_id);
    assert_eq!(u3["prices"][0]["amount"], "230.00");

    // Deactivate, metadata, and type change to RECURRING with its interval.
    let u4 = ok(srv.put(
        &path,
        json!({"is_active": false, "external_metadata": {"sku": "B2"}, "type": "RECURRING", "recurring_interval": "YEAR"}),
    ));
    assert_eq!(u4["is_active"], false);
    assert_eq!(u4["external_metadata"], json!({"sku": "B2"}));
    assert_eq!(u4["type"], "RECURRING");
    assert_eq!(u4["is_one_time"], false);
    assert_eq!(u4["recurring_interval"], "YEAR");
    assert_eq!(ok(srv.get(&path)), u4);

    // Refusals.
    let cases: Vec<(Value, Value)> = vec![
        (json!({"name": ""}), json!(["body", "name"])),
        (json!({"price": "1.234"}), json!(["body", "price"])),
        (json!({"price": 0}), json!(["body", "price"])),
        (
            json!({"is_price_exempt_from_vat": true, "is_price_inclusive_of_vat": true, "price": 5}),
            json!(["body", "is_price_exempt_from_vat"]),
        ),
        (json!({"type": "WHATEVER"}), json!(["body", "type"])),
        (json!({"recurring_interval_count": 0}), json!(["body", "recurring_interval_count"])),
        (
            json!({"prices": [{"currency": "KWD", "amount": "0.0001"}]}),
            json!(["body", "prices", 0, "amount"]),
        ),
    ];
    for (body, loc) in cases {
        let r = srv.unchanged(|| srv.put(&path, body.clone()));
        assert_invalid(&r, loc, None);
    }
    // A ONE_OFF product made RECURRING needs an interval.
    let one = id_of(&one_off_product(srv, "One", "10"));
    let r = srv.unchanged(|| srv.put(&product_path(&one), json!({"type": "RECURRING"})));
    assert_invalid(&r, json!(["body", "recurring_interval"]), Some("missing"));
}

fn update_with_prices_replaces_the_set(srv: &TestServer) {
    let p = ok(srv.post(
        "/api/v2/products",
        json!({"name": "P", "type": "ONE_OFF", "prices": [{"currency": "SAR", "amount": 10}, {"currency": "USD", "amount": 3}]}),
    ));
    let path = product_path(&id_of(&p));
    let u = ok(srv.put(&path, json!({"prices": [{"currency": "SAR", "amount": 12}, {"currency": "EUR", "amount": 4}]})));
    let mut currencies: Vec<String> = u["prices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["currency"].as_str().unwrap().to_string())
        .collect();
    currencies.sort();
    assert_eq!(currencies, vec!["EUR", "SAR"], "USD no longer listed: no longer active");
    assert_eq!(u["price"], "12.00");
    // The USD price is gone from the currency filter too.
    assert_eq!(ids(&srv.get("/api/v2/products?currency=USD")), Vec::<String>::new());
    assert_eq!(ids(&srv.get("/api/v2/products?currency=EUR")), vec![id_of(&p)]);
}

fn delete_product(srv: &TestServer) {
    let gone = id_of(&one_off_product(srv, "Gone", "10"));
    let kept = id_of(&one_off_product(srv, "Kept", "10"));
    let r = srv.delete(&product_path(&gone));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({}));
    assert_error(&srv.get(&product_path(&gone)), 404, "NOT_FOUND");
    assert_eq!(ids(&srv.get("/api/v2/products")), vec![kept]);
    let r = srv.unchanged(|| srv.delete(&product_path(&gone)));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.put(&product_path(&gone), json!({"name": "back"})));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.post(&format!("{}/prices", product_path(&gone)), json!({"currency": "USD", "amount": 1})));
    assert_error(&r, 404, "NOT_FOUND");
}

fn price_endpoints(srv: &TestServer) {
    let p = one_off_product(srv, "Priced", "115");
    let pid = id_of(&p);
    let prices = format!("{}/prices", product_path(&pid));

    let usd = ok(srv.post(&prices, json!({"currency": "USD", "amount": 20, "is_price_inclusive_of_vat": false})));
    for f in PRICE_FIELDS {
        assert!(usd.get(f).is_some(), "ProductPriceDto.{f}: {usd}");
    }
    assert_eq!(usd["currency"], "USD");
    assert_eq!(usd["amount"], "20.00");
    assert_eq!(usd["amount_in_smallest_unit"], 2000);
    assert_eq!(usd["is_active"], true);
    assert_eq!(usd["is_price_inclusive_of_vat"], false);
    assert_eq!(usd["is_price_exempt_from_vat"], false);
    assert_eq!(usd["price_excluding_vat"], "20.00");
    assert_eq!(usd["vat_amount"], "3.00");
    assert_eq!(usd["updated_at"], Value::Null);
    let usd_id = id_of(&usd);

    // Defaults: inclusive, not exempt.
    let kwd = ok(srv.post(&prices, json!({"currency": "KWD", "amount": "11.5"})));
    assert_eq!(kwd["amount"], "11.500");
    assert_eq!(kwd["amount_in_smallest_unit"], 11500);
    assert_eq!(kwd["is_price_inclusive_of_vat"], true);
    assert_eq!(kwd["price_excluding_vat"], "10.000");
    assert_eq!(kwd["vat_amount"], "1.500");

    let got = ok(srv.get(&product_path(&pid)));
    assert_eq!(got["prices"].as_array().unwrap().len(), 3);
    assert!(
        got["prices"].as_array().unwrap().contains(&usd),
        "the product shows the new price as created: {got}"
    );
    assert_eq!(got["price"], "115.00", "the SAR price stays the primary one");

    // A second active price in a currency is refused.
    let r = srv.unchanged(|| srv.post(&prices, json!({"currency": "USD", "amount": 21})));
    assert_error(&r, 422, "RESOURCE_ALREADY_EXISTS");
    let cases: Vec<(Value, Value, &str)> = vec![
        (json!({"amount": 1}), json!(["body", "currency"]), "missing"),
        (json!({"currency": "EUR"}), json!(["body", "amount"]), "missing"),
        (json!({"currency": "EURO", "amount": 1}), json!(["body", "currency"]), "enum"),
        (json!({"currency": "EUR", "amount": "1.001"}), json!(["body", "amount"]), "decimal_max_places"),
        (json!({"currency": "EUR", "amount": -1}), json!(["body", "amount"]), "greater_than"),
        (
            json!({"currency": "EUR", "amount": 1, "is_price_inclusive_of_vat": true, "is_price_exempt_from_vat": true}),
            json!(["body", "is_price_exempt_from_vat"]),
            "value_error",
        ),
    ];
    for (body, loc, kind) in cases {
        let r = srv.unchanged(|| srv.post(&prices, body.clone()));
        assert_invalid(&r, loc, Some(kind));
    }

    // Update.
    let one = format!("{prices}/{usd_id}");
    let u = ok(srv.put(&one, json!({"amount": "25.5"})));
    assert_eq!(u["id"], json!(usd_id));
    assert_eq!(u["amount"], "25.50");
    assert_eq!(u["amount_in_smallest_unit"], 2550);
    assert_eq!(u["is_price_inclusive_of_vat"], false, "unchanged flags stay");
    assert_eq!(u["vat_amount"], "3.83");
    assert!(u["updated_at"].is_string());
    let u = ok(srv.put(&one, json!({"is_price_exempt_from_vat": true})));
    assert_eq!(u["is_price_exempt_from_vat"], true);
    assert_eq!(u["vat_amount"], "0.00");
    assert_eq!(u["amount"], "25.50");
    let u = ok(srv.put(&one, json!({"is_price_inclusive_of_vat": true, "amount": 23})));
    assert_eq!(
        (u["is_price_inclusive_of_vat"].clone(), u["is_price_exempt_from_vat"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!((u["price_excluding_vat"].clone(), u["vat_amount"].clone()), (json!("20.00"), json!("3.00")));

    let r = srv.unchanged(|| srv.put(&one, json!({"amount": "1.001"})));
    assert_invalid(&r, json!(["body", "amount"]), Some("decimal_max_places"));
    let r = srv.unchanged(|| srv.put(&one, json!({"amount": 0})));
    assert_invalid(&r, json!(["body", "amount"]), Some("greater_than"));
    let r = srv.unchanged(|| srv.put(&one, json!({"is_price_inclusive_of_vat": true, "is_price_exempt_from_vat": true})));
    assert_invalid(&r, json!(["body", "is_price_exempt_from_vat"]), Some("value_error"));
    let r = srv.unchanged(|| srv.put(&format!("{prices}/{}", random_id()), json!({"amount": 1})));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.put(&format!("{prices}/zzz"), json!({"amount": 1})));
    assert_invalid(&r, json!(["path", "price_id"]), Some("uuid_parsing"));
    // A price of another product is not found through this one.
    let other = one_off_product(srv, "Other", "5");
    let other_price = other["prices"][0]["id"].as_str().unwrap().to_string();
    let r = srv.unchanged(|| srv.put(&format!("{prices}/{other_price}"), json!({"amount": 1})));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.delete(&format!("{prices}/{other_price}")));
    assert_error(&r, 404, "NOT_FOUND");

    // Delete.
    let r = srv.delete(&one);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({}));
    let got = ok(srv.get(&product_path(&pid)));
    assert!(
        got["prices"].as_array().unwrap().iter().all(|x| x["id"] != json!(usd_id)),
        "a deleted price is not listed: {got}"
    );
    assert_eq!(ids(&srv.get("/api/v2/products?currency=USD")), Vec::<String>::new());
    let r = srv.unchanged(|| srv.delete(&one));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.put(&one, json!({"amount": 1})));
    assert_error(&r, 404, "NOT_FOUND");
    // The currency can be priced again, with a new price.
    let again = ok(srv.post(&prices, json!({"currency": "USD", "amount": 9})));
    assert_ne!(again["id"], json!(usd_id));
    assert_eq!(ids(&srv.get("/api/v2/products?currency=USD")), vec![pid]);
}

fn list_filters(srv: &TestServer) {
    let active_one = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Yoga class", "description": "Morning session", "type": "ONE_OFF", "price": 50, "external_metadata": {"cat": "fitness", "level": "1"}}),
    )));
    let inactive_one = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Old mat", "description": "Discontinued YOGA gear", "type": "ONE_OFF", "price": 20, "is_active": false, "external_metadata": {"cat": "gear"}}),
    )));
    let recurring = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Membership", "type": "RECURRING", "recurring_interval": "MONTH", "prices": [{"currency": "SAR", "amount": 300}, {"currency": "USD", "amount": 80}], "external_metadata": {"cat": "fitness", "level": "2"}}),
    )));
    let usd_only_inactive_price = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Towel", "type": "ONE_OFF", "prices": [{"currency": "USD", "amount": 5}]}),
    )));
    let towel_price = ok(srv.get(&product_path(&usd_only_inactive_price)))["prices"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ok(srv.delete(&format!("{}/prices/{towel_price}", product_path(&usd_only_inactive_price))));

    let list = |q: &str| {
        let mut v = ids(&srv.get(&format!("/api/v2/products?{q}")));
        v.sort();
        v
    };
    let set = |v: &[&String]| {
        let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(
        list(""),
        set(&[&active_one, &inactive_one, &recurring, &usd_only_inactive_price]),
        "active omitted: both"
    );
    assert_eq!(list("active=true"), set(&[&active_one, &recurring, &usd_only_inactive_price]));
    assert_eq!(list("active=false"), set(&[&inactive_one]));
    assert_eq!(list("type=ONE_OFF"), set(&[&active_one, &inactive_one, &usd_only_inactive_price]));
    assert_eq!(list("type=RECURRING"), set(&[&recurring]));
    assert_eq!(list("type=ONE_OFF&active=true"), set(&[&active_one, &usd_only_inactive_price]));
    assert_eq!(list("currency=SAR"), set(&[&active_one, &inactive_one, &recurring]));
    assert_eq!(list("currency=USD"), set(&[&recurring]), "only products with an ACTIVE price in it");
    assert_eq!(list("currency=usd"), set(&[&recurring]));
    assert_eq!(list("currency=EUR"), set(&[]));
    assert_eq!(list("currency=ABC"), set(&[]), "a well-formed unknown code matches nothing");
    assert_eq!(
        list("search_term=yoga"),
        set(&[&active_one, &inactive_one]),
        "name or description, case-insensitive"
    );
    assert_eq!(list("search_term=MORNING"), set(&[&active_one]));
    assert_eq!(list("search_term=ship"), set(&[&recurring]));
    assert_eq!(list("search_term=nothing-like-it"), set(&[]));
    assert_eq!(list("external_metadata.cat=fitness"), set(&[&active_one, &recurring]));
    assert_eq!(list("external_metadata.cat=fitness&external_metadata.level=2"), set(&[&recurring]));
    assert_eq!(list("external_metadata.cat=Fitness"), set(&[]), "case-sensitive");
    assert_eq!(list("external_metadata.cat=fitness&active=false"), set(&[]));

    // Pagination reflects the filters.
    let r = srv.get("/api/v2/products?type=ONE_OFF&limit=2");
    assert_eq!(
        r.body["pagination"],
        json!({"total_count": 2, "max_page": 2, "current_page": 1, "limit": 2, "has_next_page": true, "has_previous_page": false})
    );
    let r = srv.get("/api/v2/products?type=ONE_OFF&limit=2&page=2");
    assert_eq!(r.body["pagination"]["total_count"], 1);
    assert_eq!(r.body["pagination"]["has_next_page"], false);
    let r = srv.get("/api/v2/products?limit=1000");
    assert_eq!(r.body["pagination"]["limit"], 100);

    for (q, loc) in [
        ("currency=US", "currency"),
        ("currency=EURO", "currency"),
        ("currency=", "currency"),
        ("active=maybe", "active"),
        ("type=METERED_X", "type"),
        ("sort_field=description", "sort_field"),
        ("sort_direction=sideways", "sort_direction"),
        ("limit=0", "limit"),
        ("page=0", "page"),
    ] {
        let r = srv.get(&format!("/api/v2/products?{q}"));
        assert_invalid(&r, json!(["query", loc]), None);
    }
}

fn list_sorts(srv: &TestServer) {
    let b = id_of(&one_off_product(srv, "Bravo", "30"));
    let c = id_of(&one_off_product(srv, "Charlie", "10"));
    let a = id_of(&one_off_product(srv, "Alpha", "20"));
    let list = |q: &str| ids(&srv.get(&format!("/api/v2/products?{q}")));
    assert_eq!(list(""), vec![a.clone(), c.clone(), b.clone()], "created_at desc by default");
    assert_eq!(list("sort_field=created_at&sort_direction=asc"), vec![b.clone(), c.clone(), a.clone()]);
    assert_eq!(list("sort_field=name&sort_direction=asc"), vec![a.clone(), b.clone(), c.clone()]);
    assert_eq!(list("sort_field=name&sort_direction=desc"), vec![c.clone(), b.clone(), a.clone()]);
    assert_eq!(list("sort_field=price&sort_direction=asc"), vec![c.clone(), a.clone(), b.clone()]);
    assert_eq!(list("sort_field=price&sort_direction=desc"), vec![b.clone(), a.clone(), c.clone()]);
    // A price update re-sorts.
    ok(srv.put(&product_path(&c), json!({"price": "99"})));
    assert_eq!(list("sort_field=price&sort_direction=asc"), vec![a.clone(), b.clone(), c.clone()]);
}

fn product_used_in_finalized_invoice_cannot_change(srv: &TestServer) {
    let p = one_off_product(srv, "Frozen", "100");
    let id = id_of(&p);
    let price_id = p["prices"][0]["id"].as_str().unwrap().to_string();
    freeze_product(srv, &id);
    let got = ok(srv.get(&product_path(&id)));
    assert_eq!(got["is_used_in_finalized_invoice"], true);

    for body in [json!({"name": "Thawed"}), json!({"price": 1}), json!({"is_active": false}), json!({})] {
        let r = srv.unchanged(|| srv.put(&product_path(&id), body.clone()));
        assert_error(&r, 400, "PRODUCT_USED_IN_FINALIZED_INVOICE");
    }
    let r = srv.unchanged(|| srv.post(&format!("{}/prices", product_path(&id)), json!({"currency": "USD", "amount": 1})));
    assert_error(&r, 400, "PRODUCT_USED_IN_FINALIZED_INVOICE");
    let r = srv.unchanged(|| srv.put(&format!("{}/prices/{price_id}", product_path(&id)), json!({"amount": 1})));
    assert_error(&r, 400, "PRODUCT_USED_IN_FINALIZED_INVOICE");
    let r = srv.unchanged(|| srv.delete(&format!("{}/prices/{price_id}", product_path(&id))));
    assert_error(&r, 400, "PRODUCT_USED_IN_FINALIZED_INVOICE");
    assert_eq!(ok(srv.get(&product_path(&id))), got, "nothing changed");
}

/// Amounts the store cannot hold are a client error, not a crash.
fn amounts_out_of_range_are_422(srv: &TestServer) {
    let huge = "100000000000000000"; // 10^17 SAR
    let r = srv.unchanged(|| srv.post("/api/v2/products", json!({"name": "Huge", "type": "ONE_OFF", "price": huge})));
    assert_invalid(&r, json!(["body", "price"]), None);
    let r = srv.unchanged(|| {
        srv.post(
            "/api/v2/products",
            json!({"name": "Huge", "type": "ONE_OFF", "prices": [{"currency": "USD", "amount": huge}]}),
        )
    });
    assert_invalid(&r, json!(["body", "prices", 0, "amount"]), None);
    let p = one_off_product(srv, "Normal", "10");
    let path = product_path(&id_of(&p));
    let r = srv.unchanged(|| srv.put(&path, json!({"price": huge})));
    assert_invalid(&r, json!(["body", "price"]), None);
    let r = srv.unchanged(|| srv.post(&format!("{path}/prices"), json!({"currency": "USD", "amount": huge})));
    assert_invalid(&r, json!(["body", "amount"]), None);
    let price = p["prices"][0]["id"].as_str().unwrap();
    let r = srv.unchanged(|| srv.put(&format!("{path}/prices/{price}"), json!({"amount": huge})));
    assert_invalid(&r, json!(["body", "amount"]), None);
    // The server still works.
    assert_eq!(ok(srv.get(&path)), p);
    // A large but storable amount is fine.
    let big = ok(srv.post("/api/v2/products", json!({"name": "Big", "type": "ONE_OFF", "price": "1000000000"})));
    assert_eq!(big["price"], "1000000000.00");
    assert_eq!(big["amount_in_smallest_unit"], 100000000000u64);
}

fn search_is_case_insensitive_beyond_ascii(srv: &TestServer) {
    let id = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Café Crème", "description": "Über gut", "type": "ONE_OFF", "price": 10}),
    )));
    one_off_product(srv, "Plain", "10");
    for term in ["café", "CAFÉ", "crème", "CRÈME", "über", "ÜBER", "ü"] {
        assert_eq!(
            ids(&srv.get(&format!("/api/v2/products?search_term={}", enc(term)))),
            vec![id.clone()],
            "search_term={term}"
        );
    }
}

fn metadata_filter_on_non_string_values(srv: &TestServer) {
    let id = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Meta", "type": "ONE_OFF", "price": 10, "external_metadata": {"vip": true, "tier": 2, "a.b": "dotted"}}),
    )));
    one_off_product(srv, "Plain", "10");
    for q in ["external_metadata.tier=2", "external_metadata.a.b=dotted", "external_metadata.vip=true"] {
        assert_eq!(ids(&srv.get(&format!("/api/v2/products?{q}"))), vec![id.clone()], "{q}");
    }
    assert_eq!(ids(&srv.get("/api/v2/products?external_metadata.vip=1")), Vec::<String>::new(), "true is not 1");
}

http_tests!(
    one_off_with_vat_inclusive_price,
    vat_exclusive_and_exempt,
    recurring_products,
    prices_per_currency,
    get_unknown_or_malformed,
    update_product,
    update_with_prices_replaces_the_set,
    delete_product,
    price_endpoints,
    list_filters,
    list_sorts,
    product_used_in_finalized_invoice_cannot_change,
    amounts_out_of_range_are_422,
    search_is_case_insensitive_beyond_ascii,
    metadata_filter_on_non_string_values,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(prices_per_currency, update_product, price_endpoints, list_filters, list_sorts,);
