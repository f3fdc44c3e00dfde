//! /api/v2/invoices: create (exact totals, coupons, VAT), get, list with every filter, in-place
//! update, void, send, the freeze of products and coupons, and every refusal (status, code,
//! nothing changed).

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::TestServer;
use hyper::Method;
use serde_json::{json, Value};

const DETAILED_FIELDS: [&str; 47] = [
    "created_at",
    "updated_at",
    "id",
    "payment_link_id",
    "user_id",
    "organization_id",
    "organization_consumer_id",
    "account_id",
    "branch_id",
    "org_invoice_number",
    "description",
    "total_amount",
    "original_amount",
    "item_level_discounted_amount",
    "total_vat_amount",
    "total_price_excluding_vat",
    "coupon_calculation_metadata",
    "currency",
    "home_currency_amount",
    "home_currency_amount_actual",
    "exchange_rate_at_creation",
    "consumer_message",
    "status",
    "payment_method",
    "allowed_payment_flow",
    "current_payment_flow",
    "period_start",
    "period_end",
    "recurring_interval",
    "recurring_interval_count",
    "type",
    "invoice_number",
    "remaining_amount",
    "paid_amount",
    "exclude_coupons_if_installments",
    "organization_consumer",
    "items",
    "branch",
    "payments",
    "subscription_id",
    "subscription",
    "payment_methods",
    "recurrence_pattern",
    "parent_id",
    "custom_field_answers",
    "url",
    "scheduled_on",
];

fn create_returns_invoice_detailed(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    let p = id_of(&one_off_product(srv, "Gym", "115.00"));
    let inv = create_invoice(srv, invoice_body(&c, &[(&p, 2)], &[]));
    for f in DETAILED_FIELDS {
        assert!(inv.get(f).is_some(), "InvoiceDetailed.{f}: {inv}");
    }
    assert_eq!(inv["status"], "CREATED");
    assert_eq!(inv["org_invoice_number"], 1);
    assert_eq!(inv["total_amount"], "230.00");
    assert_eq!(inv["original_amount"], "230.00");
    assert_eq!(inv["item_level_discounted_amount"], "230.00");
    assert_eq!(inv["total_vat_amount"], "30.00");
    assert_eq!(inv["total_price_excluding_vat"], "200.00");
    assert_eq!(inv["paid_amount"], "0.00");
    assert_eq!(inv["remaining_amount"], "230.00");
    assert_eq!(inv["currency"], "SAR");
    assert_eq!(inv["organization_consumer"]["name"], "Sara");
    assert_eq!(inv["branch"]["id"], srv.branch_id());
    assert_eq!(inv["url"], format!("http://127.0.0.1/pay/invoices/{}", id_of(&inv)));
    assert_eq!(inv["payment_methods"]["installment"], true);
    assert_eq!(inv["coupon_calculation_metadata"], json!({"coupons": []}));
    let item = &inv["items"][0];
    assert_eq!(
        (item["quantity"].clone(), item["unit_price"].clone(), item["original_amount"].clone()),
        (json!(2), json!("115.00"), json!("230.00"))
    );
    assert_eq!(item["product"]["id"], p);
    let pays = inv["payments"].as_array().unwrap();
    assert_eq!(pays.len(), 1);
    assert_eq!(pays[0]["amount"], "230.00");
    assert_eq!(pays[0]["amount_in_smallest_unit"], 23000);
    assert_eq!(pays[0]["current_status"], "PENDING");
    assert_eq!(pays[0]["type"], "INITIAL");
    assert_eq!(pays[0]["scheduled_on"], "2026-12-01T00:00:00.000000Z");
    time_of(&inv["created_at"]);
    // GET answers the same document.
    assert_eq!(ok(srv.get(&invoice_path(&id_of(&inv)))), inv);
    // Numbers go on per organization.
    assert_eq!(create_invoice(srv, invoice_body(&c, &[(&p, 1)], &[]))["org_invoice_number"], 2);
}

