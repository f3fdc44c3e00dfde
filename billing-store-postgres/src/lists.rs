//! The three paged lists: filters as boxed queries (built once for the count and once for the
//! page), sorting by the requested field then by id in the same direction, `NULL` first when
//! ascending and last when descending (as SQLite orders it).

use crate::rows::{i64_of, ConsumerRow, CouponRow, PriceRow, ProductRow};
use crate::schema::{consumers, coupons, product_prices, products};
use billing_core::consumer::{ConsumerFilter, ConsumerSort};
use billing_core::coupon::{CouponFilter, CouponSort};
use billing_core::list::{Direction, ListQuery};
use billing_core::product::{ProductFilter, ProductSort};
use diesel::dsl::{exists, not};
use diesel::expression::{AppearsOnTable, Expression, ValidGrouping};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Bool, Nullable, Text};
use uuid::Uuid;

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

fn page_bounds<S>(q: &ListQuery<S>) -> (i64, i64) {
    (i64::from(q.limit), i64_of(q.offset()))
}

// --- consumers -------------------------------------------------------------------------------

fn consumers_matching<'a>(branch: Uuid, q: &'a ListQuery<ConsumerSort>, f: &'a ConsumerFilter, coll: &'static str) -> consumers::BoxedQuery<'a, Pg> {
    use consumers::dsl as c;
    let mut query = c::consumers.filter(c::branch_id.eq(branch)).filter(not(c::is_deleted)).into_boxed();
    if let Some(term) = &q.search {
        let pat = contains_pattern(term);
        query = query.filter(
            folded_like(c::name, pat.clone(), coll)
                .or(folded_like(c::email, pat.clone(), coll))
                .or(folded_like(c::phone_number, pat.clone(), coll))
                .or(folded_like(c::alias, pat.clone(), coll))
                .or(folded_like(c::external_id, pat, coll))
                .or(c::iban.eq(term.as_str())),
        );
    }
    if let Some(x) = &f.external_id {
        query = query.filter(c::external_id.eq(x.as_str()));
    }
    for (key, value) in &f.metadata {
        query = query.filter(c::external_metadata.retrieve_as_text(key.as_str()).eq(value.as_str()));
    }
    query
}

pub fn consumers_page(
    conn: &mut PgConnection,
    branch: Uuid,
    q: &ListQuery<ConsumerSort>,
    f: &ConsumerFilter,
    coll: &'static str,
) -> QueryResult<(Vec<ConsumerRow>, i64)> {
    use consumers::dsl as c;
    let total = consumers_matching(branch, q, f, coll).count().get_result::<i64>(conn)?;
    let query = consumers_matching(branch, q, f, coll).select(ConsumerRow::as_select());
    let query = match q.sort {
        ConsumerSort::Name => order!(query, q.direction, c::name, c::id),
        ConsumerSort::CreatedAt => order!(query, q.direction, c::created_at, c::id),
        ConsumerSort::Email => order!(query, q.direction, nulls c::email, c::id),
        ConsumerSort::PhoneNumber => order!(query, q.direction, nulls c::phone_number, c::id),
        ConsumerSort::ExternalId => order!(query, q.direction, nulls c::external_id, c::id),
    };
    let (limit, offset) = page_bounds(q);
    let rows = query.limit(limit).offset(offset).load(conn)?;
    Ok((rows, total))
}

// --- products --------------------------------------------------------------------------------

