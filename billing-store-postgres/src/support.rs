//! What every resource file shares: [`PgTx`] (a transaction's statements, with the failure
//! bookkeeping that decides retries), conversions of stored values, paging, and the
//! case-insensitive search that folds case under the store's collation.

use crate::error::{is_retryable, is_statement_level, store_error};
use billing_model::fields::Language;
use billing_model::list::{ListQuery, Page};
use billing_model::money::Currency;
use chrono::{DateTime, Utc};
use diesel::expression::{AppearsOnTable, Expression, ValidGrouping};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::result::Error as DieselError;
use diesel::sql_types::{Bool, Nullable, Text};
use serde_json::Map;

// What the resource files use everywhere.
pub use billing_model::error::StoreError;
pub use billing_model::store::StoreResult;
pub use diesel::dsl::{exists, not};
pub use serde_json::Value;
pub use uuid::Uuid;

pub type Ts = DateTime<Utc>;

/// What the statements of one transaction attempt ran into, read by the store after the
/// closure returns.
#[derive(Debug, Default)]
pub(crate) struct TxState {
    /// A statement hit a serialization failure or deadlock: the attempt must be retried,
    /// whatever the closure made of the error.
    pub conflict: bool,
    /// A statement failed outside a savepoint, so PostgreSQL has aborted the transaction:
    /// committing it would silently roll back, so the store reports this instead.
    pub aborted: Option<String>,
    /// A statement changed what authentication reads (an organization, branch, user or key):
    /// once the transaction commits, the store moves its auth generation (see `auth_feed`).
    pub auth_changed: bool,
}

pub struct PgTx<'c> {
    pub(crate) conn: &'c mut PgConnection,
    /// The collation case-insensitive search folds case with.
    pub(crate) search_collation: &'static str,
    pub(crate) state: TxState,
    pub(crate) mode: TxMode,
    /// Each branch's webhook endpoints as read earlier in this transaction. Every event
    /// recorded asks for them (whether to fan it out), so a batch of renewals would read them
    /// three times per renewal. Cleared when the transaction writes an endpoint, and when a
    /// batch rolls an item back to its savepoint.
    pub(crate) endpoints: std::collections::HashMap<billing_model::ids::BranchId, Vec<billing_model::webhook::Endpoint>>,
    /// Organizations as read earlier in this transaction (every renewal of a batch reads its
    /// organization's clock). Cleared when the transaction writes an organization, and when a
    /// batch rolls an item back to its savepoint.
    pub(crate) orgs: std::collections::HashMap<billing_model::ids::OrgId, Option<billing_model::org::Organization>>,
    /// What a batch's first pass has written and not sent yet (see `deferred` and `batch`).
    pub(crate) deferred: Option<crate::deferred::Deferred<PgKind>>,
    /// What a batch read ahead (see `prefetch` and `batch`).
    pub(crate) prefetched: crate::prefetch::Prefetched,
    /// Products this transaction has marked used in a finalized invoice (or found so): marking
    /// them again changes nothing (the mark is never taken back), and a batch of renewals of
    /// one product would ask once per renewal. Forgotten with the other reads.
    pub(crate) products_used: std::collections::HashSet<(billing_model::ids::BranchId, billing_model::ids::ProductId)>,
}

/// [`PgTx`] as the batch machinery names it (see `deferred::TxKind`).
pub(crate) struct PgKind;

impl crate::deferred::TxKind for PgKind {
    type Tx<'c> = PgTx<'c>;
}

/// How a [`PgTx`]'s statements run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxMode {
    /// In a transaction; each write in a savepoint of its own.
    Savepoints,
    /// In a transaction whose closure ends at its first failed statement (`Store::write_inserts`,
    /// `Store::write_leased`): no savepoints. A closure that carried on after a failure would
    /// find the transaction aborted, and the store reports that instead of committing.
    NoSavepoints,
    /// No transaction at all: a lone read (`Store::read_one`). Writes are refused.
    Autocommit,
}

impl<'c> PgTx<'c> {
    pub(crate) fn new(conn: &'c mut PgConnection, search_collation: &'static str, mode: TxMode) -> Self {
        PgTx {
            conn,
            search_collation,
            state: TxState::default(),
            mode,
            endpoints: Default::default(),
            orgs: Default::default(),
            deferred: None,
            prefetched: Default::default(),
            products_used: Default::default(),
        }
    }

