//! /api/v2/subscriptions: create (SubscriptionDetailed, the first invoice, the rules of its
//! products), get, list with its filters, cancel and uncancel with their statuses and codes,
//! activation by paying the first invoice (mark-paid and card), renewals driven by the sandbox
//! clock (13 monthly invoices with their periods, charged to the card on file), a renewal that
//! concurrent clock advances run only once, branch scope; every refusal with its status, code or
//! `detail` location, and nothing written.

use crate::common::fixtures::*;
use crate::common::invoice_fixtures::*;
use crate::common::TestServer;
use hyper::Method;
use serde_json::{json, Value};

const ADVANCE: &str = "/api/v2/sandbox/clock/advance";

const DETAILED_FIELDS: [&str; 33] = [
    "created_at",
    "updated_at",
    "id",
    "description",
    "amount",
    "original_amount",
    "item_level_discounted_amount",
    "coupon_calculation_metadata",
    "remaining_days",
    "currency",
    "home_currency_amount",
    "exchange_rate_at_creation",
    "recurring_interval",
    "recurring_interval_count",
    "status",
    "current_period_start",
    "current_period_end",
    "current_cycle_number",
    "cancel_at_period_end",
    "cancel_at_cycle_number",
    "started_at",
    "ended_at",
    "user_id",
    "organization_consumer_id",
    "latest_invoice_id",
    "trial_period_days",
    "trial_end",
    "organization_consumer",
    "items",
    "latest_invoice",
    "latest_freeze",
    "override_payment_methods",
    "pending_change",
];

fn sub_path(id: &str) -> String {
    format!("/api/v2/subscriptions/{id}")
}

fn sub_body(consumer: &str, items: &[(&str, u32)], period_start: &str) -> Value {
    json!({
        "organization_consumer_id": consumer,
        "items": items.iter().map(|(p, q)| json!({"product_id": p, "quantity": q})).collect::<Vec<_>>(),
        "period_start": period_start,
    })
}

fn create_sub(srv: &TestServer, body: Value) -> Value {
    ok(srv.post("/api/v2/subscriptions", body))
}

/// The sandbox clock now.
fn clock(srv: &TestServer) -> String {
    ok(srv.get("/api/v2/sandbox/clock"))["now"].as_str().unwrap().to_string()
}

/// The invoices of a subscription, oldest first.
fn sub_invoices(srv: &TestServer, id: &str) -> Vec<Value> {
    let r = ok(srv.get(&format!(
        "/api/v2/invoices?subscription_id={id}&limit=100&sort_direction=asc&include_payments=true"
    )));
    r["data"].as_array().unwrap().clone()
}

fn save_card(srv: &TestServer, consumer: &str, number: &str) {
    srv.app
        .billing
        .payments()
        .save_card(&admin_scope(srv), consumer.parse().unwrap(), number, 12, 2040, true)
        .unwrap();
}

