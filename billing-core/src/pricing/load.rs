//! Reading what a priced request names, inside the operation's transaction. A product or coupon
//! that is missing (or of another branch) is a 404; one that cannot be priced is refused as
//! soon as it is read (the checks of [`super::price`]), so that the first problem in request
//! order is the one reported.

use super::{check_coupon, check_product, coupon_loc, ItemRequest, Loaded};
use crate::error::{Error, Result};
use crate::ids::{BranchId, CouponId};
use crate::money::Currency;
use crate::store::Tx;

pub fn load(tx: &mut dyn Tx, branch: BranchId, items: &[ItemRequest], coupons: &[CouponId], currency: Currency) -> Result<Loaded> {
    let mut out = Loaded {
        products: Vec::with_capacity(items.len()),
        item_coupons: Vec::with_capacity(items.len()),
        coupons: Vec::with_capacity(coupons.len()),
    };
    for (i, it) in items.iter().enumerate() {
        let p = tx.product(branch, it.product_id)?.ok_or_else(|| Error::not_found("Product", it.product_id))?;
        check_product(&p, currency, i)?;
        let mut cs = Vec::with_capacity(it.coupons.len());
        for (k, id) in it.coupons.iter().enumerate() {
            let c = tx.coupon(branch, *id)?.ok_or_else(|| Error::not_found("Coupon", id))?;
            check_coupon(&c, currency, coupon_loc(Some(i), k))?;
            cs.push(c);
        }
        out.products.push(p);
        out.item_coupons.push(cs);
    }
    for (k, id) in coupons.iter().enumerate() {
        let c = tx.coupon(branch, *id)?.ok_or_else(|| Error::not_found("Coupon", id))?;
        check_coupon(&c, currency, coupon_loc(None, k))?;
        out.coupons.push(c);
    }
    Ok(out)
}
