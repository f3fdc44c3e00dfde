//! The tool catalog: each tool is one documented operation, under the public tool server's
//! name, as its route row declares it (`Doc::tools`), with an input schema made from the
//! operation's own schemas in `/openapi.json` (path parameters, then the query or the body's
//! fields).

use crate::openapi::operations::{self, Operation};
use crate::openapi::{document, path_params};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::LazyLock;

/// One tool.
pub struct ToolDef {
    pub name: &'static str,
    pub method: &'static str,
    /// The operation's path as documented (`/api/v2/consumers/{consumer_id}`).
    pub path: &'static str,
    /// Body fields the tool sets itself (`deactivate_payment_link` sends `status: INACTIVE`).
    pub fixed: Value,
    pub description: String,
    pub input_schema: Map<String, Value>,
}

/// The search over the API description.
pub const SEARCH: &str = "search_api_docs";

/// Every tool but the search, built once from the document.
pub fn all() -> &'static [ToolDef] {
    static TOOLS: LazyLock<Vec<ToolDef>> = LazyLock::new(|| {
        // The documented operations are the route rows'; their paths live as long as the
        // catalog does.
        let ops: &'static [Operation] = Vec::leak(operations::all());
        ops.iter()
            .flat_map(|op| op.tools.iter().map(move |t| (t.name, op.method, op.path.as_str(), t.fixed, t.description)))
            .map(build)
            .collect()
    });
    &TOOLS
}

pub fn find(name: &str) -> Option<&'static ToolDef> {
    all().iter().find(|t| t.name == name)
}

fn build((name, method, path, fixed, description): (&'static str, &'static str, &'static str, &'static str, &str)) -> ToolDef {
    let doc = document();
    let op = &doc["paths"][path][method.to_ascii_lowercase()];
    assert!(op.is_object(), "tool {name}: {method} {path} is not documented");
    let fixed: Value = if fixed.is_empty() {
        json!({})
    } else {
        serde_json::from_str(fixed).expect("fixed fields are JSON")
    };
    let mut properties = Map::new();
    let mut required: Vec<Value> = vec![];
    for p in path_params(path) {
        properties.insert(
            p.to_string(),
            json!({"type": "string", "format": "uuid", "description": format!("The {} (path)", p.replace('_', " "))}),
        );
        required.push(json!(p));
    }
    for p in op["parameters"].as_array().into_iter().flatten().filter(|p| p["in"] == "query") {
        let mut schema = p["schema"].clone();
        if let Some(d) = p.get("description") {
            schema["description"] = d.clone();
        }
        properties.insert(p["name"].as_str().unwrap().to_string(), schema);
    }
    if let Some(body) = op.get("requestBody") {
        let schema = resolve(&body["content"]["application/json"]["schema"]);
        for (k, v) in schema["properties"].as_object().into_iter().flatten() {
            if fixed.get(k).is_none() {
                properties.insert(k.clone(), v.clone());
            }
        }
        for r in schema["required"].as_array().into_iter().flatten() {
            if fixed.get(r.as_str().unwrap_or("")).is_none() {
                required.push(r.clone());
            }
        }
    }
    let mut input = json!({"type": "object", "properties": properties, "required": required});
    let defs = definitions_for(&input);
    rewrite_refs(&mut input);
    if !defs.is_empty() {
        input["$defs"] = Value::Object(defs);
    }
    ToolDef {
        name,
        method,
        path,
        fixed,
        description: format!("{description} ({method} {path}; {})", op["summary"].as_str().unwrap_or("")),
        input_schema: input.as_object().unwrap().clone(),
    }
}

fn resolve(s: &Value) -> Value {
    match s.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/components/schemas/")) {
        Some(name) => resolve(&document()["components"]["schemas"][name]),
        None => s.clone(),
    }
}

/// The components `v` refers to, transitively, with their references rewritten to `#/$defs/`.
fn definitions_for(v: &Value) -> Map<String, Value> {
    let mut names = BTreeSet::new();
    let mut todo = vec![v.clone()];
    while let Some(v) = todo.pop() {
        let mut found = vec![];
        refs(&v, &mut found);
        for name in found {
            if names.insert(name.clone()) {
                todo.push(document()["components"]["schemas"][&name].clone());
            }
        }
    }
    names
        .into_iter()
        .map(|n| {
            let mut s = document()["components"]["schemas"][&n].clone();
            rewrite_refs(&mut s);
            (n, s)
        })
        .collect()
}

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/components/schemas/")) {
                out.push(r.to_string());
            }
            m.values().for_each(|v| refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                *r = r.replace("#/components/schemas/", "#/$defs/");
            }
            m.values_mut().for_each(rewrite_refs);
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// The search tool's input.
pub fn search_schema() -> Map<String, Value> {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for in the operations' paths, names, summaries and fields (e.g. \"refund reason\")"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}
        },
        "required": ["query"]
    })
    .as_object()
    .unwrap()
    .clone()
}

/// The operations of the description that best match `query` (every word counts; a word in the
/// path or name counts most), each with its method, path, id, summary and request fields.
pub fn search(query: &str, limit: usize) -> Value {
    let words: Vec<String> = query
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let mut hits: Vec<(usize, Value)> = vec![];
    for (path, item) in document()["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap_or("");
            let summary = op["summary"].as_str().unwrap_or("");
            let mut fields: Vec<String> = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["name"].as_str().map(str::to_string))
                .collect();
            if let Some(body) = op.get("requestBody") {
                let s = resolve(&body["content"]["application/json"]["schema"]);
                fields.extend(s["properties"].as_object().into_iter().flatten().map(|(k, _)| k.clone()));
            }
            let strong = format!("{path} {id}").to_lowercase();
            let weak = format!("{summary} {} {}", fields.join(" "), op["tags"]).to_lowercase();
            let score: usize = words
                .iter()
                .map(|w| {
                    if strong.contains(w.as_str()) {
                        3
                    } else if weak.contains(w.as_str()) {
                        1
                    } else {
                        0
                    }
                })
                .sum();
            if score > 0 {
                let tool = all().iter().find(|t| t.path == path && t.method.eq_ignore_ascii_case(method)).map(|t| t.name);
                hits.push((
                    score,
                    json!({"method": method.to_uppercase(), "path": path, "operation_id": id, "summary": summary, "fields": fields, "tool": tool}),
                ));
            }
        }
    }
    hits.sort_by_key(|h| std::cmp::Reverse(h.0));
    json!({"results": hits.into_iter().take(limit).map(|(_, v)| v).collect::<Vec<_>>(), "document": "/openapi.json"})
}
