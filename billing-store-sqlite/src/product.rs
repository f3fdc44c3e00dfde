//! Products and their prices: `billing_model::product::ProductTx`. A product's `sort_price` is
//! its primary price ([`Product::primary_price`]) in stored thousandths, for sorting by price.

use crate::sql::*;
use billing_model::ids::{BranchId, ProductId};
use billing_model::list::{ListQuery, Page};
use billing_model::money::{Currency, Money};
use billing_model::product::{Product, ProductFilter, ProductPrice, ProductSort, ProductTx, ProductType, RecurringInterval, VatMode};
use billing_model::store::StoreResult;

table! {
    pub Products in "products" for Product |p, r, at| {
        id: u(p.id) => get_id(r, at)?,
        org_id: u(p.org_id) => get_id(r, at)?,
        branch_id: u(p.branch_id) => get_id(r, at)?,
        name: s(&p.name) => r.get(at)?,
        description: s_opt(p.description.as_deref()) => r.get(at)?,
        product_type: s(p.product_type.as_str()) => get_parsed(r, at, ProductType::parse)?,
        recurring_interval: s_opt(p.recurring_interval.map(|x| x.as_str())) => get_parsed_opt(r, at, RecurringInterval::parse)?,
        recurring_interval_count: i(i64::from(p.recurring_interval_count)) => get_count(r, at)?,
        is_active: b(p.is_active) => r.get(at)?,
        external_metadata: j(&p.external_metadata) => get_json(r, at)?,
        used_in_finalized_invoice: b(p.used_in_finalized_invoice) => r.get(at)?,
        is_deleted: b(p.is_deleted) => r.get(at)?,
        created_at: t(&p.created_at) => get_ts(r, at)?,
        updated_at: t_opt(&p.updated_at) => get_ts_opt(r, at)?,
    } => Product {
        id, org_id, branch_id, name, description, product_type, recurring_interval, recurring_interval_count, is_active,
        external_metadata, prices: vec![], used_in_finalized_invoice, is_deleted, created_at, updated_at,
    }
}

table! {
    pub Prices in "product_prices" for ProductPrice |pr, r, at| {
        id: u(pr.id) => get_id(r, at)?,
        product_id: u(pr.product_id) => get_id(r, at)?,
        currency: s(pr.currency().code()) => get_currency(r, at)?,
        amount: m(&pr.amount)? => r.get::<_, i64>(at)?,
        vat_mode: s(pr.vat_mode.as_str()) => get_parsed(r, at, VatMode::parse)?,
        is_active: b(pr.is_active) => r.get(at)?,
        created_at: t(&pr.created_at) => get_ts(r, at)?,
        updated_at: t_opt(&pr.updated_at) => get_ts_opt(r, at)?,
    } => ProductPrice { id, product_id, amount: Money::from_stored(amount, currency), vat_mode, is_active, created_at, updated_at }
}

