//! Coupon operations. A coupon that a finalised invoice uses is frozen.

use super::{check_not_frozen, discount, Coupon, CouponFields, CouponFilter, CouponSort};
use crate::auth::Scope;
use crate::error::{Error, FieldError, Result};
use crate::ids::CouponId;
use crate::lane::Lane;
use crate::list::{ListQuery, Page};
use crate::store::Store;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const CREATE: Lane = Lane::Write;
    pub const GET: Lane = Lane::Read;
    pub const LIST: Lane = Lane::Read;
    pub const UPDATE: Lane = Lane::Write;
    pub const DELETE: Lane = Lane::Write;
}

crate::service!(
    /// Coupons: create, get, list, update, delete. Each is one transaction.
    Coupons
);

impl<S: Store> Coupons<'_, S> {
    pub fn create(&self, scope: &Scope, f: CouponFields) -> Result<Coupon> {
        let now = self.now(scope);
        let value = f
            .discount_value
            .ok_or_else(|| Error::invalid(FieldError::body("missing", "discount_value", "Field required")))?;
        let c = Coupon {
            id: CouponId::new(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            name: f.name.ok_or_else(|| Error::invalid(FieldError::body("missing", "name", "Field required")))?,
            discount: discount(value, f.is_percentage.unwrap_or(false), f.currency)?,
            is_active: f.is_active.unwrap_or(true),
            used_in_finalized_invoice: false,
            redemptions: 0,
            is_deleted: false,
            created_at: now,
            updated_at: None,
        };
        self.store.write(|tx| {
            tx.insert_coupon(&c)?;
            Ok(c.clone())
        })
    }

    pub fn get(&self, scope: &Scope, id: CouponId) -> Result<Coupon> {
        self.read_found("Coupon", id, |tx| tx.coupon(scope.branch_id(), id))
    }

    pub fn list(&self, scope: &Scope, q: &ListQuery<CouponSort>, f: &CouponFilter) -> Result<Page<Coupon>> {
        self.store.read(|tx| Ok(tx.list_coupons(scope.branch_id(), q, f)?))
    }

    pub fn update(&self, scope: &Scope, id: CouponId, f: CouponFields) -> Result<Coupon> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut c = tx.coupon(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Coupon", id))?;
            check_not_frozen(&c)?;
            if let Some(n) = &f.name {
                c.name = n.clone();
            }
            if f.discount_value.is_some() || f.is_percentage.is_some() || f.currency.is_some() {
                let value = f.discount_value.unwrap_or(c.discount.value());
                let pct = f.is_percentage.unwrap_or(c.discount.is_percentage());
                let cur = f.currency.or(c.discount.currency());
                c.discount = discount(value, pct, cur)?;
            }
            if let Some(a) = f.is_active {
                c.is_active = a;
            }
            c.updated_at = Some(now);
            tx.update_coupon(&c)?;
            Ok(c)
        })
    }

    pub fn delete(&self, scope: &Scope, id: CouponId) -> Result<()> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut c = tx.coupon(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Coupon", id))?;
            // Like products: what a finalised invoice used stays as it was.
            check_not_frozen(&c)?;
            c.is_deleted = true;
            c.updated_at = Some(now);
            tx.update_coupon(&c)?;
            Ok(())
        })
    }
}