    /// Forgets what the transaction kept of its reads (`endpoints`, `orgs`, what was read ahead):
    /// a batch rolled an item back, and what was read may include what the item wrote.
    pub(crate) fn forget_reads(&mut self) {
        self.endpoints.clear();
        self.orgs.clear();
        self.products_used.clear();
        self.forget_prefetched(None);
    }

    /// Runs reading statements, after sending what a batch deferred (see `deferred`). A failure
    /// aborts the transaction (see [`TxState::aborted`]).
    pub(crate) fn read<T>(&mut self, f: impl FnOnce(&mut PgConnection) -> QueryResult<T>) -> StoreResult<T> {
        self.flush()?;
        self.read_apart(f)
    }

    /// [`Self::read`] of statements that touch none of a batch's deferred rows (see `deferred`).
    pub(crate) fn read_apart<T>(&mut self, f: impl FnOnce(&mut PgConnection) -> QueryResult<T>) -> StoreResult<T> {
        f(self.conn).map_err(|e| self.failed(e, false))
    }

    /// Runs the statements of one write in a savepoint, so that a constraint violation undoes
    /// the whole write and leaves the transaction usable (as a failed statement does in SQLite):
    /// the caller gets `UniqueViolation` and may carry on.
    pub(crate) fn write<T>(&mut self, f: impl FnOnce(&mut PgConnection) -> QueryResult<T>) -> StoreResult<T> {
        self.forget_prefetched(None);
        self.flush()?;
        self.write_apart(f)
    }

    /// [`Self::write`] of statements that touch none of a batch's deferred rows (see `deferred`).
    pub(crate) fn write_apart<T>(&mut self, f: impl FnOnce(&mut PgConnection) -> QueryResult<T>) -> StoreResult<T> {
        match self.mode {
            TxMode::Savepoints => {}
            TxMode::NoSavepoints => return self.change_apart(f),
            TxMode::Autocommit => return Err(StoreError::backend("a write was attempted in a read")),
        }
        self.conn.transaction(f).map_err(|e| {
            let recovered = is_statement_level(&e);
            self.failed(e, recovered)
        })
    }

    /// Runs a write that cannot fail on a constraint (the due-work queue's claims, lease checks
    /// and updates of rows by id with no unique column changed): no savepoint, so two round
    /// trips fewer than [`Self::write`]; a failure aborts the transaction, like a read's.
    pub(crate) fn change<T>(&mut self, f: impl FnOnce(&mut PgConnection) -> QueryResult<T>) -> StoreResult<T> {
        self.forget_prefetched(None);
        self.flush()?;
        self.change_apart(f)
    }

    /// [`Self::change`] of statements that touch none of a batch's deferred rows (see `deferred`).
    pub(crate) fn change_apart<T>(&mut self, f: impl FnOnce(&mut PgConnection) -> QueryResult<T>) -> StoreResult<T> {
        if self.mode == TxMode::Autocommit {
            return Err(StoreError::backend("a write was attempted in a read"));
        }
        f(self.conn).map_err(|e| self.failed(e, false))
    }

    fn failed(&mut self, e: DieselError, recovered: bool) -> StoreError {
        if is_retryable(&e) {
            self.state.conflict = true;
        }
        if !recovered && self.state.aborted.is_none() {
            self.state.aborted = Some(e.to_string());
        }
        store_error(e)
    }
}

/// Rows per multi-row INSERT (PostgreSQL takes at most 65,535 parameters per statement).
pub(crate) const INSERT_CHUNK: usize = 1000;

/// A stored value this version cannot read back (a hand-edited row, a newer schema).
pub fn unreadable(what: &str, value: impl std::fmt::Display) -> StoreError {
    StoreError::backend(format!("unreadable stored {what}: {value}"))
}

pub fn to_json<T: serde::Serialize>(what: &str, v: &T) -> Value {
    // Serializing plain data structs to a `Value` cannot fail (no maps with non-string keys).
    serde_json::to_value(v).unwrap_or_else(|e| panic!("{what} serializes to JSON: {e}"))
}

pub fn from_json<T: serde::de::DeserializeOwned>(what: &str, v: Value) -> StoreResult<T> {
    serde_json::from_value(v).map_err(|e| unreadable(what, e))
}

