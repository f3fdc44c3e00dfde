//! What the payment link views read besides the links (`PaymentLinkTx::link_products` and
//! `link_coupons`): a page's products and coupons in one go; and a page of links whole.

use super::invoices::{coupon, product};
use super::payment_links::{create, link_body};
use super::{Harness, World};
use crate::ids::{BranchId, CouponId, ProductId};
use crate::list::QueryParams;
use crate::money::Currency;
use crate::payment_link::parse_payment_link_list;
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

/// A page of links holds each link whole, its items in their order, as a link read alone.
pub fn listed_links_are_whole<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let a = product(&w, s, "10.00", json!({}));
    let b = product(&w, s, "20.00", json!({}));
    let c = product(&w, s, "30.00", json!({}));
    let links = [
        create(&w, s, link_body(&[(c.id, 1), (a.id, 2), (b.id, 3)], &[])),
        create(&w, s, link_body(&[(b.id, 1)], &[])),
        create(&w, s, link_body(&[(a.id, 4), (c.id, 5)], &[])),
    ];
    let req = parse_payment_link_list(&QueryParams::parse("limit=100&sort_direction=asc")).unwrap();
    let page = w.read(|tx| tx.list_payment_links(s.branch_id(), &req.query, &req.filter));
    assert_eq!(page.items.len(), 3);
    for l in &links {
        let alone = w.read(|tx| tx.payment_link(s.branch_id(), l.id)).unwrap();
        let listed = page.items.iter().find(|x| x.id == l.id).expect("listed");
        assert_eq!(listed, &alone);
        assert_eq!(listed, l);
    }
    assert!(w.read(|tx| tx.list_payment_links(BranchId::new(), &req.query, &req.filter)).items.is_empty());
}
