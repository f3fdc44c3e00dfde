//! The API's handlers, one file per resource named as in billing-core. Each file lists its
//! route rows (`ROUTES`) and its handlers; a handler turns the request's raw parts into typed
//! input (billing-core's parsers) and calls one billing-core operation. There is no business
//! logic here. Adding a resource: one file here with its `ROUTES`, and a line in [`TABLES`].

mod api_key;
mod branch;
mod checkout;
mod consumer;
mod coupon;
mod invoice;
mod notification;
mod org;
mod pages;
mod payment;
mod payment_link;
mod product;
mod sandbox;
mod subscription;
mod subscription_freeze;
mod webhook;

use crate::http::Incoming2;
use crate::router::{PublicRoute, Route};
use billing_core::error::{Error, FieldError, Result};
use billing_core::list::QueryParams;
use serde_json::Value;
use std::str::FromStr;

/// Every resource's route rows.
pub static TABLES: &[&[Route]] = &[
    org::ROUTES,
    api_key::ROUTES,
    branch::ROUTES,
    sandbox::ROUTES,
    consumer::ROUTES,
    product::ROUTES,
    coupon::ROUTES,
    webhook::ROUTES,
    invoice::ROUTES,
    payment::ROUTES,
    payment_link::ROUTES,
    subscription::ROUTES,
    subscription_freeze::ROUTES,
    notification::ROUTES,
];

/// The public rows (no credentials; full paths under `/pay/`, `/embed.js`, and the API paths of
/// [`PUBLIC_API_PATHS`]): the checkout and its pages, accepting an invitation.
pub static PUBLIC_TABLES: &[&[PublicRoute]] = &[checkout::ROUTES, pages::ROUTES, org::PUBLIC_ROUTES, pages::invite::ROUTES];

/// The paths besides `/pay/…` that take no credential (their public rows answer them): accepting
/// an invitation, by the API and on its page.
pub const PUBLIC_API_PATHS: &[&str] = &["/api/v2/organization/invite/accept", "/invite/accept"];

pub enum Reply {
    Json(Value),
    /// A body already serialized (hot paths serialize their response structs directly).
    Bytes(Vec<u8>),
    /// The spec's "empty success body".
    Empty,
    /// A hosted page or one of its assets (see [`Page`]).
    Page(Page),
}

/// A hosted page or asset: its status, type and body. Every one is sent with
/// `X-Content-Type-Options: nosniff` and a strict Content-Security-Policy (everything from this
/// server, no inline script or style); a page refuses framing (`frame-ancestors 'none'`,
/// `X-Frame-Options: DENY`) unless it is the embedded checkout (`?embed=true`).
pub struct Page {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// Whether other sites may frame it (the embedded checkout).
    pub frameable: bool,
    /// Whether it may be cached (the compiled-in assets): pages are `no-store`.
    pub cacheable: bool,
}

impl Page {
    pub fn html(status: u16, frameable: bool, body: String) -> Page {
        Page {
            status,
            content_type: "text/html; charset=utf-8",
            body: body.into_bytes(),
            frameable,
            cacheable: false,
        }
    }

    pub fn asset(content_type: &'static str, body: &'static str) -> Page {
        Page {
            status: 200,
            content_type,
            body: body.as_bytes().to_vec(),
            frameable: false,
            cacheable: true,
        }
    }

    /// The Content-Security-Policy it is sent with.
    pub fn csp(&self) -> String {
        let frame = if self.frameable { "*" } else { "'none'" };
        format!(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors {frame}"
        )
    }
}

impl Reply {
    /// Serializes a response struct without building a `Value` tree first.
    pub fn of<T: serde::Serialize>(body: &T) -> Reply {
        Reply::Bytes(serde_json::to_vec(body).expect("response types serialize"))
    }

    /// The list envelope of a page: `data` and `pagination`.
    pub fn page<T: serde::Serialize>(data: Vec<T>, pagination: billing_core::list::Pagination) -> Reply {
        Reply::of(&billing_core::list::ListResource { data, pagination })
    }
}

/// What a handler may read of its request, owned so that the operation can move to another
/// thread: the path parameters (by name), the JSON body, the query and the headers it uses.
pub struct Request {
    pub params: Vec<(&'static str, String)>,
    pub body: Result<Value>,
    pub query: QueryParams,
    pub language: Option<String>,
    /// The client's IP address (the connection's peer; public rows only, else empty).
    pub client: String,
    /// The fields of an `application/x-www-form-urlencoded` body (a hosted page's form), else
    /// none.
    pub form: QueryParams,
}

impl Request {
    pub fn new(req: &Incoming2, params: Vec<(&'static str, String)>) -> Self {
        Request {
            params,
            body: req.json(),
            query: req.query.clone(),
            language: req.header("language").map(str::to_string),
            client: String::new(),
            form: match req.header("content-type") {
                Some(t) if t.to_ascii_lowercase().starts_with("application/x-www-form-urlencoded") => QueryParams::parse(&String::from_utf8_lossy(&req.body)),
                _ => QueryParams::default(),
            },
        }
    }

    /// The path parameter `name` as a UUID; anything else is a 422 at `["path", name]`.
    pub fn id<T: FromStr>(&self, name: &str) -> Result<T> {
        let raw = self.params.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str()).unwrap_or_default();
        T::from_str(raw).map_err(|_| {
            Error::invalid(FieldError::new(
                "uuid_parsing",
                vec!["path".into(), name.into()],
                "Input should be a valid UUID",
            ))
        })
    }

    /// The path parameter `name` as sent.
    pub fn param(&self, name: &str) -> &str {
        self.params.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str()).unwrap_or_default()
    }

    /// The JSON body (a malformed one is a 422 at `["body"]`).
    pub fn body(&self) -> Result<&Value> {
        self.body.as_ref().map_err(Clone::clone)
    }
}
