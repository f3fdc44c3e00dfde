//! Product operations. A product that a finalised invoice uses is frozen: every change is
//! refused.

use super::{PriceInput, PriceUpdate, Product, ProductFields, ProductFilter, ProductPrice, ProductSort, ProductType, VatMode};
use crate::auth::Scope;
use crate::clock::Timestamp;
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::{PriceId, ProductId};
use crate::lane::Lane;
use crate::list::{ListQuery, Page};
use crate::money::Money;
use crate::store::Store;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const CREATE: Lane = Lane::Write;
    pub const GET: Lane = Lane::Read;
    pub const LIST: Lane = Lane::Read;
    pub const UPDATE: Lane = Lane::Write;
    pub const DELETE: Lane = Lane::Write;
    pub const ADD_PRICE: Lane = Lane::Write;
    pub const UPDATE_PRICE: Lane = Lane::Write;
    pub const DELETE_PRICE: Lane = Lane::Write;
}

fn check_not_frozen(p: &Product) -> Result<()> {
    if p.used_in_finalized_invoice {
        return Err(Error::rule(
            Code::PRODUCT_USED_IN_FINALIZED_INVOICE,
            format!("Product '{}' is used by a finalized invoice", p.id),
        ));
    }
    Ok(())
}

/// Makes `inputs` the active prices: a currency already priced is updated in place, a new one is
/// added, and a currency no longer listed is deactivated (kept for the invoices that used it).
fn apply_prices(p: &mut Product, inputs: Vec<PriceInput>, now: Timestamp) {
    for price in p.prices.iter_mut() {
        if price.is_active && !inputs.iter().any(|i| i.amount.currency() == price.currency()) {
            price.is_active = false;
            price.updated_at = Some(now);
        }
    }
    for i in inputs {
        match p.prices.iter_mut().find(|x| x.is_active && x.currency() == i.amount.currency()) {
            Some(existing) => {
                if existing.amount != i.amount || existing.vat_mode != i.vat_mode {
                    existing.amount = i.amount;
                    existing.vat_mode = i.vat_mode;
                    existing.updated_at = Some(now);
                }
            }
            None => p.prices.push(ProductPrice {
                id: PriceId::new(),
                product_id: p.id,
                amount: i.amount,
                vat_mode: i.vat_mode,
                is_active: true,
                created_at: now,
                updated_at: None,
            }),
        }
    }
}

crate::service!(
    /// Products and their prices: create, get, list, update, delete, add_price, update_price,
    /// delete_price. Each is one transaction.
    Products
);

