//! What every table file shares: [`SqliteTx`] (statements through the connection's cache, or
//! the batch's ([`crate::statements`]),
//! errors mapped to the core's), list paging and filters, conversions between SQLite values and
//! domain values, and the two macros that keep SQL in one place: [`table!`] declares each
//! column of a table once, and [`sql!`] builds a statement once per process.

use billing_model::clock::{from_micros, to_micros, Timestamp};
use billing_model::error::StoreError;
use billing_model::list::{Direction, Page};
use billing_model::money::{Currency, Money};
use billing_model::store::StoreResult;
use rusqlite::types::Value as SqlValue;
use rusqlite::{params_from_iter, Connection, OptionalExtension, Row};
use std::str::FromStr;
use uuid::Uuid;

/// Declares how a table's rows map to a domain type, each column once: its name, how it is
/// written from the value (`|v|`), and how it is read back from the row (`|r, at|`: `at` is the
/// column's position). From that one list come the SELECT list, the INSERT and UPDATE
/// statements ([`TableSql`]), the parameters and the row reader, always in the same order.
///
/// `writes` lists columns that are written but never read back (derived keys such as
/// `email_lower`); `selects` lists expressions read after the columns but never written (`{t}`
/// stands for the table or its alias). The final expression builds the value from the locals
/// that each column's reading produced.
macro_rules! table {
    // The common form: rows written from and read into one type.
    (
        $(#[$meta:meta])*
        $vis:vis $name:ident in $table:literal for $ty:ty |$v:ident, $r:ident, $at:ident| $($rest:tt)*
    ) => {
        $crate::sql::table! { $(#[$meta])* $vis $name in $table |$v: &$ty, $r, $at| -> $ty $($rest)* }
    };
    // Written from `$wty` (a value with its context, such as an item and its invoice), read
    // into `$rty`.
    (
        $(#[$meta:meta])*
        $vis:vis $name:ident in $table:literal |$v:ident : $wty:ty, $r:ident, $at:ident| -> $rty:ty {
            $( $col:ident : $write:expr => $read:expr ),+ $(,)?
        }
        $( writes { $( $wcol:ident : $wexpr:expr ),* $(,)? } )?
        $( selects { $( $sel:literal as $scol:ident => $sread:expr ),* $(,)? } )?
        => $build:expr
    ) => {
        $(#[$meta])*
        $vis struct $name;

        impl $name {
            /// The columns written, in parameter order (the key first).
            pub const WRITTEN: &'static [&'static str] = &[$(stringify!($col),)+ $($(stringify!($wcol),)*)?];
            /// What a SELECT reads, in reading order.
            pub const READ: &'static [&'static str] = &[$(stringify!($col),)+ $($($sel,)*)?];

            pub fn sql() -> &'static $crate::sql::TableSql {
                static SQL: std::sync::LazyLock<$crate::sql::TableSql> =
                    std::sync::LazyLock::new(|| $crate::sql::TableSql::new($table, $name::WRITTEN, $name::READ));
                &SQL
            }

            /// The parameters of INSERT and UPDATE, in [`Self::WRITTEN`] order.
            #[allow(unused_variables)]
            pub fn params($v: $wty) -> billing_model::store::StoreResult<Vec<rusqlite::types::Value>> {
                Ok(vec![$($write,)+ $($($wexpr,)*)?])
            }

            /// Reads a value whose columns start at `start` (in [`Self::READ`] order).
            #[allow(dead_code, unused_variables, unused_assignments, clippy::redundant_locals)]
            pub fn read($r: &rusqlite::Row, start: usize) -> rusqlite::Result<$rty> {
                let mut $at = start;
                $( let $col = { let x = $read; $at += 1; x }; )+
                $($( let $scol = { let x = $sread; $at += 1; x }; )*)?
                Ok($build)
            }

            /// Reads a value from the start of the row.
            #[allow(dead_code)]
            pub fn row(r: &rusqlite::Row) -> rusqlite::Result<$rty> {
                Self::read(r, 0)
            }
        }
    };
}

/// A statement built once per process from `format!` arguments (column lists from
/// [`TableSql`]): `sql!("SELECT {} FROM consumers WHERE id = ?1", Consumers::sql().select)`.
macro_rules! sql {
    ($($fmt:tt)*) => {{
        static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| format!($($fmt)*));
        SQL.as_str()
    }};
}

#[allow(unused_imports)]
pub(crate) use sql;
pub(crate) use table;

/// The columns of `table` that no update changes (the row's place and creation: organization,
/// branch, the invoice a payment belongs to, an invoice's consumer and number), left out of
/// its UPDATE. SQLite picks the indexes an UPDATE rewrites and the foreign keys it checks by
/// the columns named in SET, not by whether their values change: on the rows every payment and
/// renewal updates (payments, invoices, subscriptions), naming these made each update rewrite
/// every index entry of the row and look up its organization, invoice or consumer.
fn fixed_at_creation(table: &str) -> &'static [&'static str] {
    match table {
        "payments" => &["org_id", "branch_id", "invoice_id", "number", "created_at"],
        "invoices" => &["org_id", "branch_id", "user_id", "consumer_id", "org_invoice_number", "created_at"],
        "subscriptions" => &["org_id", "branch_id", "user_id", "consumer_id", "created_at"],
        _ => &[],
    }
}

