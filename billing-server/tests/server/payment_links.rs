//! /api/v2/payment_links: create (PaymentLinkDetailed, pricing, rules), get, list with its
//! filters, PATCH status and coupons, what an active link holds, branch scope; every refusal
//! with its status, code or `detail` location, and nothing written.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::TestServer;
use billing_core::org::Role;
use hyper::Method;
use serde_json::{json, Value};

const DETAILED_FIELDS: [&str; 35] = [
    "created_at",
    "updated_at",
    "id",
    "name",
    "description",
    "amount",
    "amount_in_smallest_unit",
    "original_amount",
    "item_level_discounted_amount",
    "coupon_calculation_metadata",
    "currency",
    "home_currency_amount",
    "exchange_rate_at_creation",
    "max_number_of_payments",
    "valid_until",
    "confirmation_message",
    "recurring_interval",
    "recurring_interval_count",
    "trial_period_days",
    "status",
    "organization_id",
    "user_id",
    "organization_consumer_id",
    "deactivate_message",
    "custom_fields",
    "success_redirect_url",
    "failure_redirect_url",
    "custom_metadata",
    "contact_information_type",
    "items",
    "coupons",
    "override_payment_methods",
    "url",
    "amount_collected",
    "short_id",
];

const ITEM_FIELDS: [&str; 14] = [
    "created_at",
    "updated_at",
    "id",
    "product_id",
    "quantity",
    "original_amount",
    "discounted_amount",
    "coupon_calculation_metadata",
    "product",
    "allow_custom_quantity",
    "min_quantity",
    "max_quantity",
    "currency",
    "product_price_id",
];

pub fn link_path(id: &str) -> String {
    format!("/api/v2/payment_links/{id}")
}

/// A CreatePaymentLinkDto body for `items` as (product id, quantity).
pub fn link_body(items: &[(&str, u32)]) -> Value {
    json!({
        "name": "Gym membership",
        "items": items.iter().map(|(p, q)| json!({"product_id": p, "quantity": q})).collect::<Vec<_>>(),
        "currency": "SAR",
    })
}

pub fn create_link(srv: &TestServer, body: Value) -> Value {
    ok(srv.post("/api/v2/payment_links", body))
}

fn create_returns_payment_link_detailed(srv: &TestServer) {
    let p = id_of(&one_off_product(srv, "Gym", "115.00"));
    let ten = id_of(&percent_coupon(srv, "TEN", "10"));
    let mut body = link_body(&[(&p, 2)]);
    body["coupons"] = json!([ten]);
    body["description"] = json!("A year of gym");
    body["max_number_of_payments"] = json!(3);
    body["success_redirect_url"] = json!("https://shop.example/ok?order=7");
    body["custom_metadata"] = json!({"order": {"id": 7, "lines": [1, 2]}});
    body["items"][0]["allow_custom_quantity"] = json!(true);
    body["items"][0]["min_quantity"] = json!(1);
    body["items"][0]["max_quantity"] = json!(5);
    let l = create_link(srv, body);
    for f in DETAILED_FIELDS {
        assert!(l.get(f).is_some(), "PaymentLinkDetailed.{f}: {l}");
    }
    for f in ITEM_FIELDS {
        assert!(l["items"][0].get(f).is_some(), "PaymentLinkItemDto.{f}: {l}");
    }
    assert_eq!(l["status"], "ACTIVE");
    assert_eq!(l["original_amount"], "230.00");
    assert_eq!(l["amount"], "207.00");
    assert_eq!(l["amount_in_smallest_unit"], 20700);
    assert_eq!(l["amount_collected"], "0.00");
    assert_eq!(l["coupon_calculation_metadata"]["coupons"][0]["discount_amount"], "23.00");
    assert_eq!(l["coupons"][0]["id"], ten);
    assert_eq!(l["coupons"][0]["discount_value"], "10.00");
    assert_eq!(l["items"][0]["product"]["id"], p);
    assert_eq!(l["items"][0]["quantity"], 2);
    assert_eq!(
        (l["items"][0]["min_quantity"].clone(), l["items"][0]["max_quantity"].clone()),
        (json!(1), json!(5))
    );
    assert_eq!(l["custom_metadata"], json!({"order": {"id": 7, "lines": [1, 2]}}));
    assert_eq!(l["success_redirect_url"], "https://shop.example/ok?order=7");
    assert_eq!(l["contact_information_type"], "PHONE");
    assert_eq!(l["max_number_of_payments"], 3);
    assert_eq!(l["override_payment_methods"]["installment"], true, "the organization's default");
    let short = l["short_id"].as_str().unwrap();
    assert!(short.len() >= 16, "{short}");
    assert_eq!(l["url"], format!("http://127.0.0.1/pay/{short}"));
    time_of(&l["created_at"]);
    assert_eq!(ok(srv.get(&link_path(&id_of(&l)))), l, "GET answers the same document");
    // The same products and coupon make an invoice of the same amount.
    let c = quiet_consumer(srv, "Sara");
    let inv = create_invoice(srv, invoice_body(&c, &[(&p, 2)], &[&ten]));
    assert_eq!(inv["total_amount"], l["amount"]);
}