pub fn json_object(what: &str, v: Value) -> StoreResult<Map<String, Value>> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(unreadable(what, other)),
    }
}

pub fn language(s: &str) -> StoreResult<Language> {
    Language::parse(s).map_err(|_| unreadable("language", s))
}

pub fn currency(s: &str) -> StoreResult<Currency> {
    s.parse().map_err(|_| unreadable("currency", s))
}

/// A stored count (never negative, below 2^32).
pub fn count_of(what: &str, v: i64) -> StoreResult<u32> {
    u32::try_from(v).map_err(|_| unreadable(what, v))
}

pub fn u64_of(what: &str, v: i64) -> StoreResult<u64> {
    u64::try_from(v).map_err(|_| unreadable(what, v))
}

/// Every stored count is far below `i64::MAX`; saturate rather than wrap if one ever is not.
pub fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Parses a closed set of names (a `wire_enum!`), or reports the stored text.
macro_rules! parse_enum {
    ($ty:ty, $s:expr) => {
        <$ty>::parse($s).ok_or_else(|| unreadable(stringify!($ty), $s))
    };
}

/// Parses a stored name with the domain's parser, or reports the stored text.
pub fn parsed<T>(what: &str, s: &str, parse: impl Fn(&str) -> Option<T>) -> StoreResult<T> {
    parse(s).ok_or_else(|| unreadable(what, s))
}

/// An amount in stored thousandths ([`billing_model::money::stored`]): refused, not truncated,
/// when it cannot be kept exactly.
pub fn m(v: billing_model::money::Money) -> StoreResult<i64> {
    billing_model::money::stored(v.amount())
}

/// One page of items and the total across pages.
pub fn page_of<T>(q_page: u32, limit: u32, items: Vec<T>, total: i64) -> Page<T> {
    Page {
        items,
        total: u64::try_from(total).unwrap_or(0),
        page: q_page,
        limit,
    }
}

/// One page of a list: its rows, converted, and the total across pages.
pub fn page<R, T>(q_page: u32, limit: u32, rows: Vec<R>, total: i64, f: impl FnMut(R) -> StoreResult<T>) -> StoreResult<Page<T>> {
    let items = rows.into_iter().map(f).collect::<StoreResult<Vec<T>>>()?;
    Ok(Page {
        items,
        total: u64::try_from(total).unwrap_or(0),
        page: q_page,
        limit,
    })
}

/// The collation case-insensitive search folds case with: ICU's root locale when the server
/// has it (Unicode case folding whatever the database's locale), else the database's default.
/// The sort columns themselves use "C" (byte order), under which `lower` would fold ASCII only.
/// Migration `0002_search_trigram` builds the search indexes under the same choice.
pub const ICU_COLLATION: &str = "und-x-icu";
pub const DEFAULT_COLLATION: &str = "default";

/// `lower((expr COLLATE "c")) LIKE lower(($pattern COLLATE "c"))`: a case-insensitive match of
/// `expr` against a LIKE `pattern`, folding case under the collation `c`.
///
/// This is exactly what `(expr COLLATE "c") ILIKE $pattern` computes (PostgreSQL's `ILIKE`
/// lowers both sides under the collation, then compares), spelled so that the trigram indexes
/// on `lower((col COLLATE "c"))` (migration `0002_search_trigram`) match it: pg_trgm then
/// answers the LIKE from the pattern's trigrams instead of lowering every row.
///
/// The statement is not kept prepared: PostgreSQL plans it for each pattern (a generic plan,
/// which cannot see the pattern's trigrams, may prefer scanning the table).
#[derive(Debug, Clone)]
pub struct FoldedLike<E> {
    expr: E,
    pattern: String,
    collation: &'static str,
}

pub fn folded_like<E>(expr: E, pattern: String, collation: &'static str) -> FoldedLike<E> {
    FoldedLike { expr, pattern, collation }
}

impl<E: Expression> Expression for FoldedLike<E> {
    // NULL when `expr` is; `NOT NULL` columns simply never give it.
    type SqlType = Nullable<Bool>;
}