fn coupons_and_vat_are_exact(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    let inc = id_of(&one_off_product(srv, "Inclusive", "115.00"));
    let exc = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Exclusive", "type": "ONE_OFF", "price": "100.00", "is_price_inclusive_of_vat": false}),
    )));
    let exempt = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Exempt", "type": "ONE_OFF", "price": 50, "is_price_exempt_from_vat": true}),
    )));
    let ten = id_of(&percent_coupon(srv, "TEN", "10"));
    let five = id_of(&fixed_coupon(srv, "FIVE", "5", "SAR"));
    let mut body = invoice_body(&c, &[(&inc, 2), (&exc, 1), (&exempt, 1)], &[&five]);
    body["items"][0]["coupons"] = json!([ten]);
    let inv = create_invoice(srv, body);
    assert_eq!(inv["original_amount"], "380.00");
    assert_eq!(inv["item_level_discounted_amount"], "357.00");
    let meta = &inv["coupon_calculation_metadata"]["coupons"][0];
    assert_eq!(
        (
            meta["amount_before_discount"].clone(),
            meta["discount_amount"].clone(),
            meta["amount_after_discount"].clone(),
            meta["order"].clone()
        ),
        (json!("357.00"), json!("5.00"), json!("352.00"), json!(1))
    );
    let item_meta = &inv["items"][0]["coupon_calculation_metadata"]["coupons"][0];
    assert_eq!(
        (item_meta["discount_amount"].clone(), item_meta["amount_after_discount"].clone()),
        (json!("23.00"), json!("207.00"))
    );
    assert_eq!(inv["items"][0]["discounted_amount"], "207.00");
    // The 5.00 invoice discount is spread over the items in proportion (207 : 100 : 50 of 357):
    // 2.90, 1.40 and 0.70. VAT: inclusive 204.10 → 26.62; exclusive 98.60 → 14.79; exempt 0.
    assert_eq!(inv["total_vat_amount"], "41.41");
    assert_eq!(inv["total_amount"], "366.79");
    assert_eq!(inv["total_price_excluding_vat"], "325.38");
    // A coupon larger than everything stops at zero.
    let huge = id_of(&fixed_coupon(srv, "HUGE", "100000", "SAR"));
    let zero = create_invoice(srv, invoice_body(&c, &[(&inc, 1)], &[&huge]));
    assert_eq!((zero["total_amount"].clone(), zero["total_vat_amount"].clone()), (json!("0.00"), json!("0.00")));
}

fn notify_consumer_sends(srv: &TestServer) {
    let c = consumer_with_email(srv, 1);
    let p = id_of(&one_off_product(srv, "Gym", "115.00"));
    let mut body = invoice_body(&c, &[(&p, 1)], &[]);
    body["notify_consumer"] = json!(true);
    let inv = create_invoice(srv, body);
    assert_eq!(inv["status"], "SENT");
    let ev: Vec<String> = events(srv).into_iter().map(|e| e.0).collect();
    assert_eq!(ev, vec!["INVOICE_CREATED", "INVOICE_SENT"]);
    // notify_consumer defaults to true; a consumer without a channel stays CREATED.
    let quiet = quiet_consumer(srv, "No Channel");
    let mut body = invoice_body(&quiet, &[(&p, 1)], &[]);
    body.as_object_mut().unwrap().remove("notify_consumer");
    assert_eq!(create_invoice(srv, body)["status"], "CREATED");
}

fn create_refusals_change_nothing(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    let p = id_of(&one_off_product(srv, "Gym", "115.00"));
    let r = unchanged(srv, || srv.post("/api/v2/invoices", json!({"payment_methods": payment_methods(false)})));
    assert_invalid(&r, json!(["body", "items"]), Some("missing"));
    assert_invalid(&r, json!(["body", "organization_consumer_id"]), Some("missing"));
    let r = unchanged(srv, || srv.post("/api/v2/invoices", json!({"organization_consumer_id": c, "items": []})));
    assert_invalid(&r, json!(["body", "items"]), Some("too_short"));
    let r = unchanged(srv, || {
        srv.post(
            "/api/v2/invoices",
            json!({"organization_consumer_id": c, "items": [{"product_id": p, "quantity": 0}]}),
        )
    });
    assert_invalid(&r, json!(["body", "items", 0, "quantity"]), None);
    let r = unchanged(srv, || {
        srv.post(
            "/api/v2/invoices",
            json!({"organization_consumer_id": "nope", "items": [{"product_id": p, "quantity": 1}]}),
        )
    });
    assert_invalid(&r, json!(["body", "organization_consumer_id"]), Some("uuid_parsing"));
    let mut usd = invoice_body(&c, &[(&p, 1)], &[]);
    usd["currency"] = json!("USD");
    let r = unchanged(srv, || srv.post("/api/v2/invoices", usd.clone()));
    assert_invalid(&r, json!(["body", "items", 0, "product_id"]), Some("value_error"));
    let r = unchanged(srv, || srv.post("/api/v2/invoices", invoice_body(&random_id(), &[(&p, 1)], &[])));
    assert_error(&r, 404, "NOT_FOUND");
    let r = unchanged(srv, || srv.post("/api/v2/invoices", invoice_body(&c, &[(&random_id(), 1)], &[])));
    assert_error(&r, 404, "NOT_FOUND");
    let r = unchanged(srv, || srv.post("/api/v2/invoices", invoice_body(&c, &[(&p, 1)], &[&random_id()])));
    assert_error(&r, 404, "NOT_FOUND");
    let usd_coupon = id_of(&fixed_coupon(srv, "USD5", "5", "USD"));
    let r = unchanged(srv, || srv.post("/api/v2/invoices", invoice_body(&c, &[(&p, 1)], &[&usd_coupon])));
    assert_invalid(&r, json!(["body", "coupons", 0]), Some("value_error"));
    // Quantity × price beyond the largest amount: 422, not an overflow.
    let dear = id_of(&one_off_product(srv, "Dear", "999999999999.00"));
    let r = unchanged(srv, || srv.post("/api/v2/invoices", invoice_body(&c, &[(&dear, 1_000_000)], &[])));
    assert_invalid(&r, json!(["body", "items"]), Some("less_than_equal"));
    let r = unchanged(srv, || srv.get(&invoice_path(&random_id())));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.get(&invoice_path("not-a-uuid"));
    assert_invalid(&r, json!(["path", "invoice_id"]), Some("uuid_parsing"));
    // Refused creates used no number.
    assert_eq!(create_invoice(srv, invoice_body(&c, &[(&p, 1)], &[]))["org_invoice_number"], 1);
}