fn create_refusals_write_nothing(srv: &TestServer) {
    let p = id_of(&one_off_product(srv, "Gym", "115.00"));
    let rec = id_of(&recurring_product(srv, "Monthly", "50.00"));
    let refuse = |body: Value, loc: Value| {
        let r = unchanged(srv, || srv.post("/api/v2/payment_links", body));
        assert_invalid(&r, loc, None);
    };
    refuse(json!({"items": [{"product_id": p}]}), json!(["body", "name"]));
    refuse(json!({"name": "x", "items": []}), json!(["body", "items"]));
    refuse(
        json!({"name": "x", "items": [{"product_id": "nope"}]}),
        json!(["body", "items", 0, "product_id"]),
    );
    let with = |k: &str, v: Value| {
        let mut b = link_body(&[(&p, 1)]);
        b[k] = v;
        b
    };
    refuse(with("success_redirect_url", json!("shop.example/ok")), json!(["body", "success_redirect_url"]));
    refuse(
        with("failure_redirect_url", json!("javascript:alert(1)")),
        json!(["body", "failure_redirect_url"]),
    );
    refuse(with("max_number_of_payments", json!(0)), json!(["body", "max_number_of_payments"]));
    refuse(with("valid_until", json!("2020-01-01T00:00:00Z")), json!(["body", "valid_until"]));
    refuse(with("custom_metadata", json!("flat")), json!(["body", "custom_metadata"]));
    refuse(with("contact_information_type", json!("FAX")), json!(["body", "contact_information_type"]));
    refuse(with("currency", json!("XXX")), json!(["body", "currency"]));
    let mut q = link_body(&[(&p, 9)]);
    q["items"][0]["max_quantity"] = json!(3);
    refuse(q, json!(["body", "items", 0, "quantity"]));
    // Rules that need the store: mixed products, no price in the currency.
    refuse(link_body(&[(&p, 1), (&rec, 1)]), json!(["body", "items"]));
    refuse(with("currency", json!("USD")), json!(["body", "items", 0, "product_id"]));
    let r = unchanged(srv, || srv.post("/api/v2/payment_links", with("organization_consumer_id", json!(random_id()))));
    assert_error(&r, 404, "NOT_FOUND");
    let r = unchanged(srv, || srv.post("/api/v2/payment_links", link_body(&[(&random_id(), 1)])));
    assert_error(&r, 404, "NOT_FOUND");
    assert_eq!(ids(&srv.get("/api/v2/payment_links")), Vec::<String>::new());
}

fn recurring_link_takes_the_interval(srv: &TestServer) {
    let a = id_of(&recurring_product(srv, "Monthly A", "50.00"));
    let b = id_of(&recurring_product(srv, "Monthly B", "20.00"));
    let mut body = link_body(&[(&a, 1), (&b, 1)]);
    body["payment_methods"] = json!({"visa": true, "mastercard": true, "installment": true});
    let l = create_link(srv, body);
    assert_eq!(
        (l["recurring_interval"].clone(), l["recurring_interval_count"].clone()),
        (json!("MONTH"), json!(1))
    );
    assert_eq!(l["override_payment_methods"]["installment"], false, "no installments for recurring products");
    assert_eq!(l["override_payment_methods"]["visa"], true);
    assert_eq!(l["amount"], "70.00");
}

