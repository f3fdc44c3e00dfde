//! The list envelope and the common list parameters (page, limit, sort_field, sort_direction,
//! search_term), parsed from a query string into typed values.

use crate::error::{Error, FieldError, Problems};
use serde::Serialize;

pub const DEFAULT_LIMIT: u32 = 10;
pub const MAX_LIMIT: u32 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    Asc,
    #[default]
    Desc,
}

impl Direction {
    pub fn sql(self) -> &'static str {
        match self {
            Direction::Asc => "ASC",
            Direction::Desc => "DESC",
        }
    }
}

/// A page request plus sorting and free-text search; `S` is the resource's sort-field enum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery<S> {
    pub page: u32,
    pub limit: u32,
    pub sort: S,
    pub direction: Direction,
    pub search: Option<String>,
}

impl<S> ListQuery<S> {
    pub fn new(sort: S) -> Self {
        Self {
            page: 1,
            limit: DEFAULT_LIMIT,
            sort,
            direction: Direction::Desc,
            search: None,
        }
    }
    pub fn offset(&self) -> u64 {
        u64::from(self.page - 1) * u64::from(self.limit)
    }
}

/// One page of results and the number of results across all pages (filters applied).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: u64,
    pub page: u32,
    pub limit: u32,
}

impl<T> Page<T> {
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            total: self.total,
            page: self.page,
            limit: self.limit,
        }
    }

    pub fn pagination(&self) -> Pagination {
        let max_page = self.total.div_ceil(u64::from(self.limit)).max(1);
        Pagination {
            // The spec defines total_count as the number of objects in the current page.
            total_count: self.items.len() as u64,
            max_page,
            current_page: self.page,
            limit: self.limit,
            has_next_page: u64::from(self.page) < max_page,
            has_previous_page: self.page > 1,
        }
    }
}

/// Pagination: where a page of a list is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Pagination {
    /// How many items this page holds.
    #[schemars(with = "crate::schema::Number")]
    pub total_count: u64,
    /// The last page's number (1 for an empty list).
    #[schemars(with = "crate::schema::Number")]
    pub max_page: u64,
    /// This page's number, from 1.
    #[schemars(with = "crate::schema::Number")]
    pub current_page: u32,
    /// The most items a page holds.
    #[schemars(with = "crate::schema::Number")]
    pub limit: u32,
    /// Whether a page follows this one.
    pub has_next_page: bool,
    /// Whether a page comes before this one.
    pub has_previous_page: bool,
}

/// ListResource_<T>_: a page of a list, as every list answers it.
#[derive(Debug, Serialize)]
pub struct ListResource<T> {
    pub data: Vec<T>,
    pub pagination: Pagination,
}

impl<T> ListResource<T> {
    /// The page's items as views (`view` makes each).
    pub fn of<I>(page: &Page<I>, view: impl FnMut(&I) -> T) -> Self {
        ListResource {
            data: page.items.iter().map(view).collect(),
            pagination: page.pagination(),
        }
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for ListResource<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("ListResource_{}_", T::schema_name()).into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut data = g.subschema_for::<Vec<T>>();
        data.insert("description".into(), "The page's items.".into());
        let mut pagination = g.subschema_for::<Pagination>();
        pagination.insert("description".into(), "Where this page is in the list.".into());
        schemars::json_schema!({
            "type": "object",
            "description": "A page of a list.",
            "properties": {
                "data": data,
                "pagination": pagination,
            },
            "required": ["data", "pagination"],
        })
    }
}

/// Query-string parameters in order, with repeated keys kept (`statuses=A&statuses=B`).
#[derive(Debug, Clone, Default)]
pub struct QueryParams(pub Vec<(String, String)>);

