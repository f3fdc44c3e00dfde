//! Conversions between SQLite values and domain values: rows in, parameters out.

use billing_core::clock::{from_micros, to_micros, Timestamp};
use rusqlite::types::Value as SqlValue;
use rusqlite::Row;
use uuid::Uuid;

pub fn id<T: From<Uuid>>(r: &Row, i: usize) -> rusqlite::Result<T> {
    Ok(T::from(r.get::<_, Uuid>(i)?))
}

pub fn id_opt<T: From<Uuid>>(r: &Row, i: usize) -> rusqlite::Result<Option<T>> {
    Ok(r.get::<_, Option<Uuid>>(i)?.map(T::from))
}

pub fn ts(r: &Row, i: usize) -> rusqlite::Result<Timestamp> {
    Ok(from_micros(r.get(i)?))
}

pub fn ts_opt(r: &Row, i: usize) -> rusqlite::Result<Option<Timestamp>> {
    Ok(r.get::<_, Option<i64>>(i)?.map(from_micros))
}

pub fn json<T: serde::de::DeserializeOwned>(r: &Row, i: usize) -> rusqlite::Result<T> {
    let s: String = r.get(i)?;
    serde_json::from_str(&s).map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
}

pub fn json_opt<T: serde::de::DeserializeOwned>(r: &Row, i: usize) -> rusqlite::Result<Option<T>> {
    match r.get::<_, Option<String>>(i)? {
        None => Ok(None),
        Some(s) => serde_json::from_str(&s)
            .map(Some)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))),
    }
}

/// Parses a stored enum name with the domain's parser.
pub fn parsed<T>(r: &Row, i: usize, parse: impl Fn(&str) -> Option<T>) -> rusqlite::Result<T> {
    let s: String = r.get(i)?;
    parse(&s).ok_or_else(|| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, format!("unknown value '{s}'").into()))
}

pub fn bad(i: usize, msg: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, msg.into())
}

/// Parameter builders.
pub fn u(id: impl Into<Uuid>) -> SqlValue {
    SqlValue::Blob(id.into().as_bytes().to_vec())
}

pub fn t(ts: &Timestamp) -> SqlValue {
    SqlValue::Integer(to_micros(*ts))
}

pub fn t_opt(ts: &Option<Timestamp>) -> SqlValue {
    ts.as_ref().map(t).unwrap_or(SqlValue::Null)
}

pub fn s(v: impl Into<String>) -> SqlValue {
    SqlValue::Text(v.into())
}

pub fn s_opt<S: AsRef<str>>(v: Option<S>) -> SqlValue {
    v.map(|x| SqlValue::Text(x.as_ref().to_string())).unwrap_or(SqlValue::Null)
}

pub fn b(v: bool) -> SqlValue {
    SqlValue::Integer(v as i64)
}

pub fn i(v: i64) -> SqlValue {
    SqlValue::Integer(v)
}

pub fn j<T: serde::Serialize>(v: &T) -> SqlValue {
    SqlValue::Text(serde_json::to_string(v).expect("serializable"))
}