/// The statements of a table declared with [`table!`].
pub struct TableSql {
    read: &'static [&'static str],
    /// The SELECT list (`id, org_id, …`), unqualified.
    pub select: String,
    /// `INSERT INTO t (every written column) VALUES (?1, …)`.
    pub insert: String,
    /// `UPDATE t SET every written column but the key WHERE key = ?1`.
    pub update: String,
}

impl TableSql {
    pub fn new(table: &'static str, written: &[&str], read: &'static [&'static str]) -> Self {
        let marks: Vec<String> = (1..=written.len()).map(|k| format!("?{k}")).collect();
        let fixed = fixed_at_creation(table);
        let sets: Vec<String> = written
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, c)| !fixed.contains(c))
            .map(|(k, c)| format!("{c} = ?{}", k + 1))
            .collect();
        TableSql {
            read,
            select: Self::list(table, read, None),
            insert: format!("INSERT INTO {table} ({}) VALUES ({})", written.join(", "), marks.join(", ")),
            update: format!("UPDATE {table} SET {} WHERE {} = ?1", sets.join(", "), written[0]),
        }
    }

    /// `INSERT … ON CONFLICT (key) DO UPDATE SET` every other written column.
    pub fn upsert(&self, written: &[&str]) -> String {
        let sets: Vec<String> = written.iter().skip(1).map(|c| format!("{c} = excluded.{c}")).collect();
        format!("{} ON CONFLICT({}) DO UPDATE SET {}", self.insert, written[0], sets.join(", "))
    }

    /// The SELECT list with every column qualified by `alias` (`k.id, k.org_id, …`).
    pub fn select_as(&self, alias: &str) -> String {
        Self::list(alias, self.read, Some(alias))
    }

    fn list(table: &str, read: &[&str], alias: Option<&str>) -> String {
        read.iter()
            .map(|c| {
                if c.contains("{t}") {
                    c.replace("{t}", table)
                } else {
                    match alias {
                        Some(a) => format!("{a}.{c}"),
                        None => c.to_string(),
                    }
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How many columns a SELECT of this table reads (where the next table's start in a join).
    pub fn width(&self) -> usize {
        self.read.len()
    }
}

/// Maps SQLite's "UNIQUE constraint failed: t.a, t.b" column lists to index names, so that the
/// core sees the same constraint names on every backend (see `migrate::unique_constraint_names`).
pub(crate) type ConstraintNames = std::sync::Arc<std::collections::HashMap<String, String>>;

/// Sort column, direction and page of a list query.
pub struct Paging<'a> {
    pub order: &'a str,
    pub dir: Direction,
    pub page: u32,
    pub limit: u32,
}

pub struct SqliteTx<'c> {
    conn: &'c Connection,
    names: &'c ConstraintNames,
}

impl<'c> SqliteTx<'c> {
    pub fn new(conn: &'c Connection, names: &'c ConstraintNames) -> Self {
        SqliteTx { conn, names }
    }

    /// The connection this transaction runs on.
    pub fn conn(&self) -> &'c Connection {
        self.conn
    }

    /// The core's error for a SQLite error: a unique violation names its index (the same
    /// names PostgreSQL reports), anything else keeps SQLite's error as its source.
    pub fn err(&self, e: rusqlite::Error) -> StoreError {
        if let rusqlite::Error::SqliteFailure(f, Some(msg)) = &e {
            if f.code == rusqlite::ErrorCode::ConstraintViolation {
                if let Some(cols) = msg.strip_prefix("UNIQUE constraint failed: ") {
                    let name = cols
                        .strip_prefix("index '")
                        .and_then(|n| n.strip_suffix('\''))
                        .map(str::to_string)
                        .or_else(|| self.names.get(cols).cloned())
                        .unwrap_or_else(|| cols.to_string());
                    return StoreError::UniqueViolation(name);
                }
            }
        }
        StoreError::backend_from(e)
    }

    pub fn exec(&self, sql: &str, params: Vec<SqlValue>) -> StoreResult<usize> {
        let mut st = crate::statements::prepare(self.conn, sql).map_err(|e| self.err(e))?;
        st.execute(params_from_iter(params)).map_err(|e| self.err(e))
    }

    /// Runs an UPDATE of one row by key; no row is `StoreError::NotFound(what)`.
    pub fn update_one(&self, sql: &str, params: Vec<SqlValue>, what: &str) -> StoreResult<()> {
        match self.exec(sql, params)? {
            0 => Err(StoreError::NotFound(what.to_string())),
            _ => Ok(()),
        }
    }

    pub fn one<T>(&self, sql: &str, params: Vec<SqlValue>, map: impl FnOnce(&Row) -> rusqlite::Result<T>) -> StoreResult<Option<T>> {
        let mut st = crate::statements::prepare(self.conn, sql).map_err(|e| self.err(e))?;
        st.query_row(params_from_iter(params), map).optional().map_err(|e| self.err(e))
    }

    pub fn all<T>(&self, sql: &str, params: Vec<SqlValue>, map: impl FnMut(&Row) -> rusqlite::Result<T>) -> StoreResult<Vec<T>> {
        let mut st = crate::statements::prepare(self.conn, sql).map_err(|e| self.err(e))?;
        let rows = st.query_map(params_from_iter(params), map).map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    pub fn count(&self, sql: &str, params: Vec<SqlValue>) -> StoreResult<u64> {
        Ok(self.one(sql, params, |r| r.get::<_, i64>(0))?.unwrap_or(0) as u64)
    }

    /// Runs a list query: `select` and the `filter` (`FROM … WHERE …`) are joined with the
    /// ordering (ties by id in the same direction) and the page; the total counts every page.
    pub fn page<T>(&self, select: &str, filter: &Filter, paging: Paging<'_>, map: impl FnMut(&Row) -> rusqlite::Result<T>) -> StoreResult<Page<T>> {
        let total = self.count(&format!("SELECT COUNT(*) {}", filter.sql), filter.params.clone())?;
        let Paging { order, dir, page, limit } = paging;
        let d = dir.sql();
        let sql = format!(
            "{select} {} ORDER BY {order} {d}, id {d} LIMIT {limit} OFFSET {}",
            filter.sql,
            u64::from(page - 1) * u64::from(limit)
        );
        let items = self.all(&sql, filter.params.clone(), map)?;
        Ok(Page { items, total, page, limit })
    }
}

/// A `FROM … WHERE …` clause and its parameters, built condition by condition.
pub struct Filter {
    pub sql: String,
    pub params: Vec<SqlValue>,
}

impl Filter {
    pub fn new(from_where: &str, params: Vec<SqlValue>) -> Self {
        Filter {
            sql: from_where.to_string(),
            params,
        }
    }

    /// The placeholder the next parameter will have.
    pub fn next(&self) -> usize {
        self.params.len() + 1
    }

    /// ` AND {expr} ?n`.
    pub fn cmp(&mut self, expr: &str, v: SqlValue) {
        self.sql.push_str(&format!(" AND {expr} ?{}", self.next()));
        self.params.push(v);
    }

    /// ` AND {col} IN (?n, …)`.
    pub fn any(&mut self, col: &str, values: Vec<SqlValue>) {
        self.list(col, "IN", values)
    }

    /// ` AND {col} NOT IN (?n, …)`.
    pub fn none(&mut self, col: &str, values: Vec<SqlValue>) {
        self.list(col, "NOT IN", values)
    }

    fn list(&mut self, col: &str, op: &str, values: Vec<SqlValue>) {
        let start = self.next();
        let marks: Vec<String> = (0..values.len()).map(|k| format!("?{}", start + k)).collect();
        self.sql.push_str(&format!(" AND {col} {op} ({})", marks.join(", ")));
        self.params.extend(values);
    }

    /// ` AND (contains_folded(col1, ?n) OR …{extra})`: a Unicode case-insensitive substring
    /// match of `term`.
    pub fn folded(&mut self, columns: &[&str], term: &str, extra: &str) {
        let n = self.next();
        let ors: Vec<String> = columns.iter().map(|c| format!("contains_folded({c}, ?{n})")).collect();
        self.sql.push_str(&format!(" AND ({}{extra})", ors.join(" OR ")));
        self.params.push(s(term.to_lowercase()));
    }

    /// `external_metadata.<key> = <value>` conditions: an exact match on the JSON value's text.
    pub fn metadata(&mut self, filters: &[(String, String)]) {
        for (k, v) in filters {
            // The key as a JSON path: quoted, with `"` and `\` escaped, so no key can break out.
            let path = format!("$.\"{}\"", k.replace('\\', "\\\\").replace('"', "\\\""));
            // Compare with the value's JSON text, as PostgreSQL's `->>` does: json_extract alone
            // would turn `true` into 1.
            let (p, val) = (self.next(), self.next() + 1);
            self.sql.push_str(&format!(
                " AND (CASE json_type(external_metadata, ?{p}) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN NULL \
                 ELSE CAST(json_extract(external_metadata, ?{p}) AS TEXT) END) = ?{val}"
            ));
            self.params.push(s(path));
            self.params.push(s(v.as_str()));
        }
    }
}

// --- values in -------------------------------------------------------------------------------

pub fn get_id<T: From<Uuid>>(r: &Row, i: usize) -> rusqlite::Result<T> {
    Ok(T::from(r.get::<_, Uuid>(i)?))
}

pub fn get_id_opt<T: From<Uuid>>(r: &Row, i: usize) -> rusqlite::Result<Option<T>> {
    Ok(r.get::<_, Option<Uuid>>(i)?.map(T::from))
}

pub fn get_ts(r: &Row, i: usize) -> rusqlite::Result<Timestamp> {
    Ok(from_micros(r.get(i)?))
}

pub fn get_ts_opt(r: &Row, i: usize) -> rusqlite::Result<Option<Timestamp>> {
    Ok(r.get::<_, Option<i64>>(i)?.map(from_micros))
}

pub fn get_json<T: serde::de::DeserializeOwned>(r: &Row, i: usize) -> rusqlite::Result<T> {
    let s: String = r.get(i)?;
    serde_json::from_str(&s).map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e)))
}