fn list_filters(srv: &TestServer) {
    let a = id_of(&one_off_product(srv, "A", "10.00"));
    let b = id_of(&one_off_product(srv, "B", "30.00"));
    let mut made = vec![];
    for (name, p, q) in [("Alpha", &a, 1), ("Beta pass", &b, 1), ("Gamma", &a, 5)] {
        let mut body = link_body(&[(p, q)]);
        body["name"] = json!(name);
        made.push(id_of(&create_link(srv, body)));
    }
    let list = |q: &str| ids(&srv.get(&format!("/api/v2/payment_links?{q}")));
    assert_eq!(list(""), vec![made[2].clone(), made[1].clone(), made[0].clone()]);
    assert_eq!(list("from_price=30&to_price=%2250.00%22"), vec![made[2].clone(), made[1].clone()]);
    assert_eq!(list("sort_field=amount&sort_direction=asc&limit=1&page=2"), vec![made[1].clone()]);
    assert_eq!(list(&format!("product_ids={b}")), vec![made[1].clone()]);
    assert_eq!(list(&format!("product_ids={a}&product_ids={b}")).len(), 3);
    assert_eq!(list("search_term=PASS"), vec![made[1].clone()]);
    assert_eq!(list("statuses=INACTIVE"), Vec::<String>::new());
    assert_eq!(list("from_date=2000-01-01T00:00:00Z&to_date=2100-01-01T00:00:00Z").len(), 3);
    let r = srv.get("/api/v2/payment_links?limit=2");
    assert_eq!(r.body["pagination"]["total_count"], 2);
    assert_eq!(r.body["pagination"]["max_page"], 2);
    assert_eq!(r.body["data"][0]["items"][0]["product"]["name"], "A");
    assert_invalid(&srv.get("/api/v2/payment_links?statuses=NOPE"), json!(["query", "statuses"]), Some("enum"));
    assert_invalid(&srv.get("/api/v2/payment_links?product_ids=x"), json!(["query", "product_ids"]), None);
    assert_invalid(&srv.get("/api/v2/payment_links?from_price=abc"), json!(["query", "from_price"]), None);
}

/// Puts a link in `status` straight in the store (COMPLETED comes from payments).
pub fn set_link_status(srv: &TestServer, id: &str, status: billing_core::payment_link::PaymentLinkStatus) {
    use billing_core::store::Store;
    let branch = srv.boot.branch.id;
    srv.app
        .billing
        .engine()
        .store
        .write(|tx| {
            let mut l = tx.payment_link(branch, id.parse().unwrap())?.expect("link");
            l.status = status;
            tx.update_payment_link(&l)?;
            Ok(())
        })
        .unwrap();
}

fn status_and_coupons(srv: &TestServer) {
    let p = id_of(&one_off_product(srv, "Gym", "100.00"));
    let five = id_of(&fixed_coupon(srv, "FIVE", "5", "SAR"));
    let l = create_link(srv, link_body(&[(&p, 2)]));
    let id = id_of(&l);
    let status = |body: Value| srv.call(Method::PATCH, &format!("{}/status", link_path(&id)), Some(body));
    let off = ok(status(json!({"status": "INACTIVE", "deactivate_message": "Sold out"})));
    assert_eq!(
        (off["status"].clone(), off["deactivate_message"].clone()),
        (json!("INACTIVE"), json!("Sold out"))
    );
    let on = ok(status(json!({"status": "ACTIVE"})));
    assert_eq!((on["status"].clone(), on["deactivate_message"].clone()), (json!("ACTIVE"), Value::Null));
    let r = unchanged(srv, || status(json!({"status": "COMPLETED"})));
    assert_invalid(&r, json!(["body", "status"]), Some("value_error"));
    let r = unchanged(srv, || status(json!({})));
    assert_invalid(&r, json!(["body", "status"]), Some("missing"));
    // Coupons: the link's and an item's, priced again.
    let item = l["items"][0]["id"].as_str().unwrap().to_string();
    let coupons = |body: Value| srv.call(Method::PATCH, &format!("{}/coupons", link_path(&id)), Some(body));
    let got = ok(coupons(
        json!({"coupons": [five], "items": [{"payment_link_item_id": item, "coupons": [five]}]}),
    ));
    assert_eq!(got["items"][0]["discounted_amount"], "195.00");
    assert_eq!(got["amount"], "190.00");
    assert_eq!(got["amount_in_smallest_unit"], 19000);
    assert_eq!(got["coupons"][0]["id"], five);
    assert_eq!(ok(srv.get(&link_path(&id))), got);
    let r = unchanged(srv, || coupons(json!({"items": [{"payment_link_item_id": random_id()}]})));
    assert_invalid(&r, json!(["body", "items", 0, "payment_link_item_id"]), Some("value_error"));
    let r = unchanged(srv, || coupons(json!({"coupons": [random_id()]})));
    assert_error(&r, 404, "NOT_FOUND");
    // A completed link: refused with a stable code, nothing changed.
    set_link_status(srv, &id, billing_core::payment_link::PaymentLinkStatus::Completed);
    for body in [json!({"status": "INACTIVE"}), json!({"status": "ACTIVE"})] {
        let r = unchanged(srv, || status(body));
        assert_error(&r, 400, "INVALID_STATUS");
    }
    assert_error(&unchanged(srv, || coupons(json!({"coupons": []}))), 400, "INVALID_STATUS");
    let r = srv.call(Method::PATCH, &format!("{}/status", link_path(&random_id())), Some(json!({"status": "ACTIVE"})));
    assert_error(&r, 404, "NOT_FOUND");
}

