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
use uuid::Uuid;

/// The collation case-insensitive search folds case with: ICU's root locale when the server
/// has it (Unicode case folding whatever the database's locale), else the database's default.
/// The sort columns themselves use "C" (byte order), under which `ILIKE` would fold ASCII only.
pub const ICU_COLLATION: &str = "und-x-icu";
pub const DEFAULT_COLLATION: &str = "default";

/// `(expr COLLATE "name")`.
#[derive(Debug, Clone, Copy)]
pub struct Collated<E> {
    expr: E,
    collation: &'static str,
}

pub fn collated<E>(expr: E, collation: &'static str) -> Collated<E> {
    Collated { expr, collation }
}

impl<E: Expression> Expression for Collated<E> {
    type SqlType = E::SqlType;
}

impl<E: QueryFragment<Pg>> QueryFragment<Pg> for Collated<E> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("(");
        self.expr.walk_ast(out.reborrow())?;
        out.push_sql(" COLLATE ");
        out.push_identifier(self.collation)?;
        out.push_sql(")");
        Ok(())
    }
}

/// The SQL depends on a runtime value (the collation), so the type alone does not identify
/// the statement: no static query id, the statement cache keys it by its SQL.
impl<E> QueryId for Collated<E> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<E: AppearsOnTable<QS>, QS> AppearsOnTable<QS> for Collated<E> where Self: Expression {}

impl<E: ValidGrouping<GB>, GB> ValidGrouping<GB> for Collated<E> {
    type IsAggregate = E::IsAggregate;
}

/// An `ILIKE` pattern matching `term` anywhere: `%`, `_` and the escape character `\` in the
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
            collated(c::name, coll)
                .ilike(pat.clone())
                .or(collated(c::email, coll).ilike(pat.clone()))
                .or(collated(c::phone_number, coll).ilike(pat.clone()))
                .or(collated(c::alias, coll).ilike(pat.clone()))
                .or(collated(c::external_id, coll).ilike(pat))
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
        query = query.filter(collated(p::name, coll).ilike(pat.clone()).or(collated(p::description, coll).ilike(pat)));
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
        query = query.filter(collated(c::name, coll).ilike(contains_pattern(term)));
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
    use super::contains_pattern;

    #[test]
    fn patterns_escape_wildcards() {
        assert_eq!(contains_pattern("ab"), "%ab%");
        assert_eq!(contains_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
    }
}
