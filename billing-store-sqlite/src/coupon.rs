//! Coupons: `billing_model::coupon::CouponTx`. `redemptions` is read but written only by
//! `redeem_coupon`.

use crate::sql::*;
use billing_model::coupon::{Coupon, CouponFilter, CouponSort, CouponTx, Discount};
use billing_model::ids::{BranchId, CouponId};
use billing_model::list::{ListQuery, Page};
use billing_model::money::{self, Currency};
use billing_model::store::StoreResult;
use std::str::FromStr;

table! {
    pub Coupons in "coupons" for Coupon |c, r, at| {
        id: u(c.id) => get_id(r, at)?,
        org_id: u(c.org_id) => get_id(r, at)?,
        branch_id: u(c.branch_id) => get_id(r, at)?,
        name: s(&c.name) => r.get(at)?,
        is_percentage: b(c.discount.is_percentage()) => r.get::<_, bool>(at)?,
        discount_value: i(money::stored(c.discount.value())?) => r.get::<_, i64>(at)?,
        currency: s_opt(c.discount.currency().map(|c| c.code())) => get_parsed_opt(r, at, |s| Currency::from_str(s).ok())?,
        is_active: b(c.is_active) => r.get(at)?,
        used_in_finalized_invoice: b(c.used_in_finalized_invoice) => r.get(at)?,
        is_deleted: b(c.is_deleted) => r.get(at)?,
        created_at: t(&c.created_at) => get_ts(r, at)?,
        updated_at: t_opt(&c.updated_at) => get_ts_opt(r, at)?,
    }
    selects { "redemptions" as redemptions => r.get::<_, i64>(at)? as u64 }
    => Coupon {
        id, org_id, branch_id, name,
        discount: Discount::from_stored(is_percentage, discount_value, currency).ok_or_else(|| bad(6, "fixed coupon without currency".into()))?,
        is_active, used_in_finalized_invoice, redemptions, is_deleted, created_at, updated_at,
    }
}

impl CouponTx for SqliteTx<'_> {
    fn insert_coupon(&mut self, c: &Coupon) -> StoreResult<()> {
        self.exec(&Coupons::sql().insert, Coupons::params(c)?).map(drop)
    }

    fn coupon(&mut self, branch: BranchId, coupon: CouponId) -> StoreResult<Option<Coupon>> {
        self.one(
            sql!(
                "SELECT {} FROM coupons WHERE id = ?1 AND branch_id = ?2 AND is_deleted = 0",
                Coupons::sql().select
            ),
            vec![u(coupon), u(branch)],
            Coupons::row,
        )
    }

    fn update_coupon(&mut self, c: &Coupon) -> StoreResult<()> {
        self.update_one(&Coupons::sql().update, Coupons::params(c)?, "coupon")
    }

    fn list_coupons(&mut self, branch: BranchId, q: &ListQuery<CouponSort>, f: &CouponFilter) -> StoreResult<Page<Coupon>> {
        let mut w = Filter::new("FROM coupons WHERE branch_id = ?1 AND is_deleted = 0", vec![u(branch)]);
        if let Some(term) = &q.search {
            w.folded(&["name"], term, "");
        }
        if let Some(a) = f.active {
            w.cmp("is_active =", b(a));
        }
        if let Some(p) = f.is_percentage {
            w.cmp("is_percentage =", b(p));
        }
        let order = match q.sort {
            CouponSort::CreatedAt => "created_at",
            CouponSort::UpdatedAt => "updated_at",
            CouponSort::Name => "name",
            CouponSort::DiscountValue => "discount_value",
        };
        let paging = Paging {
            order,
            dir: q.direction,
            page: q.page,
            limit: q.limit,
        };
        self.page(sql!("SELECT {}", Coupons::sql().select), &w, paging, Coupons::row)
    }

    fn redeem_coupon(&mut self, coupon: CouponId) -> StoreResult<()> {
        self.exec("UPDATE coupons SET redemptions = redemptions + 1 WHERE id = ?1", vec![u(coupon)])
            .map(drop)
    }
}
