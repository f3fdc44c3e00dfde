//! What the payment link views read besides the links (`PaymentLinkTx::link_products` and
//! `link_coupons`): a page's products and coupons in one go.

use super::invoices::{coupon, product};
use super::{Harness, World};
use crate::ids::{BranchId, CouponId, ProductId};
use crate::money::Currency;
use serde_json::json;

/// A page's products and coupons are read in one go: the branch's live ones among the ids, the
/// products with all their prices, exactly as read one by one; deleted, unknown and other
/// branches' ids are left out.
pub fn link_products_and_coupons_read_together<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let a = product(&w, s, "10.00", json!({}));
    let b = product(&w, s, "20.00", json!({"prices": [{"currency": "USD", "amount": "6.00"}]}));
    let gone = product(&w, s, "30.00", json!({}));
    let ten = coupon(&w, s, json!({"name": "Ten", "discount_value": 10, "is_percentage": true}));
    let dropped = coupon(&w, s, json!({"name": "Five", "discount_value": 5, "is_percentage": true}));
    w.write(|tx| {
        let mut p = tx.product(s.branch_id(), gone.id)?.expect("product");
        p.is_deleted = true;
        tx.update_product(&p, Currency::SAR)?;
        let mut c = tx.coupon(s.branch_id(), dropped.id)?.expect("coupon");
        c.is_deleted = true;
        tx.update_coupon(&c)
    });
    let ids = [b.id, a.id, gone.id, ProductId::new(), a.id];
    let mut got = w.read(|tx| tx.link_products(s.branch_id(), &ids));
    got.sort_by_key(|p| p.id);
    let mut one_by_one = w.read(|tx| Ok(vec![tx.product(s.branch_id(), a.id)?.unwrap(), tx.product(s.branch_id(), b.id)?.unwrap()]));
    one_by_one.sort_by_key(|p| p.id);
    assert_eq!(got, one_by_one);
    assert_eq!(got.iter().map(|p| p.prices.len()).sum::<usize>(), 3, "every price of each product");
    let coupons = w.read(|tx| tx.link_coupons(s.branch_id(), &[dropped.id, ten.id, CouponId::new()]));
    assert_eq!(coupons, vec![w.read(|tx| tx.coupon(s.branch_id(), ten.id)).unwrap()]);
    let elsewhere = BranchId::new();
    assert!(w.read(|tx| tx.link_products(elsewhere, &ids)).is_empty());
    assert!(w.read(|tx| tx.link_coupons(elsewhere, &[ten.id])).is_empty());
    assert!(w.read(|tx| tx.link_products(s.branch_id(), &[])).is_empty());
    assert!(w.read(|tx| tx.link_coupons(s.branch_id(), &[])).is_empty());
}