fn numbers(r: &Value) -> Vec<i64> {
    r["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["org_invoice_number"].as_i64().unwrap())
        .collect()
}

fn list_filters(srv: &TestServer) {
    let a = quiet_consumer(srv, "Amal Otaibi");
    let b = quiet_consumer(srv, "Omar Zahrani");
    let p = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "P", "type": "ONE_OFF", "price": "10.00", "prices": [{"currency": "USD", "amount": "20.00"}]}),
    )));
    let mut ids = vec![];
    for (k, (cons, qty, cur, desc)) in [(&a, 1, "SAR", "gym"), (&b, 3, "SAR", "Pool pass"), (&a, 5, "USD", "yoga")]
        .into_iter()
        .enumerate()
    {
        let mut body = invoice_body(cons, &[(&p, qty)], &[]);
        body["currency"] = json!(cur);
        body["description"] = json!(desc);
        body["scheduled_on"] = json!(format!("2026-12-0{}T00:00:00Z", k + 1));
        ids.push(id_of(&create_invoice(srv, body)));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let list = |q: &str| ok(srv.get(&format!("/api/v2/invoices?{q}")));
    let all = list("");
    assert_eq!(numbers(&all), vec![3, 2, 1]);
    let first = &all["data"][0];
    for f in [
        "total_number_of_payments",
        "last_payment_paid_at",
        "remaining_amount_in_smallest_unit",
        "paid_amount",
        "organization_consumer",
        "payments",
    ] {
        assert!(first.get(f).is_some(), "InvoiceListItem.{f}");
    }
    assert_eq!(first["payments"], Value::Null, "payments only with include_payments");
    assert_eq!(list("include_payments=true")["data"][0]["payments"].as_array().unwrap().len(), 1);
    assert_eq!(all["pagination"]["total_count"], 3);
    assert_eq!(numbers(&list("sort_field=total_amount&sort_direction=asc")), vec![1, 2, 3]);
    assert_eq!(numbers(&list("sort_field=org_invoice_number&sort_direction=asc&limit=2&page=2")), vec![3]);
    assert_eq!(list("limit=2")["pagination"]["has_next_page"], true);
    assert_eq!(numbers(&list("currencies=USD")), vec![3]);
    assert_eq!(numbers(&list("currencies=USD%2CSAR&sort_direction=asc")), vec![1, 2, 3]);
    assert_eq!(numbers(&list("from_price=20&to_price=50")), vec![2]);
    assert_eq!(numbers(&list("from_price=%2220.00%22")), vec![3, 2], "a numeric string");
    assert_eq!(numbers(&list("from_price=20.00&to_price=30")), vec![2]);
    assert_eq!(numbers(&list(&format!("organization_consumer_id={a}"))), vec![3, 1]);
    assert_eq!(numbers(&list("search_term=POOL")), vec![2]);
    assert_eq!(numbers(&list("search_term=omar")), vec![2]);
    assert_eq!(numbers(&list("due_date_from=2026-12-02T00:00:00Z&due_date_to=2026-12-02T12:00:00Z")), vec![2]);
    assert_eq!(numbers(&list("from_date=2000-01-01T00:00:00Z&to_date=2100-01-01T00:00:00Z")), vec![3, 2, 1]);
    assert_eq!(numbers(&list("to_date=2000-01-01T00:00:00Z")), Vec::<i64>::new());
    assert_eq!(numbers(&list("statuses=CREATED&statuses=SENT")), vec![3, 2, 1]);
    assert_eq!(numbers(&list("statuses=COMPLETED")), Vec::<i64>::new());
    assert_eq!(numbers(&list(&format!("payment_link_id={}", random_id()))), Vec::<i64>::new());
    assert_eq!(numbers(&list(&format!("subscription_id={}", random_id()))), Vec::<i64>::new());
    ok(mark_paid(srv, &first_payment(&ok(srv.get(&invoice_path(&ids[0])))), "CASH"));
    assert_eq!(numbers(&list("payment_statuses=SUCCEEDED")), vec![1]);
    assert_eq!(numbers(&list("payment_statuses=PENDING&payment_statuses=FAILED")), vec![3, 2]);
    assert_eq!(numbers(&list("statuses=COMPLETED")), vec![1]);
    assert_eq!(
        numbers(&list("payments_not_settled=true")),
        Vec::<i64>::new(),
        "cash is not a card or wallet payment"
    );
    assert_eq!(numbers(&list("payments_not_settled=false")), vec![3, 2, 1]);
    for (q, loc) in [
        ("statuses=NOPE", "statuses"),
        ("payment_statuses=NOPE", "payment_statuses"),
        ("from_price=abc", "from_price"),
        ("currencies=XXX", "currencies"),
        ("from_date=yesterday", "from_date"),
        ("organization_consumer_id=x", "organization_consumer_id"),
        ("sort_field=nope", "sort_field"),
        ("page=0", "page"),
    ] {
        assert_invalid(&srv.get(&format!("/api/v2/invoices?{q}")), json!(["query", loc]), None);
    }
}

