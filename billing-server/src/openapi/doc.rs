//! What a route row says of its endpoint, for `/openapi.json` and the MCP tools: its operation
//! id, tag, summary, query, request body (with an example the real reader accepts) and response
//! types, and the tools of the public tool server that call it. One description per endpoint,
//! on the row that routes it (`api/<resource>.rs`); [`super::operations::all`] reads them.

use schemars::{JsonSchema, Schema, SchemaGenerator};

pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// The description of one endpoint.
#[derive(Clone, Copy)]
pub struct Doc {
    /// The operation id (also the name of the tool that calls it, where it has one).
    pub id: &'static str,
    pub tag: &'static str,
    pub summary: &'static str,
    pub query: Option<SchemaFn>,
    pub body: Option<SchemaFn>,
    /// A body the reader accepts, as JSON text (checked against the schema and the reader).
    pub example: Option<&'static str>,
    pub response: SchemaFn,
    /// The tools of the MCP server that call this endpoint.
    pub tools: &'static [Tool],
}

/// One tool of the MCP server: an endpoint under a name, with what it does and the body fields
/// it sets itself (`deactivate_payment_link` sends `{"status": "INACTIVE"}`).
#[derive(Clone, Copy)]
pub struct Tool {
    pub name: &'static str,
    /// JSON text of the fixed body fields (empty: none).
    pub fixed: &'static str,
    pub description: &'static str,
}

/// `doc("list_customers", "Consumers", "List consumers")`, then its types.
pub const fn doc(id: &'static str, tag: &'static str, summary: &'static str) -> Doc {
    Doc {
        id,
        tag,
        summary,
        query: None,
        body: None,
        example: None,
        response: schema::<super::shapes::Empty>,
        tools: &[],
    }
}

/// A tool that sends what its caller gives.
pub const fn tool(name: &'static str, description: &'static str) -> Tool {
    Tool { name, fixed: "", description }
}

/// A tool that sets some body fields itself.
pub const fn tool_fixed(name: &'static str, fixed: &'static str, description: &'static str) -> Tool {
    Tool { name, fixed, description }
}

impl Doc {
    /// Its query parameters (a list's filters and paging).
    pub const fn query<T: JsonSchema>(mut self) -> Doc {
        self.query = Some(schema::<T>);
        self
    }

    /// Its request body, and an example of one (JSON text).
    pub const fn body<T: JsonSchema>(mut self, example: &'static str) -> Doc {
        self.body = Some(schema::<T>);
        self.example = Some(example);
        self
    }

    /// Its success answer.
    pub const fn ok<T: JsonSchema>(mut self) -> Doc {
        self.response = schema::<T>;
        self
    }

    pub const fn tools(mut self, tools: &'static [Tool]) -> Doc {
        self.tools = tools;
        self
    }
}
