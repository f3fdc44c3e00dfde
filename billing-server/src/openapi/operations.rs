//! The documented endpoints, read from the route tables: each API row's [`Doc`] (its id,
//! tag, summary, query, body with an example, response and tools), with the row's method and
//! full path. `openapi::tests` fails when a routed endpoint has no description.

use super::doc::{Doc, SchemaFn, Tool};
use crate::api::{PUBLIC_TABLES, TABLES};
use serde_json::Value;

/// One documented endpoint.
pub struct Operation {
    pub method: &'static str,
    /// The full path, as routed (`/api/v2/consumers/{consumer_id}`).
    pub path: String,
    pub id: &'static str,
    pub tag: &'static str,
    pub summary: &'static str,
    /// No credential (accepting an invitation).
    pub public: bool,
    pub query: Option<SchemaFn>,
    pub body: Option<SchemaFn>,
    /// A body the reader accepts (checked by the tests against the real reader).
    pub example: Option<Value>,
    pub response: SchemaFn,
    pub tools: &'static [Tool],
}

impl Operation {
    fn of(method: &'static str, path: String, public: bool, d: &Doc) -> Operation {
        Operation {
            method,
            path,
            id: d.id,
            tag: d.tag,
            summary: d.summary,
            public,
            query: d.query,
            body: d.body,
            example: d
                .example
                .map(|e| serde_json::from_str(e).unwrap_or_else(|err| panic!("{}: the example is not JSON: {err}", d.id))),
            response: d.response,
            tools: d.tools,
        }
    }
}

/// Every documented endpoint, in the order of the route tables.
pub fn all() -> Vec<Operation> {
    let mut out = Vec::new();
    for row in TABLES.iter().flat_map(|t| t.iter()) {
        if let Some(d) = &row.doc {
            out.push(Operation::of(row.method.as_str(), format!("/api/v2{}", row.path), false, d));
        }
    }
    for row in PUBLIC_TABLES.iter().flat_map(|t| t.iter()) {
        if let Some(d) = &row.doc {
            out.push(Operation::of(row.method.as_str(), row.path.to_string(), true, d));
        }
    }
    out
}
