//! Webhook requests (endpoint bodies, delivery-log parameters): their readers, and their
//! documentation.

use super::{DeliveryFilter, DeliveryStatus, EndpointFields};
use crate::clock::parse_datetime;
use crate::error::Result;
use crate::event::EventType;
use crate::list::{Query, QueryParams, DEFAULT_LIMIT, MAX_LIMIT};
use crate::wire::{enum_item, Body};
use serde_json::Value;

pub mod request;

/// `status`, `event_type`, `created_from`/`created_to` (date-times or dates), `page`, `limit`.
pub fn parse_delivery_list(params: &QueryParams) -> Result<(DeliveryFilter, u32, u32)> {
    let mut q = Query::new(params);
    let mut f = DeliveryFilter::default();
    if let Some(s) = q.str("status") {
        f.status = DeliveryStatus::parse(s.trim());
        if f.status.is_none() {
            q.fail("enum", "status", format!("Input should be {}", DeliveryStatus::expected()));
        }
    }
    if let Some(s) = q.str("event_type") {
        f.event_type = EventType::parse(s.trim());
        if f.event_type.is_none() {
            q.fail("enum", "event_type", format!("Input should be {}", EventType::expected()));
        }
    }
    for name in ["created_from", "created_to"] {
        if let Some(s) = q.str(name) {
            match parse_datetime(s.trim()) {
                Some(t) if name == "created_from" => f.from = Some(t),
                Some(t) => f.to = Some(t),
                None => q.fail("datetime_parsing", name, "Input should be a valid datetime"),
            }
        }
    }
    let mut page = 1;
    let mut limit = DEFAULT_LIMIT;
    if let Some(p) = q.str("page") {
        match p.trim().parse::<u32>() {
            Ok(n) if n > 0 => page = n,
            _ => q.fail("greater_than", "page", "Input should be an integer greater than 0"),
        }
    }
    if let Some(l) = q.str("limit").or_else(|| q.str("size")) {
        match l.trim().parse::<i64>() {
            Ok(n) if n > 0 => limit = n.min(i64::from(MAX_LIMIT)) as u32,
            _ => q.fail("greater_than", "limit", "Input should be an integer greater than 0"),
        }
    }
    q.finish()?;
    Ok((f, page, limit))
}

/// `page` and `limit` (≤ 100) of a list without sorting options.
pub fn parse_page(params: &QueryParams) -> Result<(u32, u32)> {
    let mut q = Query::new(params);
    // Only these: a `sort_field` or `search_term` here would be read by nothing (no sort, no search).
    let (page, limit) = q.paging();
    q.finish()?;
    Ok((page, limit))
}

/// Only absolute http(s) URLs with a host, no whitespace or control characters.
pub fn check_url(s: &str) -> std::result::Result<String, &'static str> {
    let s = s.trim();
    if s.len() > 2048 {
        return Err("the URL is longer than 2048 characters");
    }
    let rest = if let Some(r) = s.strip_prefix("https://") {
        r
    } else if let Some(r) = s.strip_prefix("http://") {
        r
    } else {
        return Err("the URL must start with http:// or https://");
    };
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the URL must not contain spaces or control characters");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let (host, port) = if let Some(h) = host_port.strip_prefix('[') {
        let (h, p) = h.split_once(']').ok_or("the URL has a malformed host")?;
        (h, p.strip_prefix(':'))
    } else {
        match host_port.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    if host.is_empty() || !host.chars().all(|c| c.is_ascii_alphanumeric() || "-._:".contains(c)) {
        return Err("the URL has no valid host");
    }
    if let Some(p) = port {
        if p.is_empty() || p.parse::<u16>().is_err() {
            return Err("the URL has an invalid port");
        }
    }
    Ok(s.to_string())
}

/// An `event_types` field: `"all"` (or `"*"`, or a list holding either) for every type, else a
/// non-empty list of types (duplicates dropped). `Some(None)` is "all"; `None` when absent or
/// invalid (then `b` holds the problem).
pub fn event_types(b: &mut Body<'_>, field: &str) -> Option<Option<Vec<EventType>>> {
    match b.raw(field) {
        None => None,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("all") || s == "*" => Some(None),
        Some(Value::Array(items)) if items.iter().any(|i| i.as_str().is_some_and(|s| s.eq_ignore_ascii_case("all") || s == "*")) => Some(None),
        Some(Value::Array(items)) if items.is_empty() => {
            b.fail("too_short", field, "List should have at least 1 item (or be \"all\")");
            None
        }
        Some(_) => b
            .opt_list(field, |v, loc, p| enum_item(v, loc, p, EventType::parse, &EventType::expected()))
            .map(|mut ts| {
                let mut seen = std::collections::HashSet::new();
                ts.retain(|t| seen.insert(*t));
                Some(ts)
            }),
    }
}

impl EndpointFields {
    pub fn parse(v: &Value, create: bool) -> Result<Self> {
        let mut b = Body::new(v);
        let url = if create { b.req_str("url") } else { b.opt_str("url") };
        let url = match url.map(|u| check_url(&u)) {
            Some(Ok(u)) => Some(u),
            Some(Err(msg)) => {
                b.fail("url_parsing", "url", format!("Input should be a valid URL, {msg}"));
                None
            }
            None => None,
        };
        let event_types = event_types(&mut b, "event_types");
        let description = b.opt_str("description").map(|d| d.trim().to_string());
        if description.as_ref().is_some_and(|d| d.chars().count() > 1000) {
            b.fail("string_too_long", "description", "String should have at most 1000 characters");
        }
        let enabled = b.opt_bool("enabled");
        b.finish()?;
        Ok(EndpointFields {
            url,
            event_types,
            description,
            enabled,
        })
    }
}