fn products_matching<'a>(branch: Uuid, q: &'a ListQuery<ProductSort>, f: &'a ProductFilter, coll: &'static str) -> products::BoxedQuery<'a, Pg> {
    use products::dsl as p;
    let mut query = p::products.filter(p::branch_id.eq(branch)).filter(not(p::is_deleted)).into_boxed();
    if let Some(term) = &q.search {
        let pat = contains_pattern(term);
        query = query.filter(folded_like(p::name, pat.clone(), coll).or(folded_like(p::description, pat, coll)));
    }
    if let Some(active) = f.active {
        query = query.filter(p::is_active.eq(active));
    }
    if let Some(t) = f.product_type {
        query = query.filter(p::product_type.eq(t.as_str()));
    }
    if let Some(cur) = &f.currency {
        query = query.filter(exists(
            product_prices::table
                .filter(product_prices::product_id.eq(p::id))
                .filter(product_prices::currency.eq(cur.as_str()))
                .filter(product_prices::is_active),
        ));
    }
    for (key, value) in &f.metadata {
        query = query.filter(p::external_metadata.retrieve_as_text(key.as_str()).eq(value.as_str()));
    }
    query
}

pub fn products_page(
    conn: &mut PgConnection,
    branch: Uuid,
    q: &ListQuery<ProductSort>,
    f: &ProductFilter,
    coll: &'static str,
) -> QueryResult<(Vec<ProductRow>, i64)> {
    use products::dsl as p;
    let total = products_matching(branch, q, f, coll).count().get_result::<i64>(conn)?;
    let query = products_matching(branch, q, f, coll).select(ProductRow::as_select());
    let query = match q.sort {
        ProductSort::Price => order!(query, q.direction, nulls p::sort_price, p::id),
        ProductSort::Name => order!(query, q.direction, p::name, p::id),
        ProductSort::CreatedAt => order!(query, q.direction, p::created_at, p::id),
    };
    let (limit, offset) = page_bounds(q);
    let rows = query.limit(limit).offset(offset).load(conn)?;
    Ok((rows, total))
}

/// The prices of `products`, each product's in the order they were set.
pub fn prices_of(conn: &mut PgConnection, product_ids: &[Uuid]) -> QueryResult<Vec<PriceRow>> {
    use product_prices::dsl as pp;
    pp::product_prices
        .filter(pp::product_id.eq_any(product_ids))
        .order_by((pp::product_id, pp::created_at, pp::id))
        .select(PriceRow::as_select())
        .load(conn)
}

// --- coupons ---------------------------------------------------------------------------------

fn coupons_matching<'a>(branch: Uuid, q: &'a ListQuery<CouponSort>, f: &'a CouponFilter, coll: &'static str) -> coupons::BoxedQuery<'a, Pg> {
    use coupons::dsl as c;
    let mut query = c::coupons.filter(c::branch_id.eq(branch)).filter(not(c::is_deleted)).into_boxed();
    if let Some(term) = &q.search {
        query = query.filter(folded_like(c::name, contains_pattern(term), coll));
    }
    if let Some(active) = f.active {
        query = query.filter(c::is_active.eq(active));
    }
    if let Some(pct) = f.is_percentage {
        query = query.filter(c::is_percentage.eq(pct));
    }
    query
}

pub fn coupons_page(
    conn: &mut PgConnection,
    branch: Uuid,
    q: &ListQuery<CouponSort>,
    f: &CouponFilter,
    coll: &'static str,
) -> QueryResult<(Vec<CouponRow>, i64)> {
    use coupons::dsl as c;
    let total = coupons_matching(branch, q, f, coll).count().get_result::<i64>(conn)?;
    let query = coupons_matching(branch, q, f, coll).select(CouponRow::as_select());
    let query = match q.sort {
        CouponSort::CreatedAt => order!(query, q.direction, c::created_at, c::id),
        CouponSort::UpdatedAt => order!(query, q.direction, nulls c::updated_at, c::id),
        CouponSort::Name => order!(query, q.direction, c::name, c::id),
        CouponSort::DiscountValue => order!(query, q.direction, c::discount_value, c::id),
    };
    let (limit, offset) = page_bounds(q);
    let rows = query.limit(limit).offset(offset).load(conn)?;
    Ok((rows, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use billing_core::list::ListQuery;
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
        let coll = crate::search_collation(&mut conn).expect("collation");
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