impl QueryParams {
    pub fn parse(query: &str) -> Self {
        QueryParams(
            query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap_or((p, ""));
                    (percent_decode(k), percent_decode(v))
                })
                .collect(),
        )
    }
    pub fn get(&self, key: &str) -> Option<&str> {
        crate::wire::reads::note(|| key.to_string());
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        crate::wire::reads::note(|| key.to_string());
        self.0.iter().filter(move |(k, _)| k == key).map(|(_, v)| v.as_str())
    }
    /// A 422 naming every parameter whose name or value holds a control character (NUL, line
    /// breaks, …): no endpoint reads such text and no store should see it.
    pub fn check(&self) -> crate::Result<()> {
        let mut problems = Problems::default();
        for (k, v) in &self.0 {
            if k.chars().chain(v.chars()).any(char::is_control) {
                problems.push(FieldError::query("string_pattern_mismatch", k, "Input should not contain control characters"));
            }
        }
        problems.into_result()
    }
    /// Pairs whose key starts with `prefix`, with the prefix removed (`external_metadata.`).
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        crate::wire::reads::note(|| format!("{prefix}*"));
        self.0.iter().filter_map(move |(k, v)| k.strip_prefix(prefix).map(|rest| (rest, v.as_str())))
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads query parameters into typed values, collecting `detail` entries with `loc`
/// `["query", name]`.
pub struct Query<'a> {
    pub params: &'a QueryParams,
    pub problems: Problems,
}

impl<'a> Query<'a> {
    /// Starts reading `params`. A parameter whose name or value holds a control character (NUL,
    /// line breaks, …) is refused here, whatever the endpoint reads: no store sees such text.
    pub fn new(params: &'a QueryParams) -> Self {
        let mut q = Self {
            params,
            problems: Problems::default(),
        };
        for (k, v) in &params.0 {
            if k.chars().chain(v.chars()).any(char::is_control) {
                q.fail("string_pattern_mismatch", k, "Input should not contain control characters");
            }
        }
        q
    }

    pub fn fail(&mut self, kind: &str, name: &str, msg: impl Into<String>) {
        self.problems.push(FieldError::query(kind, name, msg));
    }

    pub fn str(&mut self, name: &str) -> Option<String> {
        self.params.get(name).map(str::to_string)
    }