fn inplace_update(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let id = id_of(&inv);
    let r = ok(srv.call(
        Method::PATCH,
        &format!("{}/inplace", invoice_path(&id)),
        Some(json!({"description": "Updated", "scheduled_on": "2027-01-02T03:04:05Z"})),
    ));
    assert_eq!(r["description"], "Updated");
    assert_eq!(r["scheduled_on"], "2027-01-02T03:04:05.000000Z");
    assert_eq!(r["payments"][0]["scheduled_on"], "2027-01-02T03:04:05.000000Z");
    time_of(&r["updated_at"]);
    // Only the supplied fields change.
    let r = ok(srv.call(Method::PATCH, &format!("{}/inplace", invoice_path(&id)), Some(json!({"scheduled_on": null}))));
    assert_eq!(r["description"], "Updated");
    let bad = unchanged(srv, || {
        srv.call(Method::PATCH, &format!("{}/inplace", invoice_path(&id)), Some(json!({"scheduled_on": "soon"})))
    });
    assert_invalid(&bad, json!(["body", "scheduled_on"]), Some("value_error"));
    let r = unchanged(srv, || {
        srv.call(
            Method::PATCH,
            &format!("{}/inplace", invoice_path(&random_id())),
            Some(json!({"description": "x"})),
        )
    });
    assert_error(&r, 404, "NOT_FOUND");
    ok(mark_paid(srv, &first_payment(&inv), "CASH"));
    let r = unchanged(srv, || {
        srv.call(Method::PATCH, &format!("{}/inplace", invoice_path(&id)), Some(json!({"description": "late"})))
    });
    assert_error(&r, 400, "INVOICE_FINALISED");
}

fn void_cancels_unpaid_payments(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let id = id_of(&inv);
    let r = ok(srv.post(&format!("{}/void", invoice_path(&id)), json!({})));
    assert_eq!(r["status"], "CANCELED");
    assert_eq!(r["payments"][0]["current_status"], "CANCELED");
    let r = unchanged(srv, || srv.post(&format!("{}/void", invoice_path(&id)), json!({})));
    assert_error(&r, 400, "INVOICE_FINALISED");
    let r = unchanged(srv, || mark_paid(srv, &first_payment(&inv), "CASH"));
    assert_error(&r, 400, "PAYMENT_FINALIZED");
    let r = unchanged(srv, || srv.post(&format!("{}/void", invoice_path(&random_id())), json!({})));
    assert_error(&r, 404, "NOT_FOUND");
    // A paid invoice cannot be voided.
    let paid = simple_invoice(srv, "10.00");
    ok(mark_paid(srv, &first_payment(&paid), "BANK_TRANSFER"));
    let r = unchanged(srv, || srv.post(&format!("{}/void", invoice_path(&id_of(&paid))), json!({})));
    assert_error(&r, 400, "INVOICE_FINALISED");
}

