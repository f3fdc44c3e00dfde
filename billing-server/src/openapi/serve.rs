//! Serving the description: `GET /openapi.json`, and the reference page `GET /docs` that renders
//! it (its script and style are compiled in: nothing comes from elsewhere). Neither needs a
//! credential: they say nothing about anyone's data. The page sends its requests with the key the
//! reader types in (kept in the tab's sessionStorage).

use crate::api::Page;
use crate::http::{bytes_response, page_response, HttpResponse};
use hyper::{Method, StatusCode};

const DOCS_HTML: &str = include_str!("../../assets/docs/docs.html");
const DOCS_JS: &str = include_str!("../../assets/docs/docs.js");
const DOCS_CSS: &str = include_str!("../../assets/docs/docs.css");

/// The answer for `method` and `path` if they are the description's, else `None`.
pub fn respond(method: &Method, path: &str) -> Option<HttpResponse> {
    if method != Method::GET && method != Method::HEAD {
        return None;
    }
    Some(match path {
        "/openapi.json" => bytes_response(StatusCode::OK, super::document_bytes().to_vec()),
        "/docs" | "/docs/" => page_response(Page::html(200, false, DOCS_HTML.to_string())),
        "/docs/assets/docs.js" => page_response(Page::asset("text/javascript; charset=utf-8", DOCS_JS)),
        "/docs/assets/docs.css" => page_response(Page::asset("text/css; charset=utf-8", DOCS_CSS)),
        _ => return None,
    })
}