fn create_returns_subscription_detailed(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    let gym = recurring_product(srv, "Gym", "115.00");
    let ten = percent_coupon(srv, "TEN", "10");
    let mut body = sub_body(&c, &[(id_of(&gym).as_str(), 2)], "2027-01-31T10:00:00+03:00");
    body["coupons"] = json!([id_of(&ten)]);
    body["description"] = json!("Gym for two");
    body["until_cycle_number"] = json!(12);
    body["override_payment_methods"] = json!({"bank_transfer": true, "subscription_auto_renewal": false});
    let v = create_sub(srv, body);
    for f in DETAILED_FIELDS {
        assert!(v.get(f).is_some(), "SubscriptionDetailed lacks {f}: {v}");
    }
    assert_eq!(v["status"], "INACTIVE");
    assert_eq!(v["amount"], "207.00");
    assert_eq!(v["original_amount"], "230.00");
    assert_eq!(v["amount_in_smallest_unit"], 20700);
    assert_eq!(
        (v["recurring_interval"].as_str(), v["recurring_interval_count"].as_u64()),
        (Some("MONTH"), Some(1))
    );
    assert_eq!(v["current_period_start"], "2027-01-31T07:00:00.000000Z");
    assert_eq!(v["current_period_end"], "2027-02-28T07:00:00.000000Z");
    assert_eq!((v["current_cycle_number"].as_u64(), v["until_cycle_number"].as_u64()), (Some(1), Some(12)));
    assert_eq!(v["cancel_at_period_end"], false);
    assert_eq!(v["cancel_at_cycle_number"], Value::Null);
    assert_eq!(v["override_payment_methods"]["subscription_auto_renewal"], false);
    assert_eq!(v["override_payment_methods"]["bank_transfer"], true);
    assert_eq!(v["override_payment_methods"]["visa"], Value::Null);
    assert_eq!(v["organization_consumer"]["id"], c.as_str());
    assert_eq!(v["items"][0]["product"]["id"], gym["id"]);
    assert_eq!(v["items"][0]["quantity"], 2);
    assert_eq!(v["coupon_calculation_metadata"]["coupons"][0]["coupon_id"], ten["id"]);
    // The first invoice: issued now, due at the period start, carrying subscription_id.
    let invoice = &v["latest_invoice"];
    assert_eq!(invoice["id"], v["latest_invoice_id"]);
    assert_eq!(invoice["total_amount"], "207.00");
    assert_eq!(invoice["status"], "CREATED");
    let listed = sub_invoices(srv, &id_of(&v));
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], v["latest_invoice_id"]);
    assert_eq!(listed[0]["subscription_id"], v["id"]);
    assert_eq!(listed[0]["scheduled_on"], "2027-01-31T07:00:00.000000Z");
    // GET answers the same document.
    let got = ok(srv.get(&sub_path(&id_of(&v))));
    assert_eq!(got["id"], v["id"]);
    assert_eq!(got["amount"], v["amount"]);
    assert_eq!(got["latest_invoice_id"], v["latest_invoice_id"]);
    // SUBSCRIPTION_CREATED and INVOICE_CREATED, with the spec's payload.
    let payloads = event_payloads(srv);
    let created = payloads
        .iter()
        .find(|p| p["event_type"] == "SUBSCRIPTION_CREATED")
        .expect("SUBSCRIPTION_CREATED");
    assert_eq!(created["entity_type"], "SUBSCRIPTION");
    assert_eq!(created["entity_id"], v["id"]);
    assert_eq!(created["status"], "INACTIVE");
    assert!(created["entity_url"].as_str().unwrap().ends_with(&sub_path(&id_of(&v))));
    assert_eq!(created["data"]["subscription"]["id"], v["id"]);
    assert!(payloads
        .iter()
        .any(|p| p["event_type"] == "INVOICE_CREATED" && p["entity_id"] == v["latest_invoice_id"]));
}