fn send_invoice(srv: &TestServer) {
    let c = consumer_with_email(srv, 7);
    let p = id_of(&one_off_product(srv, "Gym", "115.00"));
    let inv = create_invoice(srv, invoice_body(&c, &[(&p, 1)], &[]));
    assert_eq!(inv["status"], "CREATED");
    let r = ok(srv.post(&format!("{}/send", invoice_path(&id_of(&inv))), json!({})));
    assert_eq!(r["status"], "SENT");
    let r = ok(srv.post(&format!("{}/send", invoice_path(&id_of(&inv))), json!({})));
    assert_eq!(r["status"], "SENT", "a resend keeps SENT");
    let quiet = simple_invoice(srv, "10.00");
    let r = unchanged(srv, || srv.post(&format!("{}/send", invoice_path(&id_of(&quiet))), json!({})));
    assert_error(&r, 400, "INVALID_PARAMETERS");
    ok(srv.post(&format!("{}/void", invoice_path(&id_of(&inv))), json!({})));
    let r = unchanged(srv, || srv.post(&format!("{}/send", invoice_path(&id_of(&inv))), json!({})));
    assert_error(&r, 400, "INVOICE_FINALISED");
    assert_eq!(srv.call(Method::GET, &format!("{}/send", invoice_path(&id_of(&inv))), None).status, 405);
}

fn finalised_invoice_freezes_products_and_coupons(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    let p = id_of(&one_off_product(srv, "Gym", "115.00"));
    let cp = id_of(&percent_coupon(srv, "TEN", "10"));
    let inv = create_invoice(srv, invoice_body(&c, &[(&p, 1)], &[&cp]));
    // Not finalised yet: the product can still change.
    ok(srv.put(&format!("/api/v2/products/{p}"), json!({"description": "still editable"})));
    ok(mark_paid(srv, &first_payment(&inv), "CASH"));
    let r = unchanged(srv, || srv.put(&format!("/api/v2/products/{p}"), json!({"name": "Changed"})));
    assert_error(&r, 400, "PRODUCT_USED_IN_FINALIZED_INVOICE");
    let r = unchanged(srv, || srv.put(&format!("/api/v2/coupons/{cp}"), json!({"name": "Changed"})));
    assert_error(&r, 400, "COUPON_USED_IN_FINALIZED_INVOICE");
    assert_eq!(ok(srv.get(&format!("/api/v2/products/{p}")))["is_used_in_finalized_invoice"], true);
}

fn consumer_with_open_invoice_cannot_be_deleted(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let c = inv["organization_consumer_id"].as_str().unwrap().to_string();
    let r = unchanged(srv, || srv.delete(&format!("/api/v2/consumers/{c}")));
    assert_error(&r, 400, "CONSUMER_HAS_ONGOING_INVOICES");
    ok(srv.post(&format!("{}/void", invoice_path(&id_of(&inv))), json!({})));
    assert_eq!(srv.delete(&format!("/api/v2/consumers/{c}")).status, 200);
}

fn other_branch_does_not_see_invoices(srv: &TestServer) {
    let inv = simple_invoice(srv, "115.00");
    let other = branch(srv, "Jeddah");
    let r = in_branch(srv, &other, Method::GET, &invoice_path(&id_of(&inv)), None);
    assert_error(&r, 404, "NOT_FOUND");
    let r = in_branch(srv, &other, Method::GET, "/api/v2/invoices", None);
    assert_eq!(ok(r)["data"], json!([]));
    let r = in_branch(srv, &other, Method::GET, &payment_path(&first_payment(&inv)), None);
    assert_error(&r, 404, "NOT_FOUND");
}

http_tests!(
    create_returns_invoice_detailed,
    coupons_and_vat_are_exact,
    notify_consumer_sends,
    create_refusals_change_nothing,
    list_filters,
    inplace_update,
    void_cancels_unpaid_payments,
    send_invoice,
    finalised_invoice_freezes_products_and_coupons,
    consumer_with_open_invoice_cannot_be_deleted,
    other_branch_does_not_see_invoices,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(
    create_returns_invoice_detailed,
    create_refusals_change_nothing,
    list_filters,
    void_cancels_unpaid_payments,
);
