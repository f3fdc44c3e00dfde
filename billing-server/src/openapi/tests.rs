//! What keeps the description true: the route tables, the examples, and billing-core's readers.

use super::operations::{self, Operation};
use super::{document, path_params};
use crate::api::TABLES;
use billing_core as core;
use billing_core::error::Error;
use billing_core::list::QueryParams;
use billing_core::money::Currency;
use billing_core::wire::reads;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// The public rows that are not part of the API description: the hosted checkout's pages, their
/// assets and the JSON endpoints its own script calls (not an integrator's API), and the invitation
/// page.
const NOT_DESCRIBED: &[&str] = &[
    "POST /pay/{short_id}/attempts",
    "POST /pay/invoices/{invoice_id}/attempts",
    "POST /pay/invoices/{invoice_id}/decline",
    "GET /pay/{short_id}",
    "GET /pay/{short_id}/result",
    "GET /pay/invoices/{invoice_id}",
    "GET /pay/invoices/{invoice_id}/result",
    "GET /pay/assets/checkout.js",
    "GET /pay/assets/checkout.css",
    "GET /embed.js",
    "GET /invite/accept",
    "POST /invite/accept",
];

fn routed() -> BTreeSet<String> {
    let mut all: BTreeSet<String> = TABLES
        .iter()
        .flat_map(|t| t.iter())
        .map(|r| format!("{} /api/v2{}", r.method, r.path))
        .collect();
    for r in crate::api::PUBLIC_TABLES.iter().flat_map(|t| t.iter()) {
        let key = format!("{} {}", r.method, r.path);
        if !NOT_DESCRIBED.contains(&key.as_str()) {
            all.insert(key);
        }
    }
    all
}

fn documented() -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for (path, item) in document()["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            all.insert(format!("{} {path}", method.to_ascii_uppercase()));
        }
    }
    all
}

#[test]
fn every_routed_endpoint_is_documented_and_nothing_else() {
    let (routed, documented) = (routed(), documented());
    let missing: Vec<_> = routed.difference(&documented).collect();
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(missing.is_empty(), "routed but not in /openapi.json: {missing:?}");
    assert!(unrouted.is_empty(), "in /openapi.json but not routed: {unrouted:?}");
    for k in NOT_DESCRIBED {
        let routed_public = crate::api::PUBLIC_TABLES
            .iter()
            .flat_map(|t| t.iter())
            .any(|r| format!("{} {}", r.method, r.path) == *k);
        assert!(routed_public, "{k} is listed as not described but is not routed");
    }
}

#[test]
fn the_document_has_what_clients_need() {
    let d = document();
    assert_eq!(d["openapi"], "3.1.0");
    let schemes = &d["components"]["securitySchemes"];
    assert_eq!(schemes["APIKey"]["name"], "x-api-key");
    assert_eq!(schemes["APIKey"]["in"], "header");
    assert_eq!(schemes["JWTBearer"]["scheme"], "bearer");
    let names: BTreeSet<&str> = d["components"]["schemas"].as_object().unwrap().keys().map(String::as_str).collect();
    for name in [
        "ConsumerCreate",
        "ConsumerResponse",
        "InvoiceCreate",
        "InvoiceDetailed",
        "PaymentResponse",
        "PaymentRefundRequest",
        "SubscriptionDetailed",
        "PaymentLinkDetailed",
        "CreatePaymentLinkDto",
        "ProductDto",
        "CouponDetailed",
        "MeResponse",
        "HTTPValidationError",
        "ValidationError",
        "ServiceBaseResponse",
        "ListResource_ConsumerResponse_",
        "app__common__dtos__shared__OrganizationConsumer",
    ] {
        assert!(names.contains(name), "no schema named {name}");
    }
    // The refund's reason is an enum of billing-core's reasons.
    let reasons: Vec<&str> = d["components"]["schemas"]["PaymentRefundReason"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(reasons, core::payment::RefundReason::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>());
    let statuses = &d["paths"]["/api/v2/invoices"]["get"]["parameters"];
    let p = statuses
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "statuses")
        .expect("statuses parameter");
    assert!(p["schema"].to_string().contains("InvoiceStatusEnum"), "{p}");
    for (path, item) in d["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let params: Vec<&str> = op["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
            for name in path_params(path) {
                assert!(params.contains(&name), "{method} {path}: path parameter {name} undocumented");
            }
            let public = op.get("security") == Some(&json!([]));
            assert_eq!(params.contains(&"x-branch-id"), !public, "{method} {path}: x-branch-id");
            assert!(op["responses"]["422"].is_object() && op["responses"]["200"].is_object(), "{method} {path}");
            if method != "get" && !public && !path.ends_with("/void") {
                let has_body = op.get("requestBody").is_some();
                if has_body {
                    assert!(
                        op["requestBody"]["content"]["application/json"]["example"].is_object(),
                        "{method} {path}: no example"
                    );
                }
            }
        }
    }
}

