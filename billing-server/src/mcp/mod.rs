//! `/mcp`: the tool server for AI clients (Model Context Protocol over streamable HTTP, rmcp's
//! server served through hyper by its tower service: stateless, JSON answers).
//!
//! Each tool is one operation of the route tables ([`tools`]): a call resolves the tool's method
//! and path to the route row, authenticates the `Authorization: Bearer <x-api-key value>` with the
//! request's `x-branch-id` exactly as the HTTP API does, and runs the row's own handler (the same
//! reader, operation, roles and branch scope) on its lane. A missing or wrong credential is a
//! protocol error and nothing runs; the API's errors are tool errors carrying the API's answer.
//! The API description is a resource (`openapi://billing/openapi.json`) readable without a
//! credential, and `search_api_docs` searches it.

pub mod tools;

use crate::api::{Reply, Request as OpRequest};
use crate::http::HttpResponse;
use crate::router::{resolve, Resolution};
use crate::App;
use billing_core::auth::{Credential, Scope};
use billing_core::error::{Code, Error, FieldError};
use billing_core::ids::BranchId;
use billing_core::list::QueryParams;
use billing_core::Lane;
use http_body_util::{BodyExt, Full};
use hyper::Method;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock as Content, ErrorCode, ErrorData, Implementation, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerInfo, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The description's resource address.
pub const DOCUMENT_URI: &str = "openapi://billing/openapi.json";

/// The JSON-RPC error code of a refused credential (the implementation-defined server range).
pub const UNAUTHORIZED: ErrorCode = ErrorCode(-32001);

/// How long a tool's operation may take once its request is in.
const EXCHANGE_TIME: std::time::Duration = std::time::Duration::from_secs(60);

/// Answers one HTTP request to `/mcp`.
pub async fn serve(app: Arc<App>, req: hyper::Request<hyper::body::Incoming>) -> HttpResponse {
    // Stateless, JSON answers: every POST is one exchange, so any process behind a load balancer
    // answers it and nothing is held between requests. The Host check rmcp makes against DNS
    // rebinding is left off: every tool needs the API key, and the description is public.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_stateful_mode(false)
        .with_json_response(true);
    // The body is read before the credential is checked (inside the exchange), so as an
    // unauthenticated one: a small limit (413), a short time (408), the process's budget of such
    // bodies (503), its connection pushable meanwhile; then the exchange has EXCHANGE_TIME.
    let mark = req.extensions().get::<crate::connections::Mark>().cloned();
    let (parts, body) = req.into_parts();
    let limits = crate::untrusted::limits(app.config.body_limit, app.config.body_timeout);
    let (limit, timeout) = limits;
    let _admitted = match crate::untrusted::admit(&app.untrusted_bodies, mark.as_ref(), &parts.headers, &body, limit) {
        Ok(a) => a,
        Err(crate::untrusted::Refused::Busy) => return crate::busy(),
        Err(crate::untrusted::Refused::Read(e)) => return crate::read_failed(limits, e),
    };
    let bytes = match tokio::time::timeout(timeout, http_body_util::Limited::new(body, limit).collect()).await {
        Ok(Ok(c)) => c.to_bytes(),
        Ok(Err(e)) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => return crate::read_failed(limits, crate::http::ReadError::TooLarge),
        Ok(Err(_)) => return crate::http::envelope(Code::INVALID_PARAMETERS, Some("the request body could not be read".into())),
        Err(_) => return crate::read_failed(limits, crate::http::ReadError::TimedOut),
    };
    let req = hyper::Request::from_parts(parts, Full::new(bytes));
    let handler = Tools { app };
    let service = StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(LocalSessionManager::default()), config);
    let service = hyper_util::service::TowerToHyperService::new(service);
    let response = match tokio::time::timeout(EXCHANGE_TIME, hyper::service::Service::call(&service, req)).await {
        Ok(Ok(r)) => r,
        Ok(Err(never)) => match never {},
        Err(_) => {
            return crate::http::envelope(
                Code::REQUEST_TIMEOUT,
                Some(format!("the exchange took more than {} s", EXCHANGE_TIME.as_secs())),
            )
        }
    };
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    hyper::Response::from_parts(parts, Full::new(bytes))
}

