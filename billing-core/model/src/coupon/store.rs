//! What a store offers for coupons (part of [`crate::store::Tx`]). Deleted coupons are never
//! returned.

use super::{Coupon, CouponFilter, CouponSort};
use crate::error::StoreResult;
use crate::ids::{BranchId, CouponId};
use crate::list::{ListQuery, Page};

pub trait CouponTx {
    fn insert_coupon(&mut self, c: &Coupon) -> StoreResult<()>;
    fn coupon(&mut self, branch: BranchId, id: CouponId) -> StoreResult<Option<Coupon>>;
    /// Writes every field but `redemptions`, which only [`Self::redeem_coupon`] changes.
    fn update_coupon(&mut self, c: &Coupon) -> StoreResult<()>;
    /// Search is a case-insensitive substring of the name.
    fn list_coupons(&mut self, branch: BranchId, q: &ListQuery<CouponSort>, f: &CouponFilter) -> StoreResult<Page<Coupon>>;
    /// Counts one more redemption of the coupon.
    fn redeem_coupon(&mut self, coupon: CouponId) -> StoreResult<()>;
}