fn create_refusals_write_nothing(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let one_off = id_of(&one_off_product(srv, "Towel", "10.00"));
    let yearly = id_of(&ok(srv.post(
        "/api/v2/products",
        json!({"name": "Yearly", "type": "RECURRING", "recurring_interval": "YEAR", "price": "900"}),
    )));
    let at = "2027-01-01T00:00:00Z";
    let r = srv.unchanged(|| srv.post("/api/v2/subscriptions", sub_body(&c, &[(&gym, 1), (&one_off, 1)], at)));
    assert_invalid(&r, json!(["body", "items", 1, "product_id"]), Some("value_error"));
    let r = srv.unchanged(|| srv.post("/api/v2/subscriptions", sub_body(&c, &[(&gym, 1), (&yearly, 1)], at)));
    assert_invalid(&r, json!(["body", "items"]), Some("value_error"));
    let r = srv.unchanged(|| srv.post("/api/v2/subscriptions", json!({"organization_consumer_id": c, "items": [{"product_id": gym}]})));
    assert_invalid(&r, json!(["body", "period_start"]), Some("missing"));
    let r = srv.unchanged(|| srv.post("/api/v2/subscriptions", json!({"period_start": at, "items": []})));
    assert_invalid(&r, json!(["body", "items"]), Some("too_short"));
    assert_invalid(&r, json!(["body", "organization_consumer_id"]), Some("missing"));
    let mut bad = sub_body(&c, &[(&gym, 1)], at);
    bad["until_cycle_number"] = json!(0);
    bad["trial"] = json!("yes");
    let r = srv.unchanged(|| srv.post("/api/v2/subscriptions", bad.clone()));
    assert_invalid(&r, json!(["body", "until_cycle_number"]), None);
    assert_invalid(&r, json!(["body", "trial"]), Some("bool_type"));
    let r = srv.unchanged(|| srv.post("/api/v2/subscriptions", sub_body(&random_id(), &[(&gym, 1)], at)));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.post("/api/v2/subscriptions", sub_body(&c, &[(&random_id(), 1)], at)));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.get(&sub_path(&random_id())));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.get(&sub_path("nope"));
    assert_invalid(&r, json!(["path", "subscription_id"]), Some("uuid_parsing"));
}

/// Paying the first invoice (mark-paid, or by card on the invoice) makes the subscription
/// ACTIVE, with SUBSCRIPTION_ACTIVATED after INVOICE_COMPLETED.
fn paying_the_first_invoice_activates(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let v = create_sub(srv, sub_body(&c, &[(&gym, 1)], "2027-01-01T00:00:00Z"));
    let inv = ok(srv.get(&invoice_path(v["latest_invoice_id"].as_str().unwrap())));
    ok(mark_paid(srv, &first_payment(&inv), "CASH"));
    let got = ok(srv.get(&sub_path(&id_of(&v))));
    assert_eq!(got["status"], "ACTIVE");
    assert_eq!(got["latest_invoice"]["status"], "COMPLETED");
    assert!(got["started_at"].is_string());
    let kinds: Vec<String> = events(srv).into_iter().map(|(k, _)| k).collect();
    let completed = kinds.iter().position(|k| k == "INVOICE_COMPLETED").unwrap();
    let activated = kinds.iter().position(|k| k == "SUBSCRIPTION_ACTIVATED").unwrap();
    assert!(completed < activated, "{kinds:?}");
    let r = ok(srv.get("/api/v2/subscriptions?statuses=ACTIVE&latest_invoice_is_paid=true"));
    assert_eq!(
        ids(&srv.get("/api/v2/subscriptions?statuses=ACTIVE&latest_invoice_is_paid=true")),
        vec![id_of(&v)]
    );
    assert_eq!(r["pagination"]["total_count"], 1);

    // By card on the invoice, through the same payment path as any invoice.
    let v2 = create_sub(srv, sub_body(&c, &[(&gym, 1)], "2027-01-01T00:00:00Z"));
    let inv2: billing_core::ids::InvoiceId = v2["latest_invoice_id"].as_str().unwrap().parse().unwrap();
    let scope = admin_scope(srv);
    let (_, pays) = srv.app.billing.invoices().get(&scope, inv2).unwrap().into_parts();
    let card = billing_core::payment::gateway::CardDetails {
        name: "Sara Ali".into(),
        number: "4111111111111111".into(),
        expiry_month: 12,
        expiry_year: 2040,
        cvc: "123".into(),
    };
    srv.app.billing.payments().pay_by_card(&scope, inv2, &[pays[0].id], &card).unwrap();
    assert_eq!(ok(srv.get(&sub_path(&id_of(&v2))))["status"], "ACTIVE");
}