/// A validator of `schema` (which may point into the document's components).
fn validator(schema: &Value) -> jsonschema::Validator {
    let root = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "components": document()["components"], "allOf": [schema]});
    jsonschema::draft202012::new(&root).expect("a valid schema")
}

/// Validates `value` against `schema`; the errors as text.
pub fn problems(schema: &Value, value: &Value) -> Vec<String> {
    validator(schema).iter_errors(value).map(|e| format!("{} at {}", e, e.instance_path)).collect()
}

/// `v` with every object schema that lists its properties closed to any other property.
fn closed(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out: serde_json::Map<String, Value> = m.iter().map(|(k, v)| (k.clone(), closed(v))).collect();
            if out.contains_key("properties") && !out.contains_key("additionalProperties") {
                out.insert("additionalProperties".into(), json!(false));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(closed).collect()),
        other => other.clone(),
    }
}

/// Like [`problems`], with every documented object closed: a field the schema does not have is
/// an error (an example must show only what the endpoint reads).
fn strict_problems(schema: &Value, value: &Value) -> Vec<String> {
    let root = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "components": closed(&document()["components"]), "allOf": [closed(schema)]});
    let v = jsonschema::draft202012::new(&root).expect("a valid schema");
    v.iter_errors(value).map(|e| format!("{} at {}", e, e.instance_path)).collect()
}

