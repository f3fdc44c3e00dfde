//! The HTTP edge: reading requests (body limit, JSON, query) and writing responses. The one
//! place where core errors become HTTP statuses and bodies.

use billing_core::error::{Code, Error, FieldError};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};

pub type HttpResponse = Response<Full<Bytes>>;

pub fn json_response(status: StatusCode, body: &Value) -> HttpResponse {
    bytes_response(status, serde_json::to_vec(body).expect("JSON values serialize"))
}

/// A response whose body is JSON already serialized.
pub fn bytes_response(status: StatusCode, bytes: Vec<u8>) -> HttpResponse {
    let mut r = Response::new(Full::new(Bytes::from(bytes)));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// A plain-text response (`GET /metrics`).
pub fn text_response(status: StatusCode, content_type: &'static str, text: String) -> HttpResponse {
    let mut r = Response::new(Full::new(Bytes::from(text)));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A hosted page or asset with its security headers (see [`crate::api::Page`]).
pub fn page_response(p: crate::api::Page) -> HttpResponse {
    let csp = p.csp();
    let mut r = Response::new(Full::new(Bytes::from(p.body)));
    *r.status_mut() = StatusCode::from_u16(p.status).unwrap_or(StatusCode::OK);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(p.content_type));
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert("content-security-policy", v);
    }
    if !p.frameable {
        h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    }
    let cache = if p.cacheable { "public, max-age=300" } else { "no-store" };
    h.insert("cache-control", HeaderValue::from_static(cache));
    r
}

pub fn ok(body: &Value) -> HttpResponse {
    json_response(StatusCode::OK, body)
}

/// Maps a core error to its response: validation errors as `{"detail": [...]}` (422), handled
/// errors in the `{"error": {code, message, additional_info}}` envelope with the status of the
/// code's class, anything unexpected as a 500 whose details go only to the log.
pub fn error_response(e: &Error) -> HttpResponse {
    match e {
        Error::Validation(detail) => json_response(StatusCode::UNPROCESSABLE_ENTITY, &json!({ "detail": detail })),
        Error::Rule { code, info } => envelope(*code, info.clone()),
        Error::MultiplePayments { payment_ids, total_amount } => {
            let mut body = envelope_body(
                Code::INVALID_PARAMETERS,
                Some("The payment was paid in one transaction with other payments; refund them together with allow_refund_multiple_related_payments".into()),
            );
            body["payment_ids"] = json!(payment_ids);
            body["total_amount"] = json!(total_amount);
            json_response(StatusCode::BAD_REQUEST, &body)
        }
        Error::Store(err) => {
            tracing::error!(error = %err, "store failure");
            envelope(Code::SERVICE_UNKNOWN_ERROR, None)
        }
    }
}

fn envelope_body(code: Code, info: Option<String>) -> Value {
    json!({"error": {"code": code.as_str(), "message": code.message(), "additional_info": info}})
}

pub fn envelope(code: Code, info: Option<String>) -> HttpResponse {
    let status = StatusCode::from_u16(code.class().status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &envelope_body(code, info))
}

/// A request as the handlers see it: everything read, nothing typed yet.
pub struct Incoming2 {
    pub method: hyper::Method,
    pub path: String,
    pub query: billing_core::list::QueryParams,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

pub enum ReadError {
    TooLarge,
    /// The body did not arrive within the time allowed.
    TimedOut,
    Broken,
}

/// Reads the whole body, refusing more than `limit` bytes or taking longer than `timeout`.
pub async fn read_request(parts: hyper::http::request::Parts, body: Incoming, limit: usize, timeout: std::time::Duration) -> Result<Incoming2, ReadError> {
    if let Some(len) = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
    {
        if len > limit {
            return Err(ReadError::TooLarge);
        }
    }
    // A request without a body (most reads) takes no timer.
    let body = if hyper::body::Body::is_end_stream(&body) {
        Bytes::new()
    } else {
        read_body(body, limit, timeout).await?
    };
    Ok(Incoming2 {
        method: parts.method,
        path: parts.uri.path().to_string(),
        query: billing_core::list::QueryParams::parse(parts.uri.query().unwrap_or("")),
        headers: parts.headers,
        body,
    })
}

async fn read_body(body: Incoming, limit: usize, timeout: std::time::Duration) -> Result<Bytes, ReadError> {
    match tokio::time::timeout(timeout, Limited::new(body, limit).collect()).await {
        Err(_) => Err(ReadError::TimedOut),
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => Err(ReadError::TooLarge),
        Ok(Err(_)) => Err(ReadError::Broken),
    }
}

impl Incoming2 {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The JSON body; an empty body reads as `null` (the field readers then report it missing),
    /// malformed JSON is a 422 at `["body"]`.
    pub fn json(&self) -> Result<Value, Error> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&self.body).map_err(|e| Error::invalid(FieldError::new("json_invalid", vec!["body".into()], format!("JSON decode error: {e}"))))
    }
}
