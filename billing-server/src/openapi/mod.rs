//! The API described: `GET /openapi.json`, an OpenAPI 3.1.0 document built from the route tables
//! (paths and methods), [`operations`] (what each endpoint takes and answers) and the derived
//! JSON Schemas of [`shapes`] and [`queries`] (whose enums are billing-core's). Built once.
//!
//! What keeps it true is in `tests`: every routed endpoint is documented and nothing else; every
//! example validates against its schema and is accepted by billing-core's real reader; every
//! field a reader reads is documented, and every documented field is read.

pub mod doc;
pub mod operations;
pub mod queries;
pub mod serve;
pub mod shapes;
pub mod types;

use schemars::generate::SchemaSettings;
use schemars::SchemaGenerator;
use serde_json::{json, Map, Value};
use std::sync::LazyLock;

/// The document, built at first use.
pub fn document() -> &'static Value {
    static DOC: LazyLock<Value> = LazyLock::new(build);
    &DOC
}

/// The document's bytes, as served.
pub fn document_bytes() -> &'static [u8] {
    static BYTES: LazyLock<Vec<u8>> = LazyLock::new(|| serde_json::to_vec(document()).expect("the document serializes"));
    &BYTES
}

/// The names of a path's parameters (`{consumer_id}` → `consumer_id`).
pub fn path_params(path: &str) -> Vec<&str> {
    path.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))).collect()
}

fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .into_generator()
}

fn build() -> Value {
    let mut g = generator();
    let mut paths = Map::new();
    for op in operations::all() {
        let mut parameters: Vec<Value> = path_params(&op.path)
            .into_iter()
            .map(|name| {
                json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"},
                       "example": "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90"})
            })
            .collect();
        if let Some(query) = op.query {
            let schema = query(&mut g);
            let schema = resolve(&g, schema.as_value());
            let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
                let mut p = json!({"name": name, "in": "query", "required": required.contains(&name.as_str()), "schema": without_description(prop),
                                   "example": example_of(&g, prop)});
                if let Some(d) = prop.get("description") {
                    p["description"] = d.clone();
                }
                if prop.get("type").and_then(Value::as_array).is_some_and(|t| t.iter().any(|t| t == "array")) || prop.get("type") == Some(&json!("array")) {
                    p["style"] = json!("form");
                    p["explode"] = json!(true);
                }
                parameters.push(p);
            }
        }
        if !op.public {
            parameters.push(json!({
                "name": "x-branch-id", "in": "header", "required": false,
                "description": "The branch the request acts in (default: the key's default branch, or the user's first).",
                "schema": {"type": "string", "format": "uuid"}, "example": "0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f92"
            }));
            if op.method != "GET" {
                parameters.push(json!({
                    "name": "Idempotency-Key", "in": "header", "required": false,
                    "description": "Makes a retry safe: the same request under the same key runs once and replays its answer (24 hours).",
                    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]+$"}
                }));
            }
        }
        if op.id == "invite_user" {
            parameters.push(
                json!({"name": "language", "in": "header", "required": false, "description": "The invitation e-mail's language (default AR).",
                                   "schema": {"type": "string", "pattern": "^([aA][rR]|[eE][nN])$"}}),
            );
        }
        let ok = (op.response)(&mut g);
        let mut operation = json!({
            "operationId": op.id,
            "tags": [op.tag],
            "summary": op.summary,
            "parameters": parameters,
            "responses": responses(ok.to_value(), op.public, op.body.is_some() || !path_params(&op.path).is_empty()),
        });
        if op.public {
            operation["security"] = json!([]);
        }
        if let Some(body) = op.body {
            let schema = body(&mut g);
            let mut content = json!({"schema": schema.to_value()});
            if let Some(example) = &op.example {
                content["example"] = example.clone();
            }
            operation["requestBody"] = json!({"required": true, "content": {"application/json": content}});
        }
        let entry = paths.entry(op.path.clone()).or_insert_with(|| json!({}));
        entry[op.method.to_ascii_lowercase()] = operation;
    }
    // The shapes every error answer has.
    let _ = g.subschema_for::<shapes::HTTPValidationError>();
    let _ = g.subschema_for::<shapes::ServiceBaseResponse>();
    let _ = g.subschema_for::<shapes::MultiplePaymentsInTransactionErrorResponse>();
    // Named by reference from SubscriptionDetailed (`latest_invoice`) until it is the model's.
    let _ = g.subschema_for::<shapes::InvoiceBase>();
    let schemas = g.take_definitions(true);
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "Billing and payment collection API",
            "version": "2",
            "description": "Consumers, products, coupons, invoices, payments, payment links, subscriptions, branches, keys and webhooks. \
    Authenticate with `x-api-key: base64(<api-key>:<api-secret>)` or `Authorization: Bearer <jwt>`; `x-branch-id` picks the branch. \
    Money is a decimal string in responses and a number or numeric string in requests. Handled errors answer \
    `{\"error\": {\"code\", \"message\", \"additional_info\"}}`; validation errors answer 422 `{\"detail\": [{\"type\", \"loc\", \"msg\"}]}`."
        },
        "servers": [{"url": "/"}],
        "security": [{"APIKey": []}, {"JWTBearer": []}],
        "tags": tags(),
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "APIKey": {"type": "apiKey", "in": "header", "name": "x-api-key",
                           "description": "base64 of `<api-key>:<api-secret>`"},
                "JWTBearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            },
            "responses": {
                "Error": {"description": "A handled error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ServiceBaseResponse"}}}},
                "ValidationError": {"description": "The request failed validation (`detail`), or a rule of the 422 class refused it (the envelope: DUPLICATE_CONSUMER, IDEMPOTENCY_KEY_MISMATCH, …)",
                                    "content": {"application/json": {"schema": {"anyOf": [{"$ref": "#/components/schemas/HTTPValidationError"}, {"$ref": "#/components/schemas/ServiceBaseResponse"}]}}}}
            }
        }
    })
}