fn cancel_and_uncancel(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let v = create_sub(srv, sub_body(&c, &[(&gym, 1)], &clock(srv)));
    let id = id_of(&v);
    let inv = ok(srv.get(&invoice_path(v["latest_invoice_id"].as_str().unwrap())));
    ok(mark_paid(srv, &first_payment(&inv), "CASH"));
    // ACTIVE: stays ACTIVE, canceled at the period end; an empty body is allowed.
    let r = ok(srv.call(Method::POST, &format!("{}/cancel", sub_path(&id)), None));
    assert_eq!((r["status"].as_str(), r["cancel_at_period_end"].as_bool()), (Some("ACTIVE"), Some(true)));
    assert_eq!(r["cancel_at_cycle_number"], 1);
    assert!(events(srv).iter().any(|(k, e)| k == "SUBSCRIPTION_CANCEL_AT_PERIOD_END" && *e == id));
    // Uncancel withdraws it (an empty success body); again is a no-op.
    let r = srv.call(Method::PUT, &format!("{}/uncancel", sub_path(&id)), None);
    assert_eq!(ok(r), json!({}));
    assert_eq!(ok(srv.get(&sub_path(&id)))["cancel_at_period_end"], false);
    let r = srv.unchanged(|| srv.call(Method::PUT, &format!("{}/uncancel", sub_path(&id)), None));
    assert_eq!(ok(r), json!({}));
    // Canceled again, it ends at the period end on the sandbox clock: nothing issued after.
    ok(srv.post(&format!("{}/cancel", sub_path(&id)), json!({"cancel_related_invoices": false})));
    ok(srv.post(ADVANCE, json!({"seconds": 40 * 86400})));
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!(got["status"], "CANCELED");
    assert_eq!(got["ended_at"], v["current_period_end"]);
    assert_eq!(sub_invoices(srv, &id).len(), 1);
    let r = srv.unchanged(|| srv.call(Method::PUT, &format!("{}/uncancel", sub_path(&id)), None));
    assert_error(&r, 400, "INVALID_STATUS");
    let r = srv.unchanged(|| srv.post(&format!("{}/cancel", sub_path(&id)), json!({})));
    assert_error(&r, 400, "INVALID_STATUS");
    // INACTIVE: canceled now, its unpaid invoice voided when asked.
    let v = create_sub(srv, sub_body(&c, &[(&gym, 1)], &clock(srv)));
    let r = ok(srv.post(&format!("{}/cancel", sub_path(&id_of(&v))), json!({"cancel_related_invoices": true})));
    assert_eq!(r["status"], "CANCELED");
    let inv = ok(srv.get(&invoice_path(v["latest_invoice_id"].as_str().unwrap())));
    assert_eq!(inv["status"], "CANCELED");
    let r = srv.unchanged(|| srv.post(&format!("{}/cancel", sub_path(&id_of(&v))), json!({"cancel_related_invoices": "x"})));
    assert_invalid(&r, json!(["body", "cancel_related_invoices"]), None);
    let r = srv.unchanged(|| srv.post(&format!("{}/cancel", sub_path(&random_id())), json!({})));
    assert_error(&r, 404, "NOT_FOUND");
}