impl<S: Store> Products<'_, S> {
    pub fn create(&self, scope: &Scope, f: ProductFields) -> Result<Product> {
        let now = self.now(scope);
        let initial = f.initial_prices();
        let product_type = f
            .product_type
            .ok_or_else(|| Error::invalid(FieldError::body("missing", "type", "Field required")))?;
        let mut p = Product {
            id: ProductId::new(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            name: f.name.ok_or_else(|| Error::invalid(FieldError::body("missing", "name", "Field required")))?,
            description: f.description,
            product_type,
            recurring_interval: f.recurring_interval,
            recurring_interval_count: f.recurring_interval_count.unwrap_or(1),
            is_active: f.is_active.unwrap_or(true),
            external_metadata: f.external_metadata.unwrap_or_default(),
            prices: vec![],
            used_in_finalized_invoice: false,
            is_deleted: false,
            created_at: now,
            updated_at: None,
        };
        apply_prices(&mut p, initial, now);
        self.store.write(|tx| {
            tx.insert_product(&p, scope.org.settings.default_currency)?;
            Ok(p.clone())
        })
    }

    pub fn get(&self, scope: &Scope, id: ProductId) -> Result<Product> {
        // A product and its prices: two statements, so an ordinary read (not `read_found`).
        self.store
            .read(|tx| Ok(tx.product(scope.branch_id(), id)?))?
            .ok_or_else(|| crate::error::Error::not_found("Product", id))
    }

    pub fn list(&self, scope: &Scope, q: &ListQuery<ProductSort>, f: &ProductFilter) -> Result<Page<Product>> {
        self.store.read(|tx| Ok(tx.list_products(scope.branch_id(), q, f)?))
    }

    /// Applies `change` to a live product of the request's branch, unless a finalised invoice
    /// froze it.
    fn change(&self, scope: &Scope, id: ProductId, change: impl Fn(&mut Product, Timestamp) -> Result<()>) -> Result<Product> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut p = tx.product(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Product", id))?;
            check_not_frozen(&p)?;
            change(&mut p, now)?;
            p.updated_at = Some(now);
            tx.update_product(&p, scope.org.settings.default_currency)?;
            Ok(p)
        })
    }

    pub fn update(&self, scope: &Scope, id: ProductId, f: ProductFields) -> Result<Product> {
        self.change(scope, id, |p, now| {
            let f = f.clone();
            let full_set = f.prices.is_some().then(|| f.initial_prices());
            if let Some(n) = f.name {
                p.name = n;
            }
            if f.description.is_some() {
                p.description = f.description;
            }
            if let Some(t) = f.product_type {
                p.product_type = t;
                if t == ProductType::OneOff {
                    p.recurring_interval = None;
                }
            }
            if f.recurring_interval.is_some() {
                p.recurring_interval = f.recurring_interval;
            }
            if let Some(c) = f.recurring_interval_count {
                p.recurring_interval_count = c;
            }
            if p.product_type == ProductType::Recurring && p.recurring_interval.is_none() {
                return Err(Error::invalid(FieldError::body(
                    "missing",
                    "recurring_interval",
                    "Field required for RECURRING products",
                )));
            }
            if let Some(a) = f.is_active {
                p.is_active = a;
            }
            if let Some(m) = f.external_metadata {
                p.external_metadata = m;
            }
            // `prices` replaces the whole set; `price` alone changes only the default currency's.
            match (full_set, &f.price) {
                (Some(set), _) => apply_prices(p, set, now),
                (None, Some(one)) => {
                    let mut set: Vec<PriceInput> = p
                        .prices
                        .iter()
                        .filter(|x| x.is_active && x.currency() != one.amount.currency())
                        .map(|x| PriceInput {
                            amount: x.amount,
                            vat_mode: x.vat_mode,
                        })
                        .collect();
                    set.insert(0, one.clone());
                    apply_prices(p, set, now);
                }
                (None, None) => {}
            }
            Ok(())
        })
    }

    pub fn delete(&self, scope: &Scope, id: ProductId) -> Result<()> {
        self.change(scope, id, |p, _| {
            p.is_deleted = true;
            Ok(())
        })
        .map(|_| ())
    }

    /// Adds a price in a currency the product has no active price in.
    pub fn add_price(&self, scope: &Scope, id: ProductId, input: PriceInput) -> Result<(Product, PriceId)> {
        let mut new_id = None;
        let p = self.change(scope, id, |p, now| {
            if p.active_price(input.amount.currency()).is_some() {
                return Err(Error::rule(
                    Code::RESOURCE_ALREADY_EXISTS,
                    format!("Product already has an active price in {}", input.amount.currency()),
                ));
            }
            let price = ProductPrice {
                id: PriceId::new(),
                product_id: p.id,
                amount: input.amount,
                vat_mode: input.vat_mode,
                is_active: true,
                created_at: now,
                updated_at: None,
            };
            p.prices.push(price);
            Ok(())
        })?;
        if let Some(last) = p.prices.last() {
            new_id = Some(last.id);
        }
        Ok((p.clone(), new_id.expect("price added")))
    }

    pub fn update_price(&self, scope: &Scope, id: ProductId, price_id: PriceId, u: PriceUpdate) -> Result<Product> {
        self.change(scope, id, |p, now| {
            let price = p
                .prices
                .iter_mut()
                .find(|x| x.id == price_id && x.is_active)
                .ok_or_else(|| Error::not_found("Price", price_id))?;
            if let Some(a) = u.amount {
                let currency = price.currency();
                price.amount = Money::checked(a, currency).map_err(|e| {
                    let (kind, msg) = crate::wire::amount_problem(e, currency);
                    Error::invalid(FieldError::body(kind, "amount", msg))
                })?;
            }
            price.vat_mode = match (u.exempt, u.inclusive) {
                (Some(true), _) => VatMode::Exempt,
                (_, Some(true)) => VatMode::Inclusive,
                (_, Some(false)) => VatMode::Exclusive,
                (Some(false), None) if price.vat_mode.is_exempt() => VatMode::Inclusive,
                _ => price.vat_mode,
            };
            price.updated_at = Some(now);
            Ok(())
        })
    }

    pub fn delete_price(&self, scope: &Scope, id: ProductId, price_id: PriceId) -> Result<Product> {
        self.change(scope, id, |p, now| {
            let price = p
                .prices
                .iter_mut()
                .find(|x| x.id == price_id && x.is_active)
                .ok_or_else(|| Error::not_found("Price", price_id))?;
            price.is_active = false;
            price.updated_at = Some(now);
            Ok(())
        })
    }
}
