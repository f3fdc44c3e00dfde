//! Serving the description: `GET /openapi.json` (no credential: it says nothing about anyone's
//! data).

use crate::http::{bytes_response, HttpResponse};
use hyper::{Method, StatusCode};

/// The answer for `method` and `path` if they are the description's, else `None`.
pub fn respond(method: &Method, path: &str) -> Option<HttpResponse> {
    match (method, path) {
        (&Method::GET | &Method::HEAD, "/openapi.json") => Some(bytes_response(StatusCode::OK, super::document_bytes().to_vec())),
        _ => None,
    }
}