#[derive(Clone)]
struct Tools {
    app: Arc<App>,
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("billing", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Billing and payment collection (API v2). Tool calls need `Authorization: Bearer <x-api-key value>`; \
send `x-branch-id` to act in another branch. The API description is the resource openapi://billing/openapi.json; \
search it with search_api_docs.",
            )
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let mut list: Vec<Tool> = tools::all()
            .iter()
            .map(|t| Tool::new(t.name, t.description.clone(), Arc::new(t.input_schema.clone())))
            .collect();
        list.push(Tool::new(
            tools::SEARCH,
            "Search the API description (/openapi.json) for operations: their method, path, summary, fields and tool.",
            Arc::new(tools::search_schema()),
        ));
        Ok(ListToolsResult::with_all_items(list))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        let headers = context
            .extensions
            .get::<hyper::http::request::Parts>()
            .map(|p| p.headers.clone())
            .unwrap_or_default();
        let args = request.arguments.unwrap_or_default();
        let name = request.name.to_string();
        if name != tools::SEARCH && tools::find(&name).is_none() {
            return Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, format!("no tool named {name}"), None));
        }
        // The credential first: without a valid one nothing runs.
        let credential = bearer(&headers).map_err(refused)?;
        let branch = branch(&headers);
        let app = self.app.clone();
        let lane = match tools::find(&name) {
            Some(t) => route_of(t, &args).map(|(r, _)| r.lane).unwrap_or(Lane::Read),
            None => Lane::Read,
        };
        let scope = crate::on_lane(app.clone(), Lane::Read, move |app| {
            let branch = branch?;
            app.billing.authenticate_for(&credential, branch, lane)
        })
        .await;
        let scope = match scope {
            Ok(s) => s,
            Err(Error::Rule {
                code: Code::UNAUTHORIZED,
                info,
            }) => return Err(refused(Error::unauthorized(info.unwrap_or_default()))),
            Err(e) => return Ok(failed(&e).await),
        };
        if name == tools::SEARCH {
            let query = args.get("query").and_then(Value::as_str).unwrap_or("");
            let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(10).clamp(1, 50) as usize;
            return Ok(CallToolResult::success(vec![Content::text(tools::search(query, limit).to_string())]));
        }
        let tool = tools::find(&name).expect("checked");
        Ok(run(app, tool, scope, args).await)
    }

    async fn list_resources(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![Resource::new(DOCUMENT_URI, "openapi.json")
            .with_description("The API description: OpenAPI 3.1.0, version 2")
            .with_mime_type("application/json")]))
    }

    async fn read_resource(&self, request: ReadResourceRequestParams, _: RequestContext<RoleServer>) -> Result<ReadResourceResult, ErrorData> {
        if request.uri != DOCUMENT_URI {
            return Err(ErrorData::resource_not_found(format!("no resource {}", request.uri), None));
        }
        let text = String::from_utf8_lossy(crate::openapi::document_bytes()).into_owned();
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, DOCUMENT_URI).with_mime_type("application/json")
        ]))
    }
}

/// `Authorization: Bearer <x-api-key value>` as a credential.
fn bearer(headers: &hyper::HeaderMap) -> Result<Credential, Error> {
    let value = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| Error::unauthorized("send Authorization: Bearer <x-api-key value>"))?;
    Credential::from_api_key_header(value)
}

/// The `x-branch-id` header, as the HTTP API reads it (empty is none; not a UUID is a 422).
fn branch(headers: &hyper::HeaderMap) -> Result<Option<BranchId>, Error> {
    match headers
        .get("x-branch-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        None => Ok(None),
        Some(b) => b.parse().map(Some).map_err(|_| {
            Error::invalid(FieldError::new(
                "uuid_parsing",
                vec!["header".into(), "x-branch-id".into()],
                "Input should be a valid UUID",
            ))
        }),
    }
}