fn active_link_holds_its_consumer_and_branch(srv: &TestServer) {
    let b = branch(srv, "Shop");
    let c = id_of(&ok(in_branch(
        srv,
        &b,
        Method::POST,
        "/api/v2/consumers",
        Some(json!({"name": "Sara", "email": "s@example.com"})),
    )));
    let p = id_of(&ok(in_branch(
        srv,
        &b,
        Method::POST,
        "/api/v2/products",
        Some(json!({"name": "Gym", "type": "ONE_OFF", "price": "10.00"})),
    )));
    let mut body = link_body(&[(&p, 1)]);
    body["organization_consumer_id"] = json!(c);
    let l = ok(in_branch(srv, &b, Method::POST, "/api/v2/payment_links", Some(body)));
    assert_eq!(l["organization_consumer_id"], c);
    let r = unchanged(srv, || in_branch(srv, &b, Method::DELETE, &format!("/api/v2/consumers/{c}"), None));
    assert_error(&r, 400, "CONSUMER_HAS_ACTIVE_PAYMENT_LINKS");
    let r = unchanged(srv, || srv.delete(&format!("/api/v2/branch/{b}")));
    assert_error(&r, 400, "BRANCH_IN_USE");
    assert!(r.body["error"]["additional_info"].as_str().unwrap().contains("payment link"), "{}", r.text);
    // Another branch does not see it; a branch user of its branch does, and may create links.
    assert_error(&srv.get(&link_path(&id_of(&l))), 404, "NOT_FOUND");
    let (_, token) = user_token(srv, "clerk@example.com", Role::BranchUser, &[&b]);
    let seen = ok(call_bearer(srv, &token, Some(&b), Method::GET, &link_path(&id_of(&l)), None));
    assert_eq!(seen["id"], l["id"]);
    ok(call_bearer(
        srv,
        &token,
        Some(&b),
        Method::POST,
        "/api/v2/payment_links",
        Some(link_body(&[(&p, 2)])),
    ));
    let r = call_bearer(srv, &token, Some(&srv.branch_id()), Method::GET, "/api/v2/payment_links", None);
    assert_error(&r, 403, "PERMISSION_FORBIDDEN");
    let path = format!("{}/status", link_path(&id_of(&l)));
    ok(in_branch(srv, &b, Method::PATCH, &path, Some(json!({"status": "INACTIVE"}))));
    ok(in_branch(srv, &b, Method::DELETE, &format!("/api/v2/consumers/{c}"), None));
}

http_tests!(
    create_returns_payment_link_detailed,
    create_refusals_write_nothing,
    recurring_link_takes_the_interval,
    list_filters,
    status_and_coupons,
    active_link_holds_its_consumer_and_branch,
);

postgres_smoke!(create_returns_payment_link_detailed, list_filters, status_and_coupons);