/// A monthly subscription with a card on file, its first invoice paid, over 13 months of the
/// sandbox clock: exactly 13 invoices with the right periods, each renewal charged to the card.
fn monthly_over_thirteen_months(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    save_card(srv, &c, "4111111111111111");
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    ok(srv.post(ADVANCE, json!({"to": "2030-01-31T08:00:00Z"})));
    let v = create_sub(srv, sub_body(&c, &[(&gym, 1)], "2030-01-31T10:00:00Z"));
    let id = id_of(&v);
    let inv = ok(srv.get(&invoice_path(v["latest_invoice_id"].as_str().unwrap())));
    ok(mark_paid(srv, &first_payment(&inv), "CASH"));
    // 13 months on: cycles 2..=13 start Feb 28, Mar 31, …, Jan 31 2031; cycle 14 is Feb 28.
    ok(srv.post(ADVANCE, json!({"to": "2031-02-27T10:00:00Z"})));
    let invs = sub_invoices(srv, &id);
    let due: Vec<&str> = invs.iter().map(|i| &i["scheduled_on"].as_str().unwrap()[..10]).collect();
    assert_eq!(
        due,
        [
            "2030-01-31",
            "2030-02-28",
            "2030-03-31",
            "2030-04-30",
            "2030-05-31",
            "2030-06-30",
            "2030-07-31",
            "2030-08-31",
            "2030-09-30",
            "2030-10-31",
            "2030-11-30",
            "2030-12-31",
            "2031-01-31"
        ]
    );
    for i in &invs {
        assert_eq!(i["status"], "COMPLETED", "{i}");
        assert_eq!(i["subscription_id"], id.as_str());
        assert_eq!(i["payments"][0]["current_status"], "SUCCEEDED");
    }
    let got = ok(srv.get(&sub_path(&id)));
    assert_eq!((got["status"].as_str(), got["current_cycle_number"].as_u64()), (Some("ACTIVE"), Some(13)));
    assert_eq!(got["current_period_start"], "2031-01-31T10:00:00.000000Z");
    assert_eq!(got["current_period_end"], "2031-02-28T10:00:00.000000Z");
    // Renewal events: INVOICE_CREATED, PAYMENT_SUCCEEDED, INVOICE_COMPLETED for each of the 12
    // renewals, each invoice carrying the subscription.
    let renewals: Vec<&Value> = invs[1..].iter().collect();
    let evs = events(srv);
    for i in renewals {
        let inv_id = i["id"].as_str().unwrap();
        let pay_id = i["payments"][0]["id"].as_str().unwrap();
        let mine: Vec<&str> = evs.iter().filter(|(_, e)| e == inv_id || e == pay_id).map(|(k, _)| k.as_str()).collect();
        assert_eq!(mine, ["INVOICE_CREATED", "PAYMENT_SUCCEEDED", "INVOICE_COMPLETED"]);
    }
    let completed: Vec<Value> = event_payloads(srv).into_iter().filter(|p| p["event_type"] == "INVOICE_COMPLETED").collect();
    assert_eq!(completed.len(), 13);
}

/// Several clock advances at once (each runs the due work on the way) renew each cycle once.
fn concurrent_advances_renew_once(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    save_card(srv, &c, "5421080101000000");
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let now = clock(srv);
    let v = create_sub(srv, sub_body(&c, &[(&gym, 1)], &now));
    let id = id_of(&v);
    let inv = ok(srv.get(&invoice_path(v["latest_invoice_id"].as_str().unwrap())));
    ok(mark_paid(srv, &first_payment(&inv), "CASH"));
    let reqs = (0..4)
        .map(|_| (Method::POST, ADVANCE.to_string(), Some(json!({"seconds": 20 * 86400}))))
        .collect();
    for (status, body) in concurrently(srv, reqs) {
        assert_eq!(status, 200, "{body}");
    }
    // 80 days: cycles 2 and 3 (and not more than once each).
    let invs = sub_invoices(srv, &id);
    assert_eq!(invs.len(), 3, "{invs:?}");
    assert_eq!(ok(srv.get(&sub_path(&id)))["current_cycle_number"], 3);
    assert!(invs.iter().all(|i| i["status"] == "COMPLETED"));
}

