//! Turning a JSON request into typed values. [`Body`] reads fields one by one, records every
//! problem as a spec `detail` entry (`missing`, `string_type`, `value_error`, …) with its `loc`,
//! treats an explicit `null` as "not given", and ignores fields it is not asked for.

use crate::error::{Error, FieldError, LocPart, Problems};
use crate::money::{parse_decimal, Currency, Money};
use rust_decimal::Decimal;
use serde_json::{Map, Value};
use std::str::FromStr;

/// The longest description (of a product, an invoice, a payment link, …), in characters.
pub const MAX_DESCRIPTION: usize = 2000;
/// The longest note or comment (a consumer's comment, a payment's note or refund note).
pub const MAX_NOTE: usize = 1000;
/// The largest free-form object (`external_metadata`, `custom_metadata`), as compact JSON.
pub const MAX_OBJECT_BYTES: usize = 16 * 1024;

pub struct Body<'a> {
    obj: Option<&'a Map<String, Value>>,
    prefix: Vec<LocPart>,
    pub problems: Problems,
}

impl<'a> Body<'a> {
    /// Reads the top-level request body; anything but an object is a 422 at `["body"]`.
    pub fn new(v: &'a Value) -> Self {
        Self::at(v, vec!["body".into()])
    }

    /// Reads a nested object whose location is `prefix`.
    pub fn at(v: &'a Value, prefix: Vec<LocPart>) -> Self {
        let mut problems = Problems::default();
        let obj = match v {
            Value::Object(m) => Some(m),
            Value::Null => {
                problems.push(FieldError::new("missing", prefix.clone(), "Field required"));
                None
            }
            _ => {
                problems.push(FieldError::new(
                    "model_attributes_type",
                    prefix.clone(),
                    "Input should be a valid dictionary or object",
                ));
                None
            }
        };
        Body { obj, prefix, problems }
    }

    pub fn loc(&self, field: &str) -> Vec<LocPart> {
        let mut l = self.prefix.clone();
        l.push(field.into());
        l
    }

    fn err(&mut self, kind: &str, field: &str, msg: impl Into<String>) {
        let loc = self.loc(field);
        self.problems.push(FieldError::new(kind, loc, msg));
    }