    /// `page` and `limit` (or its alias `size`) alone: for a list without sorting or search.
    pub fn paging(&mut self) -> (u32, u32) {
        let mut q = ListQuery::new(());
        if let Some(p) = self.params.get("page") {
            if let Some(n) = self.positive("page", p) {
                q.page = n;
            }
        }
        let limit = self
            .params
            .get("limit")
            .map(|v| ("limit", v))
            .or_else(|| self.params.get("size").map(|v| ("size", v)));
        if let Some((name, l)) = limit {
            // Over the maximum is capped (and echoed capped), as the public API does.
            let l = l.trim();
            let huge = !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()) && l.trim_start_matches('0').len() > 9;
            if huge {
                q.limit = MAX_LIMIT;
            } else if let Some(n) = self.positive(name, l) {
                q.limit = n.min(MAX_LIMIT);
            }
        }
        (q.page, q.limit)
    }

    /// Common list parameters; `parse_sort` maps a `sort_field` to the resource's enum.
    pub fn list<S: Copy>(&mut self, default_sort: S, parse_sort: impl Fn(&str) -> Option<S>, sort_names: &str) -> ListQuery<S> {
        let mut q = ListQuery::new(default_sort);
        (q.page, q.limit) = self.paging();
        if let Some(f) = self.params.get("sort_field") {
            match parse_sort(f.trim()) {
                Some(s) => q.sort = s,
                None => self.fail("enum", "sort_field", format!("Input should be {sort_names}")),
            }
        }
        if let Some(d) = self.params.get("sort_direction") {
            match d.trim().to_ascii_lowercase().as_str() {
                "asc" => q.direction = Direction::Asc,
                "desc" => q.direction = Direction::Desc,
                _ => self.fail("enum", "sort_direction", "Input should be 'asc' or 'desc'"),
            }
        }
        q.search = self.params.get("search_term").map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
        q
    }

    /// A whole number from 1 to 4294967295, with a message that says which of those it is not.
    pub fn positive(&mut self, name: &str, raw: &str) -> Option<u32> {
        let raw = raw.trim();
        let digits = raw.strip_prefix('+').unwrap_or(raw);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            if raw.strip_prefix('-').is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) {
                self.fail("greater_than", name, "Input should be greater than 0");
            } else {
                self.fail("int_parsing", name, "Input should be a valid integer");
            }
            return None;
        }
        match digits.parse::<u32>() {
            Ok(0) => {
                self.fail("greater_than", name, "Input should be greater than 0");
                None
            }
            Ok(n) => Some(n),
            Err(_) => {
                self.fail("less_than_equal", name, format!("Input should be less than or equal to {}", u32::MAX));
                None
            }
        }
    }

    pub fn bool(&mut self, name: &str) -> Option<bool> {
        let v = self.params.get(name)?;
        match v.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Some(true),
            "false" | "0" | "no" | "off" => Some(false),
            _ => {
                self.fail("bool_parsing", name, "Input should be a valid boolean");
                None
            }
        }
    }

    /// A repeated or comma-separated list of enum values (`statuses=A,B&statuses=C`).
    pub fn enums<T: Copy>(&mut self, name: &str, parse: impl Fn(&str) -> Option<T>, expected: &str) -> Vec<T> {
        let mut out = vec![];
        let raw: Vec<String> = self.params.all(name).map(str::to_string).collect();
        for v in raw.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|v| !v.is_empty()) {
            match parse(v) {
                Some(x) => out.push(x),
                None => self.fail("enum", name, format!("Input should be {expected}")),
            }
        }
        out
    }

    /// A repeated or comma-separated list of currency codes (any case).
    pub fn currencies(&mut self, name: &str) -> Vec<crate::money::Currency> {
        let mut out = vec![];
        let raw: Vec<String> = self.params.all(name).map(str::to_string).collect();
        for c in raw.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|v| !v.is_empty()) {
            match c.to_ascii_uppercase().parse::<crate::money::Currency>() {
                Ok(c) => out.push(c),
                Err(()) => self.fail("enum", name, format!("'{c}' is not a supported currency")),
            }
        }
        out
    }

    /// A repeated or comma-separated list of UUIDs.
    pub fn uuids<T: std::str::FromStr>(&mut self, name: &str) -> Vec<T> {
        let mut out = vec![];
        let raw: Vec<String> = self.params.all(name).map(str::to_string).collect();
        for v in raw.iter().flat_map(|v| v.split(',')).map(str::trim).filter(|v| !v.is_empty()) {
            match v.parse::<T>() {
                Ok(id) => out.push(id),
                Err(_) => self.fail("uuid_parsing", name, "Input should be a valid UUID"),
            }
        }
        out
    }

    /// An RFC 3339 date-time (or a date); empty is absent.
    pub fn datetime(&mut self, name: &str) -> Option<crate::clock::Timestamp> {
        let v = self.params.get(name)?.trim().to_string();
        if v.is_empty() {
            return None;
        }
        let t = crate::clock::parse_datetime(&v);
        if t.is_none() {
            self.fail("datetime_parsing", name, "Input should be a valid datetime");
        }
        t
    }

    pub fn uuid<T: std::str::FromStr>(&mut self, name: &str) -> Option<T> {
        let v = self.params.get(name)?.trim().to_string();
        let t = T::from_str(&v).ok();
        if t.is_none() {
            self.fail("uuid_parsing", name, "Input should be a valid UUID");
        }
        t
    }

    /// A number or a numeric string: `20`, `20.00`, or the JSON-style `"20.00"`.
    pub fn decimal(&mut self, name: &str) -> Option<rust_decimal::Decimal> {
        let v = self.params.get(name)?.trim().trim_matches('"').to_string();
        let d = crate::money::parse_decimal(&serde_json::Value::String(v));
        if d.is_none() {
            self.fail("decimal_parsing", name, "Input should be a valid decimal");
        }
        d
    }

    pub fn finish(self) -> Result<(), Error> {
        self.problems.into_result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum S {
        A,
        B,
    }
    fn ps(s: &str) -> Option<S> {
        match s {
            "a" => Some(S::A),
            "b" => Some(S::B),
            _ => None,
        }
    }

    #[test]
    fn defaults_and_cap() {
        let p = QueryParams::parse("limit=500&sort_field=b&sort_direction=ASC&search_term=%20x%2By+z");
        let mut q = Query::new(&p);
        let l = q.list(S::A, ps, "'a', 'b'");
        assert!(q.finish().is_ok());
        assert_eq!((l.page, l.limit, l.sort, l.direction), (1, 100, S::B, Direction::Asc));
        assert_eq!(l.search.as_deref(), Some("x+y z"));
    }

    #[test]
    fn bad_values_are_422_with_loc() {
        let p = QueryParams::parse("page=0&limit=x&sort_field=zzz&sort_direction=up");
        let mut q = Query::new(&p);
        q.list(S::A, ps, "'a', 'b'");
        let Err(Error::Validation(d)) = q.finish() else { panic!() };
        let locs: Vec<String> = d.iter().map(|e| serde_json::to_string(&e.loc).unwrap()).collect();
        assert_eq!(
            locs,
            vec![
                r#"["query","page"]"#,
                r#"["query","limit"]"#,
                r#"["query","sort_field"]"#,
                r#"["query","sort_direction"]"#
            ]
        );
    }

    #[test]
    fn numbers_say_what_is_wrong_with_them() {
        let msg = |query: &str| {
            let p = QueryParams::parse(query);
            let mut q = Query::new(&p);
            let l = q.list(S::A, ps, "'a', 'b'");
            match q.finish() {
                Ok(()) => format!("ok {} {}", l.page, l.limit),
                Err(Error::Validation(d)) => d.iter().map(|e| format!("{} {}", e.kind, e.msg)).collect::<Vec<_>>().join("; "),
                Err(e) => panic!("{e:?}"),
            }
        };
        assert_eq!(msg("page=4294967296"), "less_than_equal Input should be less than or equal to 4294967295");
        assert_eq!(msg("page=0"), "greater_than Input should be greater than 0");
        assert_eq!(msg("page=-3"), "greater_than Input should be greater than 0");
        assert_eq!(msg("page=abc"), "int_parsing Input should be a valid integer");
        assert_eq!(msg("page=4294967295&limit=99999999999999999999"), "ok 4294967295 100");
        assert_eq!(msg("limit=0"), "greater_than Input should be greater than 0");
    }

    #[test]
    fn control_characters_are_refused_in_any_parameter() {
        for query in ["search_term=a%00b", "external_metadata.k%00=v", "external_metadata.k=v%0A", "anything=%7F"] {
            let p = QueryParams::parse(query);
            let Err(Error::Validation(d)) = Query::new(&p).finish() else {
                panic!("{query} accepted")
            };
            assert_eq!(d[0].kind, "string_pattern_mismatch", "{query}");
            assert_eq!(d[0].loc[0], crate::error::LocPart::Key("query".into()));
        }
        assert!(Query::new(&QueryParams::parse("search_term=caf%C3%A9%20au%20lait")).finish().is_ok());
    }

    #[test]
    fn pagination_counts_the_page() {
        let page = Page {
            items: vec![1, 2, 3],
            total: 23,
            page: 2,
            limit: 10,
        };
        let p = page.pagination();
        assert_eq!((p.total_count, p.max_page, p.has_next_page, p.has_previous_page), (3, 3, true, true));
        let empty: Page<u8> = Page {
            items: vec![],
            total: 0,
            page: 1,
            limit: 10,
        };
        assert_eq!(empty.pagination().max_page, 1);
        assert!(!empty.pagination().has_next_page);
    }

    #[test]
    fn repeated_keys_and_prefix() {
        let p = QueryParams::parse("statuses=A&statuses=B&external_metadata.plan=gold&x=%zz");
        assert_eq!(p.all("statuses").collect::<Vec<_>>(), vec!["A", "B"]);
        assert_eq!(p.with_prefix("external_metadata.").collect::<Vec<_>>(), vec![("plan", "gold")]);
        assert_eq!(p.get("x"), Some("%zz"));
    }
}