impl<E: QueryFragment<Pg>> QueryFragment<Pg> for FoldedLike<E> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.unsafe_to_cache_prepared();
        out.push_sql("(lower((");
        self.expr.walk_ast(out.reborrow())?;
        out.push_sql(" COLLATE ");
        out.push_identifier(self.collation)?;
        out.push_sql(")) LIKE lower((");
        out.push_bind_param::<Text, String>(&self.pattern)?;
        out.push_sql(" COLLATE ");
        out.push_identifier(self.collation)?;
        out.push_sql(")))");
        Ok(())
    }
}

/// The SQL depends on a runtime value (the collation), so the type alone does not identify
/// the statement.
impl<E> QueryId for FoldedLike<E> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<E: AppearsOnTable<QS>, QS> AppearsOnTable<QS> for FoldedLike<E> where Self: Expression {}

impl<E: ValidGrouping<GB>, GB> ValidGrouping<GB> for FoldedLike<E> {
    type IsAggregate = E::IsAggregate;
}

/// A `LIKE` pattern matching `term` anywhere: `%`, `_` and the escape character `\` in the
/// term match themselves.
pub fn contains_pattern(term: &str) -> String {
    let mut p = String::with_capacity(term.len() + 2);
    p.push('%');
    for ch in term.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(ch);
    }
    p.push('%');
    p
}

/// Orders a boxed query by `$col` then `$id`, in `$dir`; `nulls` adds the NULL placement for
/// nullable sort keys.
macro_rules! order {
    ($query:expr, $dir:expr, $col:expr, $id:expr) => {
        match $dir {
            Direction::Asc => $query.order_by($col.asc()).then_order_by($id.asc()),
            Direction::Desc => $query.order_by($col.desc()).then_order_by($id.desc()),
        }
    };
    ($query:expr, $dir:expr, nulls $col:expr, $id:expr) => {
        match $dir {
            Direction::Asc => $query.order_by($col.asc().nulls_first()).then_order_by($id.asc()),
            Direction::Desc => $query.order_by($col.desc().nulls_last()).then_order_by($id.desc()),
        }
    };
}

pub fn page_bounds<S>(q: &ListQuery<S>) -> (i64, i64) {
    (i64::from(q.limit), i64_of(q.offset()))
}

/// `lower((col COLLATE "c")) LIKE lower((` … the pattern bind … then [`close`]: the SQL-text
/// form of [`folded_like`], for queries written with `sql`. The collation name comes from a
/// fixed set, never from a request.
pub fn folded(col: &str, coll: &'static str) -> String {
    format!("lower(({col} COLLATE \"{coll}\")) LIKE lower((")
}