#[test]
fn examples_show_only_documented_fields() {
    let mut failures = vec![];
    for (path, item) in document()["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Some(content) = op.get("requestBody").map(|b| &b["content"]["application/json"]) else {
                continue;
            };
            let errors = strict_problems(&content["schema"], &content["example"]);
            if !errors.is_empty() {
                failures.push(format!("{method} {path}: {errors:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "examples with fields their schema does not have:\n{}", failures.join("\n"));
    // A field the schema does not have is caught.
    let consumer = json!({"$ref": "#/components/schemas/ConsumerCreate"});
    assert!(!strict_problems(&consumer, &json!({"name": "Sara", "nickname": "S"})).is_empty());
    assert!(strict_problems(
        &consumer,
        &json!({"name": "Sara", "address": {"address_line_1": "1 Main St", "city": "Riyadh", "country": "SA"}})
    )
    .is_empty());
}

/// The components still written in `shapes.rs` and `queries.rs` (not yet the model's own types).
fn shapes_components() -> BTreeSet<String> {
    let src = [include_str!("shapes.rs"), include_str!("queries.rs")].concat();
    let mut out = BTreeSet::new();
    let mut rename: Option<String> = None;
    for line in src.lines().map(str::trim) {
        if let Some(r) = line.strip_prefix("#[schemars(rename = \"").and_then(|r| r.split('"').next()) {
            rename = Some(r.to_string());
        }
        if let Some(name) = line.strip_prefix("pub struct ").and_then(|r| r.split([' ', '{', '(', ';']).next()) {
            out.insert(rename.take().unwrap_or_else(|| name.to_string()));
        }
        // `list_query!` rows: `InvoiceListQuery(InvoiceSortField) {`.
        if let Some((name, _)) = line
            .split_once('(')
            .filter(|(n, rest)| n.ends_with("ListQuery") && (rest.ends_with("{") || rest.ends_with("{}")) && !n.contains(' '))
        {
            out.insert(name.to_string());
        }
    }
    out
}

#[test]
fn every_field_of_the_model_s_types_is_described() {
    let legacy = shapes_components();
    let mut missing = vec![];
    for (name, schema) in document()["components"]["schemas"].as_object().unwrap() {
        if legacy.contains(name) {
            continue;
        }
        for (field, prop) in schema["properties"].as_object().into_iter().flatten() {
            if prop.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
                missing.push(format!("{name}.{field}"));
            }
        }
    }
    assert!(missing.is_empty(), "fields without a description (a doc comment on the field): {missing:?}");
}

#[test]
fn every_example_validates_against_its_schema() {
    let mut checked = 0;
    let mut failures = vec![];
    for (path, item) in document()["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if let Some(content) = op.get("requestBody").map(|b| &b["content"]["application/json"]) {
                let errors = problems(&content["schema"], &content["example"]);
                if !errors.is_empty() {
                    failures.push(format!("{method} {path}: the example does not match its schema: {errors:?}"));
                }
                checked += 1;
            }
            for p in op["parameters"].as_array().unwrap() {
                if let Some(example) = p.get("example") {
                    assert!(problems(&p["schema"], example).is_empty(), "{method} {path}: parameter {}", p["name"]);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 29, "only {checked} examples");
    // Every operation has an example: of its body, or of its parameters.
    for (path, item) in document()["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let params = op["parameters"].as_array().unwrap();
            assert!(
                op.get("requestBody").is_some() || params.iter().any(|p| p.get("example").is_some()),
                "{method} {path} has no example"
            );
        }
    }
    // And a wrong example is caught.
    let consumer = json!({"$ref": "#/components/schemas/ConsumerCreate"});
    assert!(!problems(&consumer, &json!({"name": 5})).is_empty());
    assert!(!problems(&consumer, &json!({"email": "a@b.co"})).is_empty(), "name is required");
}

type Reader = fn(&Value) -> Result<(), Error>;

/// billing-core's reader of each operation's body (what the handler calls).
fn body_reader(id: &str) -> Reader {
    fn ok<T>(r: Result<T, Error>) -> Result<(), Error> {
        r.map(|_| ())
    }
    match id {
        "invite_user" => |v| ok(core::org::InviteRequest::parse(v)),
        "accept_invite" => |v| ok(core::org::accept::AcceptRequest::parse(v)),
        "update_organization_settings" => |v| ok(core::org::settings::SettingsPatch::parse(v)),
        "create_api_key" => |v| ok(core::auth::NewApiKey::parse(v)),
        "create_branch" | "update_branch" => |v| ok(core::branch::parse_branch_name(v)),
        "advance_sandbox_clock" => |v| ok(core::sandbox::Advance::parse(v)),
        "create_customer" => |v| ok(core::consumer::ConsumerFields::parse(v, true)),
        "update_customer" => |v| ok(core::consumer::ConsumerFields::parse(v, false)),
        "create_product" => |v| ok(core::product::ProductFields::parse(v, true, Currency::SAR)),
        "update_product" => |v| ok(core::product::ProductFields::parse(v, false, Currency::SAR)),
        "add_product_price" => |v| ok(core::product::parse_price_body(v)),
        "update_product_price" => |v| ok(core::product::parse_price_update(v)),
        "create_coupon" => |v| ok(core::coupon::CouponFields::parse(v, true)),
        "update_coupon" => |v| ok(core::coupon::CouponFields::parse(v, false)),
        "create_webhook" => |v| ok(core::webhook::EndpointFields::parse(v, true)),
        "update_webhook" => |v| ok(core::webhook::EndpointFields::parse(v, false)),
        "create_invoice" => |v| ok(core::invoice::InvoiceCreate::parse(v, Currency::SAR)),
        "update_invoice" => |v| ok(core::invoice::InvoiceInPlaceUpdate::parse(v)),
        "mark_payment_as_paid" => |v| ok(core::payment::MarkPaid::parse(v)),
        "refund_payment" => |v| ok(core::payment::RefundRequest::parse(v)),
        "create_payment_link" => |v| ok(core::payment_link::PaymentLinkCreate::parse(v, Currency::SAR)),
        "update_payment_link_status" => |v| ok(core::payment_link::StatusChange::parse(v)),
        "update_payment_link_coupons" => |v| ok(core::payment_link::CouponsChange::parse(v)),
        "create_subscription" => |v| ok(core::subscription::SubscriptionCreate::parse(v, Currency::SAR)),
        "update_subscription" => |v| ok(core::subscription::SubscriptionUpdate::parse(v)),
        "cancel_subscription" => |v| ok(core::subscription::SubscriptionCancel::parse(v)),
        "freeze_subscription" => |v| ok(core::subscription::FreezeRequest::parse_create(v)),
        "update_subscription_freeze" => |v| ok(core::subscription::FreezeRequest::parse_update(v)),
        other => panic!("no reader named for {other}: add it here"),
    }
}

type QueryReader = fn(&QueryParams) -> Result<(), Error>;

/// billing-core's reader of each list's query.
fn query_reader(id: &str) -> QueryReader {
    fn ok<T>(r: Result<T, Error>) -> Result<(), Error> {
        r.map(|_| ())
    }
    match id {
        "list_customers" => |q| ok(core::consumer::parse_consumer_list(q)),
        "list_products" => |q| ok(core::product::parse_product_list(q)),
        "list_coupons" => |q| ok(core::coupon::parse_coupon_list(q)),
        "list_invoices" => |q| ok(core::invoice::parse_invoice_list(q)),
        "list_payments" => |q| ok(core::payment::parse_payment_list(q)),
        "list_payment_links" => |q| ok(core::payment_link::parse_payment_link_list(q)),
        "list_subscriptions" => |q| ok(core::subscription::parse_subscription_list(q)),
        "list_subscription_freezes" => |q| ok(core::subscription::freeze::parse_freeze_list(q)),
        "list_notifications" => |q| ok(core::notification::parse_notification_list(q)),
        "list_webhook_deliveries" => |q| ok(core::webhook::parse_delivery_list(q)),
        "list_webhooks" => |q| ok(core::webhook::parse_page(q)),
        other => panic!("no query reader named for {other}: add it here"),
    }
}

fn schema_of(op: &Operation) -> Value {
    let d = document();
    d["paths"][&op.path][op.method.to_ascii_lowercase()]["requestBody"]["content"]["application/json"]["schema"].clone()
}

/// Follows `$ref`s, `anyOf` with `null` (nullable) and `allOf` of one.
fn deref(s: &Value) -> Value {
    if let Some(name) = s.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/components/schemas/")) {
        return deref(&document()["components"]["schemas"][name]);
    }
    if s.get("properties").is_some() {
        return s.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = s.get(key).and_then(Value::as_array) {
            let real: Vec<&Value> = alts.iter().filter(|a| a.get("type") != Some(&json!("null"))).collect();
            if let Some(first) = real.iter().find(|a| deref(a).get("properties").is_some()).or(real.first()) {
                return deref(first);
            }
        }
    }
    s.clone()
}

fn types(s: &Value) -> Vec<String> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts.iter().filter_map(|t| t.as_str().map(str::to_string)).filter(|t| t != "null").collect(),
        _ => vec![],
    }
}