pub fn get_json_opt<T: serde::de::DeserializeOwned>(r: &Row, i: usize) -> rusqlite::Result<Option<T>> {
    match r.get::<_, Option<String>>(i)? {
        None => Ok(None),
        Some(s) => serde_json::from_str(&s)
            .map(Some)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))),
    }
}

/// Parses a stored name with the domain's parser.
pub fn get_parsed<T>(r: &Row, i: usize, parse: impl Fn(&str) -> Option<T>) -> rusqlite::Result<T> {
    let s: String = r.get(i)?;
    parse(&s).ok_or_else(|| bad(i, format!("unknown value '{s}'")))
}

/// Parses an optional stored name with the domain's parser.
pub fn get_parsed_opt<T>(r: &Row, i: usize, parse: impl Fn(&str) -> Option<T>) -> rusqlite::Result<Option<T>> {
    r.get::<_, Option<String>>(i)?
        .map(|s| parse(&s).ok_or_else(|| bad(i, format!("unknown value '{s}'"))))
        .transpose()
}

pub fn get_currency(r: &Row, i: usize) -> rusqlite::Result<Currency> {
    get_parsed(r, i, |s| Currency::from_str(s).ok())
}

pub fn get_count(r: &Row, i: usize) -> rusqlite::Result<u32> {
    u32::try_from(r.get::<_, i64>(i)?).map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Integer, Box::new(e)))
}

pub fn bad(i: usize, msg: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, msg.into())
}

// --- values out ------------------------------------------------------------------------------

pub fn u(id: impl Into<Uuid>) -> SqlValue {
    SqlValue::Blob(id.into().as_bytes().to_vec())
}

pub fn u_opt(id: Option<impl Into<Uuid>>) -> SqlValue {
    id.map(u).unwrap_or(SqlValue::Null)
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

/// An amount in stored thousandths ([`billing_model::money::stored`]): refused, not
/// truncated, when it cannot be kept exactly.
pub fn m(v: &Money) -> StoreResult<SqlValue> {
    Ok(SqlValue::Integer(v.to_stored()?))
}