/// The answers of an operation: its success, and the errors every operation of its kind can give.
fn responses(ok: Value, public: bool, can_miss: bool) -> Value {
    let error = json!({"$ref": "#/components/responses/Error"});
    let mut r = json!({
        "200": {"description": "Success", "content": {"application/json": {"schema": ok}}},
        "400": {"description": "A rule refused the request (the code says which)", "content": {"application/json": {"schema": {
            "anyOf": [{"$ref": "#/components/schemas/ServiceBaseResponse"}, {"$ref": "#/components/schemas/MultiplePaymentsInTransactionErrorResponse"}]}}}},
        "405": error.clone(),
        "409": error.clone(),
        "413": error.clone(),
        "422": {"$ref": "#/components/responses/ValidationError"},
    });
    if !public {
        r["401"] = error.clone();
        r["403"] = error.clone();
    }
    if can_miss || !public {
        r["404"] = error;
    }
    r
}

fn tags() -> Value {
    let mut seen: Vec<&str> = vec![];
    for op in operations::all() {
        if !seen.contains(&op.tag) {
            seen.push(op.tag);
        }
    }
    json!(seen.iter().map(|t| json!({"name": t})).collect::<Vec<_>>())
}

/// A schema with a top-level `$ref` replaced by what it names.
fn resolve(g: &SchemaGenerator, schema: &Value) -> Value {
    match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/components/schemas/")) {
        Some(name) => g.definitions().get(name).cloned().unwrap_or(Value::Null),
        None => schema.clone(),
    }
}

/// A value of a query parameter's schema, for its example: its default, its first enum value, or
/// one of its type.
fn example_of(g: &SchemaGenerator, schema: &Value) -> Value {
    let s = resolve(g, schema);
    let s = match s.get("anyOf").and_then(Value::as_array) {
        Some(alts) => resolve(g, alts.iter().find(|a| a.get("type") != Some(&json!("null"))).unwrap_or(&Value::Null)),
        None => s,
    };
    if let Some(d) = s.get("default") {
        return d.clone();
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return e.clone();
    }
    let kind = match s.get("type") {
        Some(Value::Array(ts)) => ts.iter().find(|t| *t != "null").cloned().unwrap_or(Value::Null),
        Some(t) => t.clone(),
        None => Value::Null,
    };
    match (kind.as_str(), s.get("format").and_then(Value::as_str)) {
        (Some("array"), _) => json!([example_of(g, &s["items"])]),
        (Some("integer"), _) => json!(1),
        (Some("number"), _) => json!(100),
        (Some("boolean"), _) => json!(true),
        (Some("string"), Some("uuid")) => json!("0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90"),
        (Some("string"), Some("date-time")) => json!("2026-01-01T00:00:00Z"),
        (_, _) if s.get("examples").is_some() => s["examples"][0].clone(),
        _ => json!("sara"),
    }
}

fn without_description(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("description");
    }
    v
}

#[cfg(test)]
mod tests;