/// A refused credential: the protocol's error (nothing runs).
fn refused(e: Error) -> ErrorData {
    let detail = match &e {
        Error::Rule { info, .. } => info.clone().unwrap_or_default(),
        other => other.to_string(),
    };
    ErrorData::new(UNAUTHORIZED, format!("Unauthorized: {detail}"), Some(json!({"code": "UNAUTHORIZED"})))
}

/// The API's answer to an error (the HTTP edge's own mapping), as a tool error:
/// `{"status", "body"}`.
async fn failed(e: &Error) -> CallToolResult {
    let response = crate::http::error_response(e);
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    CallToolResult::error(vec![Content::text(json!({"status": status, "body": body}).to_string())])
}

/// A route row and its path parameters.
type Routed = (&'static crate::router::Route, Vec<(&'static str, String)>);

/// The route row of a tool and the path it is called on (the arguments fill the path).
fn route_of(tool: &tools::ToolDef, args: &Map<String, Value>) -> Result<Routed, Error> {
    let mut path = tool.path.to_string();
    for name in crate::openapi::path_params(tool.path) {
        let value = args.get(name).and_then(Value::as_str).unwrap_or("").to_string();
        if value.is_empty() || value.contains('/') {
            return Err(Error::invalid(FieldError::new("missing", vec!["path".into(), name.into()], "Field required")));
        }
        path = path.replace(&format!("{{{name}}}"), &value);
    }
    let method = Method::from_bytes(tool.method.as_bytes()).expect("a method");
    match resolve(&method, &path) {
        Resolution::Found(route, params) => Ok((route, params)),
        _ => Err(Error::rule(Code::NOT_FOUND, format!("no route for {} {path}", tool.method))),
    }
}

/// Runs a tool's operation: its route row's handler, with the arguments as the path, the query
/// (GET) or the body, on the row's lane.
async fn run(app: Arc<App>, tool: &'static tools::ToolDef, scope: Scope, args: Map<String, Value>) -> CallToolResult {
    let (route, params) = match route_of(tool, &args) {
        Ok(r) => r,
        Err(e) => return failed(&e).await,
    };
    let path_names = crate::openapi::path_params(tool.path);
    let rest: Map<String, Value> = args.into_iter().filter(|(k, _)| !path_names.contains(&k.as_str())).collect();
    let (body, query) = if tool.method == "GET" {
        (Value::Null, query_of(&rest))
    } else {
        let mut body = Value::Object(rest);
        for (k, v) in tool.fixed.as_object().into_iter().flatten() {
            body[k] = v.clone();
        }
        (body, QueryParams::default())
    };
    let input = OpRequest {
        params,
        body: Ok(body),
        query,
        language: None,
        client: String::new(),
        form: QueryParams::default(),
    };
    let handler = route.handler;
    let result = crate::on_lane(app, route.lane, move |app| {
        input.query.check()?;
        handler(&app.billing, &scope, input)
    })
    .await;
    match result {
        Ok(reply) => CallToolResult::success(vec![Content::text(reply_json(reply).to_string())]),
        Err(e) => failed(&e).await,
    }
}

/// Tool arguments as a query string's pairs: lists repeat the key, scalars are their text.
fn query_of(args: &Map<String, Value>) -> QueryParams {
    let mut pairs = vec![];
    for (k, v) in args {
        let values: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            Value::Null => vec![],
            other => vec![other],
        };
        for v in values {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            pairs.push((k.clone(), text));
        }
    }
    QueryParams(pairs)
}

fn reply_json(reply: Reply) -> Value {
    match reply {
        Reply::Json(v) => v,
        Reply::Bytes(b) => serde_json::from_slice(&b).unwrap_or(Value::Null),
        Reply::Empty => json!({}),
        Reply::Page(_) => Value::Null,
    }
}