fn list_filters(srv: &TestServer) {
    let c1 = quiet_consumer(srv, "Sara");
    let c2 = quiet_consumer(srv, "Omar");
    let gym = recurring_product(srv, "Gym Gold", "100.00");
    let pool = recurring_product(srv, "Pool", "50.00");
    let mut a = sub_body(&c1, &[(id_of(&gym).as_str(), 1)], "2027-01-01T00:00:00Z");
    a["description"] = json!("Alpha");
    let a = create_sub(srv, a);
    let mut b = sub_body(&c2, &[(id_of(&pool).as_str(), 1)], "2027-02-01T00:00:00Z");
    b["description"] = json!("Beta");
    let b = create_sub(srv, b);
    let q = |query: &str| ids(&srv.get(&format!("/api/v2/subscriptions?{query}")));
    assert_eq!(q(""), vec![id_of(&b), id_of(&a)]);
    assert_eq!(q("sort_direction=asc"), vec![id_of(&a), id_of(&b)]);
    assert_eq!(q(&format!("organization_consumer_id={c1}")), vec![id_of(&a)]);
    assert_eq!(q(&format!("product_ids={}", id_of(&pool))), vec![id_of(&b)]);
    assert_eq!(q("search_term=gold"), vec![id_of(&a)]);
    assert_eq!(q("search_term=bet"), vec![id_of(&b)]);
    assert_eq!(q("from_price=60&to_price=100"), vec![id_of(&a)]);
    assert_eq!(q("currencies=SAR,USD"), vec![id_of(&b), id_of(&a)]);
    assert_eq!(q("statuses=INACTIVE"), vec![id_of(&b), id_of(&a)]);
    assert_eq!(q("statuses=ACTIVE"), Vec::<String>::new());
    assert_eq!(q(&format!("current_period_start_from_date={}", enc("2027-01-15T00:00:00Z"))), vec![id_of(&b)]);
    assert_eq!(q(&format!("current_period_end_to_date={}", enc("2027-02-01T00:00:00Z"))), vec![id_of(&a)]);
    assert_eq!(q("sort_field=amount&sort_direction=asc"), vec![id_of(&b), id_of(&a)]);
    let r = ok(srv.get("/api/v2/subscriptions?limit=1&page=2"));
    assert_eq!(r["data"][0]["id"], a["id"]);
    assert_eq!(r["pagination"]["has_previous_page"], true);
    assert_eq!(r["pagination"]["max_page"], 2);
    let r = srv.get("/api/v2/subscriptions?statuses=NOPE");
    assert_invalid(&r, json!(["query", "statuses"]), Some("enum"));
    let r = srv.get("/api/v2/subscriptions?current_period_end_from_date=yesterday");
    assert_invalid(&r, json!(["query", "current_period_end_from_date"]), None);
}

/// A subscription belongs to its branch: another branch's request does not see it.
fn branch_scope(srv: &TestServer) {
    let c = quiet_consumer(srv, "Sara");
    let gym = id_of(&recurring_product(srv, "Gym", "100.00"));
    let v = create_sub(srv, sub_body(&c, &[(&gym, 1)], "2027-01-01T00:00:00Z"));
    let other = branch(srv, "Other");
    let r = in_branch(srv, &other, Method::GET, &sub_path(&id_of(&v)), None);
    assert_error(&r, 404, "NOT_FOUND");
    let r = in_branch(srv, &other, Method::GET, "/api/v2/subscriptions", None);
    assert_eq!(ok(r)["data"], json!([]));
    let r = srv.unchanged(|| in_branch(srv, &other, Method::POST, &format!("{}/cancel", sub_path(&id_of(&v))), Some(json!({}))));
    assert_error(&r, 404, "NOT_FOUND");
    // The consumer is not the other branch's either.
    let r = srv.unchanged(|| {
        in_branch(
            srv,
            &other,
            Method::POST,
            "/api/v2/subscriptions",
            Some(sub_body(&c, &[(&gym, 1)], "2027-01-01T00:00:00Z")),
        )
    });
    assert_error(&r, 404, "NOT_FOUND");
}

http_tests!(
    create_returns_subscription_detailed,
    create_refusals_write_nothing,
    paying_the_first_invoice_activates,
    cancel_and_uncancel,
    monthly_over_thirteen_months,
    concurrent_advances_renew_once,
    list_filters,
    branch_scope,
);

postgres_smoke!(
    create_returns_subscription_detailed,
    cancel_and_uncancel,
    monthly_over_thirteen_months,
    concurrent_advances_renew_once,
    list_filters
);