impl SqliteTx<'_> {
    /// Writes the product's prices (new ones inserted, known ones updated) and its sort price.
    fn save_prices(&self, p: &Product, default_currency: Currency) -> StoreResult<()> {
        // Deactivations first, so that a currency moving to a new active price never has two.
        let mut ordered: Vec<&ProductPrice> = p.prices.iter().collect();
        ordered.sort_by_key(|x| x.is_active);
        for pr in ordered {
            self.exec(sql!("{}", Prices::sql().upsert(Prices::WRITTEN)), Prices::params(pr)?)?;
        }
        let sort_price = p.primary_price(default_currency).map(|x| m(&x.amount)).transpose()?;
        self.exec(
            "UPDATE products SET sort_price = ?2 WHERE id = ?1",
            vec![u(p.id), sort_price.unwrap_or(rusqlite::types::Value::Null)],
        )?;
        Ok(())
    }

    fn with_prices(&self, mut p: Product) -> StoreResult<Product> {
        p.prices = self.all(
            sql!(
                "SELECT {} FROM product_prices WHERE product_id = ?1 ORDER BY created_at, id",
                Prices::sql().select
            ),
            vec![u(p.id)],
            Prices::row,
        )?;
        Ok(p)
    }

    /// The prices of a page of products in one statement (each product's in `created_at, id`
    /// order, as [`Self::with_prices`] reads them).
    fn with_prices_of_page(&self, mut products: Vec<Product>) -> StoreResult<Vec<Product>> {
        if products.is_empty() {
            return Ok(products);
        }
        let mut w = Filter::new("FROM product_prices WHERE 1 = 1", vec![]);
        w.any("product_id", products.iter().map(|p| u(p.id)).collect());
        let select = format!("SELECT {} {} ORDER BY created_at, id", Prices::sql().select, w.sql);
        let mut by_product: std::collections::HashMap<ProductId, Vec<ProductPrice>> = std::collections::HashMap::new();
        for price in self.all(&select, w.params, Prices::row)? {
            by_product.entry(price.product_id).or_default().push(price);
        }
        for p in &mut products {
            p.prices = by_product.remove(&p.id).unwrap_or_default();
        }
        Ok(products)
    }
}

impl ProductTx for SqliteTx<'_> {
    fn insert_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()> {
        self.exec(&Products::sql().insert, Products::params(p)?)?;
        self.save_prices(p, default_currency)
    }

    fn mark_products_used(&mut self, branch: BranchId, ids: &[ProductId]) -> StoreResult<()> {
        // Usually already marked: the WHERE clause then finds the row and writes nothing.
        for id in ids {
            self.exec(
                "UPDATE products SET used_in_finalized_invoice = 1 \
                 WHERE id = ?1 AND branch_id = ?2 AND is_deleted = 0 AND used_in_finalized_invoice = 0",
                vec![u(*id), u(branch)],
            )?;
        }
        Ok(())
    }

    fn product(&mut self, branch: BranchId, product: ProductId) -> StoreResult<Option<Product>> {
        let found = self.one(
            sql!(
                "SELECT {} FROM products WHERE id = ?1 AND branch_id = ?2 AND is_deleted = 0",
                Products::sql().select
            ),
            vec![u(product), u(branch)],
            Products::row,
        )?;
        found.map(|p| self.with_prices(p)).transpose()
    }

    fn update_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()> {
        self.update_one(&Products::sql().update, Products::params(p)?, "product")?;
        self.save_prices(p, default_currency)
    }

    fn list_products(&mut self, branch: BranchId, q: &ListQuery<ProductSort>, f: &ProductFilter) -> StoreResult<Page<Product>> {
        let mut w = Filter::new("FROM products WHERE branch_id = ?1 AND is_deleted = 0", vec![u(branch)]);
        if let Some(term) = &q.search {
            w.folded(&["name", "description"], term, "");
        }
        if let Some(a) = f.active {
            w.cmp("is_active =", b(a));
        }
        if let Some(t) = f.product_type {
            w.cmp("product_type =", s(t.as_str()));
        }
        if let Some(c) = &f.currency {
            let n = w.next();
            w.sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM product_prices pp WHERE pp.product_id = products.id AND pp.is_active = 1 AND pp.currency = ?{n})"
            ));
            w.params.push(s(c.as_str()));
        }
        w.metadata(&f.metadata);
        let order = match q.sort {
            ProductSort::Price => "sort_price",
            ProductSort::Name => "name",
            ProductSort::CreatedAt => "created_at",
        };
        let paging = Paging {
            order,
            dir: q.direction,
            page: q.page,
            limit: q.limit,
        };
        let page = self.page(sql!("SELECT {}", Products::sql().select), &w, paging, Products::row)?;
        let Page { items, total, page, limit } = page;
        let items = self.with_prices_of_page(items)?;
        Ok(Page { items, total, page, limit })
    }
}