pub fn close(coll: &'static str) -> String {
    format!(" COLLATE \"{coll}\"))")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::{consumers_matching, consumers_page};
    use crate::coupon::coupons_matching;
    use crate::product::products_matching;
    use billing_model::consumer::{ConsumerFilter, ConsumerSort};
    use billing_model::coupon::{CouponFilter, CouponSort};
    use billing_model::list::ListQuery;
    use billing_model::product::{ProductFilter, ProductSort};
    use diesel::connection::SimpleConnection;

    /// `EXPLAIN (COSTS OFF) <query>`, one plan line per row.
    struct Explain<Q>(Q);

    impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Explain<Q> {
        fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
            out.push_sql("EXPLAIN (COSTS OFF) ");
            self.0.walk_ast(out.reborrow())
        }
    }

    impl<Q> QueryId for Explain<Q> {
        type QueryId = ();
        const HAS_STATIC_QUERY_ID: bool = false;
    }

    impl<Q> diesel::query_builder::Query for Explain<Q> {
        type SqlType = Text;
    }

    impl<Q> RunQueryDsl<PgConnection> for Explain<Q> {}

    const SEED: &str = r#"
        INSERT INTO organizations VALUES ('00000000-0000-7000-8000-000000000001', 'o', NULL, true, '{}', 0, now());
        INSERT INTO branches VALUES ('00000000-0000-7000-8000-0000000000b1', '00000000-0000-7000-8000-000000000001', 'Main', 'main', now(), NULL);
        INSERT INTO consumers (id, org_id, branch_id, name, phone_number, email, email_lower, external_id, iban, alias,
                               preferred_language, communication_methods, consumer_type, external_metadata, created_at)
        SELECT gen_random_uuid(), '00000000-0000-7000-8000-000000000001', '00000000-0000-7000-8000-0000000000b1',
               'Customer ' || md5(i::text), '+9665' || lpad(i::text, 8, '0'), 'user' || i || '@example.com',
               'user' || i || '@example.com', 'EXT-' || i, 'SA' || lpad(i::text, 22, '0'), 'alias' || i,
               'AR', '{}', 'INDIVIDUAL', '{}', now()
        FROM generate_series(1, 5000) i;
        INSERT INTO products (id, org_id, branch_id, name, description, product_type, recurring_interval_count,
                              is_active, external_metadata, created_at)
        SELECT gen_random_uuid(), '00000000-0000-7000-8000-000000000001', '00000000-0000-7000-8000-0000000000b1',
               'Product ' || md5(i::text), 'Description ' || md5((-i)::text), 'ONE_OFF', 1, true, '{}', now()
        FROM generate_series(1, 5000) i;
        INSERT INTO coupons (id, org_id, branch_id, name, is_percentage, discount_value, is_active, created_at)
        SELECT gen_random_uuid(), '00000000-0000-7000-8000-000000000001', '00000000-0000-7000-8000-0000000000b1',
               'Coupon ' || md5(i::text), true, 10000, true, now()
        FROM generate_series(1, 5000) i;
    "#;

    /// The migration's trigram indexes match the search predicates (same expression, same
    /// collation), and the planner uses them for a selective term instead of scanning.
    #[test]
    fn searches_use_the_trigram_indexes() {
        let Some(server) = crate::testing::server_url() else {
            eprintln!("SKIPPED searches_use_the_trigram_indexes: {} is not set", crate::testing::DATABASE_URL_ENV);
            return;
        };
        let db = crate::testing::TempDatabase::create(&server).expect("a temporary database");
        let mut conn = PgConnection::establish(db.url()).expect("connect");
        conn.batch_execute(SEED).expect("seed");
        // What autovacuum does after inserts: statistics, and GIN's pending lists merged.
        conn.batch_execute("VACUUM ANALYZE").expect("vacuum");
        let coll = crate::search_collation(&mut conn, None).expect("collation");
        let branch: Uuid = "00000000-0000-7000-8000-0000000000b1".parse().unwrap();
        let plan = |conn: &mut PgConnection, q: &dyn Fn(&mut PgConnection) -> QueryResult<Vec<String>>| q(conn).expect("explain").join("\n");

        let mut q = ListQuery::new(ConsumerSort::CreatedAt);
        q.search = Some("USER1234@".into());
        let f = ConsumerFilter::default();
        let got = plan(&mut conn, &|c| Explain(consumers_matching(branch, &q, &f, coll).count()).load(c));
        for index in [
            "consumers_search_name",
            "consumers_search_email",
            "consumers_search_phone",
            "consumers_search_alias",
            "consumers_search_external_id",
            "consumers_branch_iban",
        ] {
            assert!(got.contains(index), "the consumer search uses {index}:\n{got}");
        }
        assert!(!got.contains("Seq Scan"), "the consumer search does not scan:\n{got}");
        let (rows, total) = consumers_page(&mut conn, branch, &q, &f, coll).expect("search");
        assert_eq!((rows.len(), total), (1, 1));

        let mut q = ListQuery::new(ProductSort::CreatedAt);
        q.search = Some("C4CA4238".into()); // md5('1')
        let f = ProductFilter::default();
        let got = plan(&mut conn, &|c| Explain(products_matching(branch, &q, &f, coll).count()).load(c));
        for index in ["products_search_name", "products_search_description"] {
            assert!(got.contains(index), "the product search uses {index}:\n{got}");
        }
        assert!(!got.contains("Seq Scan"), "the product search does not scan:\n{got}");

        let mut q = ListQuery::new(CouponSort::CreatedAt);
        q.search = Some("COUPON C4CA4238".into());
        let f = CouponFilter::default();
        let got = plan(&mut conn, &|c| Explain(coupons_matching(branch, &q, &f, coll).count()).load(c));
        assert!(got.contains("coupons_search_name"), "the coupon search uses its index:\n{got}");
        assert!(!got.contains("Seq Scan"), "the coupon search does not scan:\n{got}");
    }

    #[test]
    fn patterns_escape_wildcards() {
        assert_eq!(contains_pattern("ab"), "%ab%");
        assert_eq!(contains_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
    }
}
