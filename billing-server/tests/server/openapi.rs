//! `GET /openapi.json` over HTTP, and real answers checked against it: a scenario through every
//! resource whose every response (successes and errors) must validate against the schema the
//! served document gives for that operation and status.

use crate::common::fixtures::*;
use crate::common::{Resp, TestServer};
use hyper::Method;
use serde_json::{json, Value};

/// The served document.
fn served(srv: &TestServer) -> Value {
    let r = srv.raw(Method::GET, "/openapi.json", &[], None);
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/json");
    r.body
}

/// Checks `r` against the schema of `template`'s `method` for its status; returns the body.
fn conforms(doc: &Value, method: &Method, template: &str, r: &Resp) -> Value {
    let mut failures = vec![];
    let body = check(doc, method, template, r, &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    body
}

/// As [`conforms`], noting what does not conform in `failures`.
fn check(doc: &Value, method: &Method, template: &str, r: &Resp, failures: &mut Vec<String>) -> Value {
    let op = &doc["paths"][template][method.as_str().to_ascii_lowercase()];
    assert!(op.is_object(), "{method} {template} is not in the document");
    let mut response = op["responses"][r.status.to_string()].clone();
    assert!(response.is_object(), "{method} {template}: status {} is not documented ({})", r.status, r.text);
    if let Some(name) = response["$ref"].as_str().and_then(|n| n.strip_prefix("#/components/responses/")) {
        response = doc["components"]["responses"][name].clone();
    }
    let schema = &response["content"]["application/json"]["schema"];
    let root = json!({"components": doc["components"], "allOf": [schema]});
    let validator = jsonschema::draft202012::new(&root).expect("a valid schema");
    let errors: Vec<String> = validator.iter_errors(&r.body).map(|e| format!("{e} at {}", e.instance_path)).collect();
    if !errors.is_empty() {
        failures.push(format!(
            "{method} {template} ({}): the answer does not match its schema:\n{}\n{}",
            r.status,
            errors.join("\n"),
            r.text
        ));
    }
    r.body.clone()
}

fn ids(template: &str, ids: &[(&str, &str)]) -> String {
    let mut path = template.to_string();
    for (name, id) in ids {
        path = path.replace(&format!("{{{name}}}"), id);
    }
    path
}

#[test]
fn the_document_is_served_without_credentials() {
    let srv = TestServer::sqlite();
    let doc = served(&srv);
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/api/v2/consumers"]["post"]["requestBody"].is_object());
    // HEAD too, and nothing else.
    assert_eq!(srv.raw(Method::HEAD, "/openapi.json", &[], None).status, 200);
}

#[test]
fn real_answers_match_the_document() {
    let srv = TestServer::sqlite();
    let doc = served(&srv);
    let failures = std::cell::RefCell::new(vec![]);
    let call = |method: Method, template: &str, at: &[(&str, &str)], body: Option<Value>| -> Value {
        let r = srv.call(method.clone(), &ids(template, at), body);
        check(&doc, &method, template, &r, &mut failures.borrow_mut())
    };
    call(Method::GET, "/api/v2/me", &[], None);
    call(Method::GET, "/api/v2/organization/settings", &[], None);
    call(Method::GET, "/api/v2/branch", &[], None);
    let branch = call(Method::POST, "/api/v2/branch", &[], Some(json!({"name": "Jeddah"})));
    call(
        Method::GET,
        "/api/v2/branch/{branch_id}",
        &[("branch_id", branch["id"].as_str().unwrap())],
        None,
    );
    call(Method::GET, "/api/v2/api-keys", &[], None);
    call(Method::GET, "/api/v2/sandbox/clock", &[], None);

    let consumer = call(Method::POST, "/api/v2/consumers", &[], Some(full_consumer("Sara Ali", 1)));
    let consumer_id = consumer["id"].as_str().unwrap().to_string();
    call(Method::GET, "/api/v2/consumers", &[], None);
    call(Method::GET, "/api/v2/consumers/{consumer_id}", &[("consumer_id", &consumer_id)], None);
    call(
        Method::PUT,
        "/api/v2/consumers/{consumer_id}",
        &[("consumer_id", &consumer_id)],
        Some(json!({"alias": "S"})),
    );

    let product = call(
        Method::POST,
        "/api/v2/products",
        &[],
        Some(json!({"name": "Sessions", "type": "ONE_OFF", "price": "115", "external_metadata": {"k": "v"}})),
    );
    let product_id = product["id"].as_str().unwrap().to_string();
    let monthly = call(
        Method::POST,
        "/api/v2/products",
        &[],
        Some(json!({"name": "Monthly", "type": "RECURRING", "recurring_interval": "MONTH", "price": "50"})),
    );
    call(Method::GET, "/api/v2/products", &[], None);
    call(Method::GET, "/api/v2/products/{product_id}", &[("product_id", &product_id)], None);
    call(
        Method::POST,
        "/api/v2/products/{product_id}/prices",
        &[("product_id", &product_id)],
        Some(json!({"currency": "USD", "amount": "30"})),
    );

    let coupon = call(
        Method::POST,
        "/api/v2/coupons",
        &[],
        Some(json!({"name": "TEN", "discount_value": "10", "is_percentage": true})),
    );
    call(Method::GET, "/api/v2/coupons", &[], None);
    call(
        Method::GET,
        "/api/v2/coupons/{coupon_id}",
        &[("coupon_id", coupon["id"].as_str().unwrap())],
        None,
    );

    let invoice = call(
        Method::POST,
        "/api/v2/invoices",
        &[],
        Some(json!({"organization_consumer_id": consumer_id, "items": [{"product_id": product_id, "quantity": 2}], "coupons": [coupon["id"]]})),
    );
    let invoice_id = invoice["id"].as_str().unwrap().to_string();
    call(Method::GET, "/api/v2/invoices", &[], None);
    srv.get("/api/v2/invoices?include_payments=true");
    call(Method::GET, "/api/v2/invoices/{invoice_id}", &[("invoice_id", &invoice_id)], None);
    call(Method::POST, "/api/v2/invoices/{invoice_id}/send", &[("invoice_id", &invoice_id)], None);
    let payment_id = invoice["payments"][0]["id"].as_str().expect("a payment").to_string();
    call(Method::GET, "/api/v2/payments", &[], None);
    call(Method::GET, "/api/v2/payments/{payment_id}", &[("payment_id", &payment_id)], None);
    call(
        Method::POST,
        "/api/v2/payments/{payment_id}/mark-paid",
        &[("payment_id", &payment_id)],
        Some(json!({"payment_method": "CASH"})),
    );
    call(
        Method::POST,
        "/api/v2/payments/{payment_id}/refund",
        &[("payment_id", &payment_id)],
        Some(json!({"refund_reason": "OTHER"})),
    );

    let link = call(
        Method::POST,
        "/api/v2/payment_links",
        &[],
        Some(json!({"name": "Sessions", "currency": "SAR", "items": [{"product_id": product_id, "quantity": 1}]})),
    );
    call(Method::GET, "/api/v2/payment_links", &[], None);
    call(
        Method::PATCH,
        "/api/v2/payment_links/{payment_link_id}/status",
        &[("payment_link_id", link["id"].as_str().unwrap())],
        Some(json!({"status": "INACTIVE"})),
    );

    let subscription = call(
        Method::POST,
        "/api/v2/subscriptions",
        &[],
        Some(json!({"organization_consumer_id": consumer_id, "items": [{"product_id": monthly["id"], "quantity": 1}], "period_start": "2030-01-01T00:00:00Z"})),
    );
    let subscription_id = subscription["id"].as_str().unwrap().to_string();
    call(Method::GET, "/api/v2/subscriptions", &[], None);
    call(
        Method::GET,
        "/api/v2/subscriptions/{subscription_id}",
        &[("subscription_id", &subscription_id)],
        None,
    );
    call(
        Method::POST,
        "/api/v2/subscriptions/{subscription_id}/freeze",
        &[("subscription_id", &subscription_id)],
        Some(json!({"freeze_start_datetime": "2030-03-01T00:00:00Z", "freeze_end_datetime": "2030-04-01T00:00:00Z"})),
    );
    call(
        Method::GET,
        "/api/v2/subscriptions/{subscription_id}/freeze",
        &[("subscription_id", &subscription_id)],
        None,
    );
    call(
        Method::POST,
        "/api/v2/subscriptions/{subscription_id}/cancel",
        &[("subscription_id", &subscription_id)],
        None,
    );

    let hook = call(
        Method::POST,
        "/api/v2/webhooks",
        &[],
        Some(json!({"url": "https://example.com/hook", "event_types": "all"})),
    );
    call(Method::GET, "/api/v2/webhooks", &[], None);
    call(
        Method::GET,
        "/api/v2/webhooks/{webhook_id}/deliveries",
        &[("webhook_id", hook["id"].as_str().unwrap())],
        None,
    );
    call(Method::GET, "/api/v2/notifications", &[], None);
    call(Method::POST, "/api/v2/sandbox/clock/advance", &[], Some(json!({"seconds": 60})));

    // Errors have their documented shapes too.
    call(
        Method::GET,
        "/api/v2/consumers/{consumer_id}",
        &[("consumer_id", "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90")],
        None,
    );
    call(Method::GET, "/api/v2/consumers/{consumer_id}", &[("consumer_id", "nope")], None);
    call(Method::POST, "/api/v2/consumers", &[], Some(json!({"email": "x"})));
    call(Method::DELETE, "/api/v2/consumers/{consumer_id}", &[("consumer_id", &consumer_id)], None);
    let r = srv.call_as("bad", None, Method::GET, "/api/v2/consumers", None);
    conforms(&doc, &Method::GET, "/api/v2/consumers", &r);
    let failures = failures.into_inner();
    assert!(
        failures.is_empty(),
        "{} answers do not match the document:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_docs_page_and_its_assets_are_served_by_the_binary() {
    let srv = TestServer::sqlite();
    let page = srv.raw(Method::GET, "/docs", &[], None);
    assert_eq!(page.status, 200);
    assert!(page.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'self'") && csp.contains("script-src 'self'"), "{csp}");
    // Every asset the page names is served here: nothing from elsewhere.
    let mut assets = 0;
    for attr in ["src=\"", "href=\""] {
        for part in page.text.split(attr).skip(1) {
            let url = &part[..part.find('"').unwrap()];
            assert!(url.starts_with('/'), "the page loads {url} from elsewhere");
            let r = srv.raw(Method::GET, url, &[], None);
            assert_eq!(r.status, 200, "{url}");
            assets += 1;
        }
    }
    assert!(assets >= 3, "the script, the style and the document: {assets}");
    let js = srv.raw(Method::GET, "/docs/assets/docs.js", &[], None);
    assert!(
        js.text.contains("/openapi.json") && js.text.contains("x-api-key"),
        "the script reads the document and sends the key"
    );
    assert!(!js.text.contains("http://") && !js.text.contains("https://"), "no address elsewhere");
    assert_eq!(srv.raw(Method::POST, "/docs", &[], None).status, 404);
}

/// `/docs` in headless Chromium (as `checkout_browser`: without chromium the test fails when
/// `CI` is set and prints a loud SKIPPED otherwise): the page renders every operation from the
/// document, and with a key typed in, "Send" under `POST /api/v2/consumers` creates the example
/// consumer. Saves `target/screenshots/docs.png`.
#[test]
fn docs_page_in_a_real_browser() {
    use crate::common::webdriver::{find_browser, Browser};
    let Some((chromium, chromedriver)) = find_browser() else {
        if std::env::var_os("CI").is_some() {
            panic!("chromium and chromedriver are required in CI (.ci/run installs the chromium and chromium-driver packages)");
        }
        eprintln!("\n======== SKIPPED openapi::docs_page_in_a_real_browser: chromium / chromedriver not found ========\n");
        return;
    };
    let srv = TestServer::sqlite();
    let doc = served(&srv);
    let operations: usize = doc["paths"].as_object().unwrap().values().map(|i| i.as_object().unwrap().len()).sum();
    let b = Browser::start(&chromium, &chromedriver, 1280, 1000);
    b.goto(&format!("{}/docs", srv.base));
    let shown = b.wait_for("the operations", 20, "return document.querySelectorAll('section.op').length");
    assert_eq!(shown, json!(operations), "every operation of the document is on the page");
    // Without a key the API answers 401, shown on the page.
    b.click("#list_customers button[type=submit]");
    let out = b.wait_for(
        "the answer",
        20,
        "const t = document.querySelector('#list_customers pre').textContent; return /^[0-9]{3} /.test(t) && t",
    );
    assert!(out.as_str().unwrap().starts_with("401"), "{out}");
    // With the key: the example body of create_customer creates that consumer.
    b.type_into("#key", &srv.key);
    b.click("#create_customer button[type=submit]");
    let out = b.wait_for(
        "the answer",
        20,
        "const t = document.querySelector('#create_customer pre').textContent; return /^[0-9]{3} /.test(t) && t",
    );
    assert!(out.as_str().unwrap().starts_with("200"), "{out}");
    let found = crate::common::fixtures::ok(srv.get("/api/v2/consumers?search_term=sara%40example.com"));
    assert_eq!(found["data"][0]["name"], "Sara Ali", "the page's request reached the API");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    b.js("document.getElementById('create_customer').scrollIntoView()", json!([]));
    b.screenshot(&target.join("screenshots/docs.png"));
}