    /// The raw value of a field; `None` when absent or `null`.
    pub fn raw(&self, field: &str) -> Option<&'a Value> {
        reads::note(|| reads::body_path(&self.prefix, field));
        self.obj?.get(field).filter(|v| !v.is_null())
    }

    /// Whether the field was sent at all (even as `null`).
    pub fn present(&self, field: &str) -> bool {
        reads::note(|| reads::body_path(&self.prefix, field));
        self.obj.is_some_and(|o| o.contains_key(field))
    }

    /// Records `field` as missing (`missing`, "Field required") — unless the body is not an
    /// object at all, which is one error already.
    pub fn missing(&mut self, field: &str) {
        if self.obj.is_some() {
            self.err("missing", field, "Field required");
        }
    }

    pub fn opt_str(&mut self, field: &str) -> Option<String> {
        match self.raw(field)? {
            Value::String(s) if s.contains('\0') => {
                self.err("string_pattern_mismatch", field, "String should not contain NUL characters");
                None
            }
            Value::String(s) => Some(s.clone()),
            _ => {
                self.err("string_type", field, "Input should be a valid string");
                None
            }
        }
    }

    pub fn req_str(&mut self, field: &str) -> Option<String> {
        let v = self.opt_str(field);
        if v.is_none() && self.raw(field).is_none() {
            self.missing(field);
        }
        v
    }

    /// A required string that must not be blank (names).
    pub fn req_text(&mut self, field: &str, max: usize) -> Option<String> {
        let s = self.req_str(field)?;
        self.check_text(field, s, max)
    }

    pub fn opt_text(&mut self, field: &str, max: usize) -> Option<String> {
        let s = self.opt_str(field)?;
        self.check_text(field, s, max)
    }

    fn check_text(&mut self, field: &str, s: String, max: usize) -> Option<String> {
        let t = s.trim().to_string();
        if t.is_empty() {
            self.err("string_too_short", field, "String should have at least 1 character");
            return None;
        }
        if t.chars().count() > max {
            self.err("string_too_long", field, format!("String should have at most {max} characters"));
            return None;
        }
        Some(t)
    }

    /// Free text kept as given (spaces and an empty string too), at most `max` characters.
    pub fn opt_free_text(&mut self, field: &str, max: usize) -> Option<String> {
        let s = self.opt_str(field)?;
        if s.chars().count() > max {
            self.err("string_too_long", field, format!("String should have at most {max} characters"));
            return None;
        }
        Some(s)
    }

    /// A string turned into a typed value by `parse`; a parse failure is a `value_error`.
    pub fn opt_parsed<T>(&mut self, field: &str, parse: impl FnOnce(&str) -> Result<T, &'static str>) -> Option<T> {
        let s = self.opt_str(field)?;
        match parse(&s) {
            Ok(v) => Some(v),
            Err(msg) => {
                self.err("value_error", field, format!("Value error, {msg}"));
                None
            }
        }
    }

    pub fn opt_bool(&mut self, field: &str) -> Option<bool> {
        match self.raw(field)? {
            Value::Bool(b) => Some(*b),
            Value::String(s) if s == "true" || s == "false" => Some(s == "true"),
            _ => {
                self.err("bool_type", field, "Input should be a valid boolean");
                None
            }
        }
    }

    pub fn opt_int(&mut self, field: &str) -> Option<i64> {
        let v = self.raw(field)?;
        let parsed = match v {
            Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        if parsed.is_none() {
            self.err("int_type", field, "Input should be a valid integer");
        }
        parsed
    }

    pub fn req_int(&mut self, field: &str) -> Option<i64> {
        if self.raw(field).is_none() {
            self.missing(field);
            return None;
        }
        self.opt_int(field)
    }

    pub fn opt_decimal(&mut self, field: &str) -> Option<Decimal> {
        let v = self.raw(field)?;
        let d = parse_decimal(v);
        if d.is_none() {
            self.err("decimal_parsing", field, "Input should be a valid decimal");
        }
        d
    }

    pub fn req_decimal(&mut self, field: &str) -> Option<Decimal> {
        if self.raw(field).is_none() {
            self.missing(field);
            return None;
        }
        self.opt_decimal(field)
    }

    /// An amount in `currency`: more decimals than the currency has is a 422.
    pub fn money_in(&mut self, field: &str, amount: Decimal, currency: Currency) -> Option<Money> {
        match Money::checked(amount, currency) {
            Ok(m) => Some(m),
            Err(e) => {
                let (kind, msg) = amount_problem(e, currency);
                self.err(kind, field, msg);
                None
            }
        }
    }

    pub fn opt_currency(&mut self, field: &str) -> Option<Currency> {
        let s = self.opt_str(field)?;
        match Currency::from_str(&s) {
            Ok(c) => Some(c),
            Err(()) => {
                let all: Vec<String> = Currency::ALL.iter().map(|c| format!("'{c}'")).collect();
                self.err("enum", field, format!("Input should be {}", all.join(", ")));
                None
            }
        }
    }

    /// A string from a closed set, parsed by `parse` (usually a `wire_enum!`'s).
    pub fn opt_enum<T>(&mut self, field: &str, parse: impl Fn(&str) -> Option<T>, expected: &str) -> Option<T> {
        let s = self.opt_str(field)?;
        let v = parse(&s);
        if v.is_none() {
            self.err("enum", field, format!("Input should be {expected}"));
        }
        v
    }

    pub fn req_enum<T>(&mut self, field: &str, parse: impl Fn(&str) -> Option<T>, expected: &str) -> Option<T> {
        if self.raw(field).is_none() {
            self.missing(field);
            return None;
        }
        self.opt_enum(field, parse, expected)
    }

    pub fn opt_uuid<T: FromStr>(&mut self, field: &str) -> Option<T> {
        let s = self.opt_str(field)?;
        let v = T::from_str(s.trim()).ok();
        if v.is_none() {
            self.err("uuid_parsing", field, "Input should be a valid UUID");
        }
        v
    }

    pub fn req_uuid<T: FromStr>(&mut self, field: &str) -> Option<T> {
        if self.raw(field).is_none() {
            self.missing(field);
            return None;
        }
        self.opt_uuid(field)
    }

    /// An array whose elements are read by `each` (given the element and its `loc`).
    pub fn opt_list<T>(&mut self, field: &str, mut each: impl FnMut(&'a Value, Vec<LocPart>, &mut Problems) -> Option<T>) -> Option<Vec<T>> {
        let v = self.raw(field)?;
        let Value::Array(items) = v else {
            self.err("list_type", field, "Input should be a valid list");
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let mut loc = self.loc(field);
            loc.push(i.into());
            match each(item, loc, &mut self.problems) {
                Some(x) => out.push(x),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    pub fn req_list<T>(&mut self, field: &str, each: impl FnMut(&'a Value, Vec<LocPart>, &mut Problems) -> Option<T>) -> Option<Vec<T>> {
        if self.raw(field).is_none() {
            self.missing(field);
            return None;
        }
        self.opt_list(field, each)
    }

    /// A free JSON object (metadata).
    pub fn opt_object(&mut self, field: &str) -> Option<Map<String, Value>> {
        match self.raw(field)? {
            Value::Object(m) if contains_nul(&Value::Object(m.clone())) => {
                self.err("string_pattern_mismatch", field, "Keys and strings should not contain NUL characters");
                None
            }
            Value::Object(m) if Value::Object(m.clone()).to_string().len() > MAX_OBJECT_BYTES => {
                self.err("too_long", field, format!("The object should take at most {MAX_OBJECT_BYTES} bytes as JSON"));
                None
            }
            Value::Object(m) => Some(m.clone()),
            _ => {
                self.err("dict_type", field, "Input should be a valid dictionary");
                None
            }
        }
    }

    /// Records a rule failure on a field that the reader cannot express by itself.
    pub fn fail(&mut self, kind: &str, field: &str, msg: impl Into<String>) {
        self.err(kind, field, msg);
    }

    /// Ends reading: `Err` with every problem found, if any.
    pub fn finish(self) -> Result<(), Error> {
        self.problems.into_result()
    }
}

/// Which fields a reader looks at: every read of a body field ([`Body`]) or a query parameter
/// ([`crate::list::QueryParams`]) is noted while [`reads::watch`] runs, so that the API
/// description can be checked against what the readers really read (billing-server's OpenAPI
/// tests). Off, a read costs one thread-local flag test.
pub mod reads {
    use crate::error::LocPart;
    use std::cell::{Cell, RefCell};

    thread_local! {
        static ON: Cell<bool> = const { Cell::new(false) };
        static SEEN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    /// Runs `f` and returns what it returned and the fields it read, in order (repeats kept once).
    pub fn watch<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
        ON.with(|on| on.set(true));
        SEEN.with(|s| s.borrow_mut().clear());
        let r = f();
        ON.with(|on| on.set(false));
        (r, SEEN.with(|s| std::mem::take(&mut *s.borrow_mut())))
    }

    /// Notes the field that `path` names, if watching.
    pub fn note(path: impl FnOnce() -> String) {
        if ON.with(Cell::get) {
            let p = path();
            SEEN.with(|s| {
                let mut s = s.borrow_mut();
                if !s.contains(&p) {
                    s.push(p);
                }
            });
        }
    }

    /// A body field's path without the leading `body` and with indices as `[]`:
    /// `items[].product_id`.
    pub fn body_path(prefix: &[LocPart], field: &str) -> String {
        let mut out = String::new();
        for part in prefix.iter().skip(1) {
            match part {
                LocPart::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                LocPart::Index(_) => out.push_str("[]"),
            }
        }
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(field);
        out
    }
}

/// The `detail` type and message of a refused amount.
pub fn amount_problem(e: crate::money::AmountError, currency: Currency) -> (&'static str, String) {
    match e {
        crate::money::AmountError::TooPrecise => (
            "decimal_max_places",
            format!(
                "Decimal input should have no more than {} decimal places for {}",
                currency.minor_digits(),
                currency
            ),
        ),
        crate::money::AmountError::TooLarge => ("less_than_equal", format!("Input should be less than or equal to {}", crate::money::MAX_AMOUNT)),
    }
}

/// Whether any key or string inside `v` holds a NUL character (text that databases refuse).
fn contains_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(a) => a.iter().any(contains_nul),
        Value::Object(m) => m.iter().any(|(k, v)| k.contains('\0') || contains_nul(v)),
        _ => false,
    }
}

/// Reads a list element that must be a string from a closed set.
pub fn enum_item<T>(v: &Value, loc: Vec<LocPart>, problems: &mut Problems, parse: impl Fn(&str) -> Option<T>, expected: &str) -> Option<T> {
    match v.as_str().and_then(parse) {
        Some(x) => Some(x),
        None => {
            problems.push(FieldError::new("enum", loc, format!("Input should be {expected}")));
            None
        }
    }
}

/// Reads a list element that must be a UUID.
pub fn uuid_item<T: FromStr>(v: &Value, loc: Vec<LocPart>, problems: &mut Problems) -> Option<T> {
    match v.as_str().and_then(|s| T::from_str(s.trim()).ok()) {
        Some(x) => Some(x),
        None => {
            problems.push(FieldError::new("uuid_parsing", loc, "Input should be a valid UUID"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_and_objects_have_limits() {
        let long = "x".repeat(MAX_DESCRIPTION + 1);
        let v = serde_json::json!({"d": long, "e": "", "m": {"k": "y".repeat(MAX_OBJECT_BYTES)}, "ok": {"k": "v"}});
        let mut b = Body::new(&v);
        assert_eq!(b.opt_free_text("d", MAX_DESCRIPTION), None);
        assert_eq!(b.opt_free_text("e", MAX_DESCRIPTION).as_deref(), Some(""), "empty text is kept");
        assert!(b.opt_object("m").is_none());
        assert!(b.opt_object("ok").is_some());
        let Err(Error::Validation(d)) = b.finish() else {
            panic!("limits not enforced")
        };
        let kinds: Vec<(&str, &LocPart)> = d.iter().map(|e| (e.kind.as_str(), &e.loc[1])).collect();
        assert_eq!(
            kinds,
            vec![("string_too_long", &LocPart::Key("d".into())), ("too_long", &LocPart::Key("m".into()))]
        );
    }
    use serde_json::json;

    #[test]
    fn reports_every_problem_with_its_location() {
        let v = json!({"name": 5, "email": null, "extra": true, "items": [1, "x"]});
        let mut b = Body::new(&v);
        assert!(b.req_str("name").is_none());
        assert!(b.req_str("email").is_none());
        assert!(b.opt_str("unknown").is_none());
        let items: Option<Vec<String>> = b.opt_list("items", |v, loc, p| {
            v.as_str().map(str::to_string).or_else(|| {
                p.push(FieldError::new("string_type", loc, "Input should be a valid string"));
                None
            })
        });
        assert!(items.is_none());
        let Err(Error::Validation(d)) = b.finish() else { panic!() };
        let got: Vec<(String, serde_json::Value)> = d.iter().map(|e| (e.kind.clone(), serde_json::to_value(&e.loc).unwrap())).collect();
        assert_eq!(
            got,
            vec![
                ("string_type".into(), json!(["body", "name"])),
                ("missing".into(), json!(["body", "email"])),
                ("string_type".into(), json!(["body", "items", 0])),
            ]
        );
    }

    #[test]
    fn non_object_body_is_refused_at_body() {
        let v = json!([1]);
        let b = Body::new(&v);
        let Err(Error::Validation(d)) = b.finish() else { panic!() };
        assert_eq!(serde_json::to_value(&d[0].loc).unwrap(), json!(["body"]));
    }

    #[test]
    fn nul_characters_are_refused() {
        let v = json!({"name": "a\u{0}b", "meta": {"k": ["x\u{0}"]}});
        let mut b = Body::new(&v);
        assert!(b.opt_str("name").is_none());
        assert!(b.opt_object("meta").is_none());
        let Err(Error::Validation(d)) = b.finish() else { panic!() };
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn money_too_large() {
        let v = json!({"amount": "1000000000000.01"});
        let mut b = Body::new(&v);
        let d = b.req_decimal("amount").unwrap();
        assert!(b.money_in("amount", d, Currency::SAR).is_none());
        let Err(Error::Validation(d)) = b.finish() else { panic!() };
        assert_eq!(d[0].kind, "less_than_equal");
    }

    #[test]
    fn money_too_many_decimals() {
        let v = json!({"amount": "1.001"});
        let mut b = Body::new(&v);
        let d = b.req_decimal("amount").unwrap();
        assert!(b.money_in("amount", d, Currency::SAR).is_none());
        assert!(b.finish().is_err());
    }
}
