//! Products and their prices: `billing_model::product::ProductTx`.

use crate::support::*;
use billing_model::ids::{BranchId, ProductId};
use billing_model::list::{Direction, ListQuery, Page};
use billing_model::money::{Currency, Money};
use billing_model::product::{Product, ProductFilter, ProductPrice, ProductSort, ProductType, RecurringInterval, VatMode};
use billing_model::store::StoreResult;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::upsert::excluded;
use std::collections::HashMap;
use uuid::Uuid;

diesel::table! {
    products (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        name -> Text,
        description -> Nullable<Text>,
        product_type -> Text,
        recurring_interval -> Nullable<Text>,
        recurring_interval_count -> Int4,
        is_active -> Bool,
        external_metadata -> Jsonb,
        sort_price -> Nullable<Int8>,
        used_in_finalized_invoice -> Bool,
        is_deleted -> Bool,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    product_prices (id) {
        id -> Uuid,
        product_id -> Uuid,
        currency -> Text,
        amount -> Int8,
        vat_mode -> Text,
        is_active -> Bool,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

// --- products --------------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = products, check_for_backend(diesel::pg::Pg))]
pub struct ProductRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub product_type: String,
    pub recurring_interval: Option<String>,
    pub recurring_interval_count: i32,
    pub is_active: bool,
    pub external_metadata: Value,
    pub used_in_finalized_invoice: bool,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

#[derive(Insertable, AsChangeset)]
#[diesel(table_name = products, treat_none_as_default_value = false, treat_none_as_null = true)]
pub struct NewProductRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub product_type: &'static str,
    pub recurring_interval: Option<&'static str>,
    pub recurring_interval_count: i32,
    pub is_active: bool,
    pub external_metadata: Value,
    pub sort_price: Option<i64>,
    pub used_in_finalized_invoice: bool,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl<'a> NewProductRow<'a> {
    pub fn new(p: &'a Product, default_currency: Currency) -> StoreResult<Self> {
        Ok(NewProductRow {
            id: p.id.0,
            org_id: p.org_id.0,
            branch_id: p.branch_id.0,
            name: &p.name,
            description: p.description.as_deref(),
            product_type: p.product_type.as_str(),
            recurring_interval: p.recurring_interval.map(|i| i.as_str()),
            // The core keeps 1..=365; anything larger would not be a valid count anyway.
            recurring_interval_count: i32::try_from(p.recurring_interval_count).unwrap_or(i32::MAX),
            is_active: p.is_active,
            external_metadata: Value::Object(p.external_metadata.clone()),
            sort_price: p
                .primary_price(default_currency)
                .map(|pp| billing_model::money::stored(pp.amount.amount()))
                .transpose()?,
            used_in_finalized_invoice: p.used_in_finalized_invoice,
            is_deleted: p.is_deleted,
            created_at: p.created_at,
            updated_at: p.updated_at,
        })
    }
}

impl ProductRow {
    pub fn into_domain(self, prices: Vec<ProductPrice>) -> StoreResult<Product> {
        Ok(Product {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            name: self.name,
            description: self.description,
            product_type: parse_enum!(ProductType, &self.product_type)?,
            recurring_interval: self.recurring_interval.as_deref().map(|i| parse_enum!(RecurringInterval, i)).transpose()?,
            recurring_interval_count: u32::try_from(self.recurring_interval_count)
                .map_err(|_| unreadable("recurring_interval_count", self.recurring_interval_count))?,
            is_active: self.is_active,
            external_metadata: json_object("product external_metadata", self.external_metadata)?,
            prices,
            used_in_finalized_invoice: self.used_in_finalized_invoice,
            is_deleted: self.is_deleted,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = product_prices, check_for_backend(diesel::pg::Pg))]
pub struct PriceRow {
    pub id: Uuid,
    pub product_id: Uuid,
    pub currency: String,
    pub amount: i64,
    pub vat_mode: String,
    pub is_active: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

#[derive(Insertable)]
#[diesel(table_name = product_prices, treat_none_as_default_value = false)]
pub struct NewPriceRow {
    pub id: Uuid,
    pub product_id: Uuid,
    pub currency: &'static str,
    pub amount: i64,
    pub vat_mode: &'static str,
    pub is_active: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl NewPriceRow {
    pub fn new(p: &ProductPrice) -> StoreResult<Self> {
        Ok(NewPriceRow {
            id: p.id.0,
            product_id: p.product_id.0,
            currency: p.currency().code(),
            amount: billing_model::money::stored(p.amount.amount())?,
            vat_mode: VatMode::as_str(p.vat_mode),
            is_active: p.is_active,
            created_at: p.created_at,
            updated_at: p.updated_at,
        })
    }
}

impl PriceRow {
    pub fn into_domain(self) -> StoreResult<ProductPrice> {
        Ok(ProductPrice {
            id: self.id.into(),
            product_id: self.product_id.into(),
            amount: Money::from_stored(self.amount, currency(&self.currency)?),
            vat_mode: VatMode::parse(&self.vat_mode).ok_or_else(|| unreadable("vat_mode", &self.vat_mode))?,
            is_active: self.is_active,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

// --- products --------------------------------------------------------------------------------

pub(crate) fn products_matching<'a>(branch: Uuid, q: &'a ListQuery<ProductSort>, f: &'a ProductFilter, coll: &'static str) -> products::BoxedQuery<'a, Pg> {
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

impl PgTx<'_> {
    fn product_prices(&mut self, ids: &[Uuid]) -> StoreResult<HashMap<Uuid, Vec<ProductPrice>>> {
        let rows = self.read(|c| prices_of(c, ids))?;
        let mut by_product: HashMap<Uuid, Vec<ProductPrice>> = HashMap::new();
        for r in rows {
            by_product.entry(r.product_id).or_default().push(r.into_domain()?);
        }
        Ok(by_product)
    }

    fn products_with_prices(&mut self, rows: Vec<ProductRow>) -> StoreResult<Vec<Product>> {
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let mut prices = if ids.is_empty() { HashMap::new() } else { self.product_prices(&ids)? };
        rows.into_iter()
            .map(|r| {
                let ps = prices.remove(&r.id).unwrap_or_default();
                r.into_domain(ps)
            })
            .collect()
    }

    /// The product's price rows, deactivated ones first: the partial unique index on active
    /// (product, currency) is checked row by row, and a currency's new active price may replace
    /// an old one in the same write.
    fn price_rows(p: &Product) -> StoreResult<Vec<NewPriceRow>> {
        let mut rows = p.prices.iter().map(NewPriceRow::new).collect::<StoreResult<Vec<_>>>()?;
        rows.sort_by_key(|r| r.is_active);
        Ok(rows)
    }

    /// Upserts price rows by id.
    fn save_prices(conn: &mut PgConnection, rows: &[NewPriceRow]) -> QueryResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        use product_prices::dsl as pp;
        diesel::insert_into(pp::product_prices)
            .values(rows)
            .on_conflict(pp::id)
            .do_update()
            .set((
                pp::product_id.eq(excluded(pp::product_id)),
                pp::currency.eq(excluded(pp::currency)),
                pp::amount.eq(excluded(pp::amount)),
                pp::vat_mode.eq(excluded(pp::vat_mode)),
                pp::is_active.eq(excluded(pp::is_active)),
                pp::created_at.eq(excluded(pp::created_at)),
                pp::updated_at.eq(excluded(pp::updated_at)),
            ))
            .execute(conn)?;
        Ok(())
    }
}

impl billing_model::product::ProductTx for PgTx<'_> {
    // --- products ----------------------------------------------------------------------------

    fn insert_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()> {
        // Whatever this transaction knew of marks, a product written may have changed.
        self.products_used.clear();
        let row = NewProductRow::new(p, default_currency)?;
        let prices = Self::price_rows(p)?;
        self.write(|c| {
            diesel::insert_into(products::table).values(&row).execute(c)?;
            Self::save_prices(c, &prices)
        })
    }

    fn mark_products_used(&mut self, branch: BranchId, ids: &[ProductId]) -> StoreResult<()> {
        use products::dsl as pr;
        let ids: Vec<uuid::Uuid> = ids.iter().filter(|i| !self.products_used.contains(&(branch, **i))).map(|i| i.0).collect();
        if ids.is_empty() {
            return Ok(());
        }
        // Usually already marked: the filter then finds the rows and writes nothing.
        self.change_apart(|c| {
            diesel::update(
                pr::products
                    .filter(pr::id.eq_any(&ids))
                    .filter(pr::branch_id.eq(branch.0))
                    .filter(not(pr::is_deleted))
                    .filter(not(pr::used_in_finalized_invoice)),
            )
            .set(pr::used_in_finalized_invoice.eq(true))
            .execute(c)
        })
        .map(drop)?;
        self.products_used.extend(ids.iter().map(|i| (branch, ProductId(*i))));
        Ok(())
    }

    fn product(&mut self, branch: BranchId, id: ProductId) -> StoreResult<Option<Product>> {
        use products::dsl as pr;
        let Some(row) = self.read(|c| {
            pr::products
                .filter(pr::id.eq(id.0))
                .filter(pr::branch_id.eq(branch.0))
                .filter(not(pr::is_deleted))
                .select(ProductRow::as_select())
                .first(c)
                .optional()
        })?
        else {
            return Ok(None);
        };
        Ok(self.products_with_prices(vec![row])?.pop())
    }

    fn update_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()> {
        // Whatever this transaction knew of marks, a product written may have changed.
        self.products_used.clear();
        let row = NewProductRow::new(p, default_currency)?;
        let prices = Self::price_rows(p)?;
        self.write(|c| {
            diesel::update(products::table.find(p.id.0)).set(&row).execute(c)?;
            Self::save_prices(c, &prices)
        })
    }

    fn list_products(&mut self, branch: BranchId, q: &ListQuery<ProductSort>, f: &ProductFilter) -> StoreResult<Page<Product>> {
        let coll = self.search_collation;
        let (rows, total) = self.read(|c| products_page(c, branch.0, q, f, coll))?;
        let items = self.products_with_prices(rows)?;
        page(q.page, q.limit, items, total, Ok)
    }
}