/// Every property path of a body schema (`items[].product_id`); an object without properties is
/// opaque (its insides are free), so nothing under it is listed.
fn documented_paths(s: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    let s = deref(s);
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
            out.insert(path.clone());
            let p = deref(p);
            if types(&p).contains(&"array".to_string()) {
                documented_paths(&p["items"], &format!("{path}[]"), out);
            } else {
                documented_paths(&p, &path, out);
            }
        }
    }
}

/// A value for every property of `s` (nested objects and one-element arrays included), so that
/// a reader looks at every field it knows.
fn full_value(s: &Value) -> Value {
    let s = deref(s);
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        return e[0].clone();
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        return Value::Object(props.iter().map(|(k, p)| (k.clone(), full_value(p))).collect());
    }
    let t = types(&s);
    match t.first().map(String::as_str) {
        Some("array") => json!([full_value(&s["items"])]),
        Some("object") => json!({"k": "v"}),
        Some("integer") => json!(1),
        Some("number") => json!(1),
        Some("boolean") => json!(true),
        Some("string") => match s.get("format").and_then(Value::as_str) {
            Some("uuid") => json!("0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90"),
            Some("date-time") => json!("2026-01-01T00:00:00Z"),
            Some("date") => json!("2026-01-01"),
            Some("uri") => json!("https://example.com/x"),
            _ => json!("1"),
        },
        _ => json!("1"),
    }
}

