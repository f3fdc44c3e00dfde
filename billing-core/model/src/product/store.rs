//! What a store offers for products and their prices (part of [`crate::store::Tx`]). Deleted
//! products are never returned; a product comes with all its prices, active and inactive,
//! ordered by (created_at, id).

use super::{Product, ProductFilter, ProductSort};
use crate::error::StoreResult;
use crate::ids::{BranchId, ProductId};
use crate::list::{ListQuery, Page};
use crate::money::Currency;

pub trait ProductTx {
    /// `default_currency` picks the price that `ProductSort::Price` sorts by
    /// ([`Product::primary_price`]).
    fn insert_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()>;
    fn product(&mut self, branch: BranchId, id: ProductId) -> StoreResult<Option<Product>>;
    /// Replaces the product row and upserts its prices by id.
    fn update_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()>;
    /// Marks the products `ids` of `branch` that are not deleted as used in a finalized
    /// invoice (`used_in_finalized_invoice`), changing nothing else of them (nor their prices);
    /// ids that are unknown, of another branch or deleted are left alone.
    fn mark_products_used(&mut self, branch: BranchId, ids: &[ProductId]) -> StoreResult<()>;
    /// Search is a case-insensitive substring of name or description.
    fn list_products(&mut self, branch: BranchId, q: &ListQuery<ProductSort>, f: &ProductFilter) -> StoreResult<Page<Product>>;
}