#[test]
fn every_example_is_accepted_by_the_real_reader() {
    let mut failures = vec![];
    for op in operations::all() {
        let Some(example) = &op.example else { continue };
        let reader = body_reader(op.id);
        if let Err(e) = reader(example) {
            failures.push(format!(
                "{} {}: billing-core refuses the documented example {example}: {e:?}",
                op.method, op.path
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn readers_read_exactly_the_documented_fields() {
    let mut checked = 0;
    let mut failures = vec![];
    for op in operations::all() {
        if op.body.is_none() {
            continue;
        }
        let schema = schema_of(&op);
        let mut documented = BTreeSet::new();
        documented_paths(&schema, "", &mut documented);
        let reader = body_reader(op.id);
        let full = full_value(&schema);
        let (_, read) = reads::watch(|| reader(&full));
        let read: BTreeSet<String> = read.into_iter().collect();
        // What lies under an opaque (free) object is the object's business.
        let opaque = |p: &String| {
            documented
                .iter()
                .any(|d| p.starts_with(&format!("{d}.")) && !documented.iter().any(|x| x.starts_with(&format!("{d}."))))
        };
        let undocumented: Vec<_> = read.iter().filter(|p| !documented.contains(*p) && !opaque(p)).collect();
        let unread: Vec<_> = documented.difference(&read).collect();
        if !undocumented.is_empty() {
            failures.push(format!(
                "{} {}: the reader reads fields the document does not have: {undocumented:?}",
                op.method, op.path
            ));
        }
        if !unread.is_empty() {
            failures.push(format!("{} {}: the document has fields the reader never reads: {unread:?}", op.method, op.path));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 25);
}

#[test]
fn required_fields_are_the_ones_the_reader_requires() {
    // From the documented example (a valid body): without a required field the reader reports
    // it `missing`; without an optional one it does not.
    let mut failures = vec![];
    for op in operations::all() {
        let Some(full) = op.example.clone() else { continue };
        let schema = deref(&schema_of(&op));
        let reader = body_reader(op.id);
        let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        // Exactly one of several (`x-exactly-one-of`): the reader asks for either.
        let one_of: Vec<&str> = schema["x-exactly-one-of"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        for name in schema["properties"].as_object().unwrap().keys() {
            if one_of.contains(&name.as_str()) {
                continue;
            }
            let mut without = full.clone();
            without.as_object_mut().unwrap().remove(name);
            let missing = match reader(&without) {
                Err(Error::Validation(d)) => d
                    .iter()
                    .any(|e| e.kind == "missing" && serde_json::to_value(&e.loc).unwrap() == json!(["body", name])),
                _ => false,
            };
            if missing != required.contains(&name.as_str()) {
                failures.push(format!(
                    "{} {}: `{name}` is {} in the document, but the reader {} it",
                    op.method,
                    op.path,
                    if required.contains(&name.as_str()) { "required" } else { "optional" },
                    if missing { "requires" } else { "does not require" }
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn list_readers_read_exactly_the_documented_parameters() {
    let mut failures = vec![];
    for op in operations::all() {
        let d = document();
        let params = d["paths"][&op.path][op.method.to_ascii_lowercase()]["parameters"].as_array().unwrap();
        let documented: BTreeSet<String> = params
            .iter()
            .filter(|p| p["in"] == "query")
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect();
        if op.method != "GET" || (documented.is_empty() && op.query.is_none()) {
            continue;
        }
        let reader = query_reader(op.id);
        let query = QueryParams(documented.iter().map(|n| (n.clone(), "1".to_string())).collect());
        let (_, read) = reads::watch(|| reader(&query));
        // `external_metadata.<key>` filters are described in the parameter list's description.
        let read: BTreeSet<String> = read.into_iter().filter(|r| r != "external_metadata.*").collect();
        let undocumented: Vec<_> = read.difference(&documented).collect();
        // Each documented parameter is read when it is the only one (`size` only without `limit`).
        let unread: Vec<_> = documented
            .iter()
            .filter(|n| !reads::watch(|| reader(&QueryParams(vec![((*n).clone(), "1".to_string())]))).1.contains(n))
            .collect();
        if !undocumented.is_empty() {
            failures.push(format!(
                "GET {}: the reader reads parameters the document does not have: {undocumented:?}",
                op.path
            ));
        }
        if !unread.is_empty() {
            failures.push(format!("GET {}: the document has parameters the reader never reads: {unread:?}", op.path));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_list_documents_its_parameters() {
    // The GETs named `list_*` without query parameters are the two whose handlers read no query
    // (the keys and the branches are listed whole); a new list must document its parameters,
    // which `list_readers_read_exactly_the_documented_parameters` then holds to its reader.
    let without: Vec<&str> = operations::all()
        .into_iter()
        .filter(|o| o.method == "GET" && o.query.is_none())
        .map(|o| o.id)
        .collect();
    let lists: Vec<&&str> = without.iter().filter(|id| id.starts_with("list_")).collect();
    assert_eq!(lists, [&"list_api_keys", &"list_branches"]);
}
