//! Cases on the `Tx` contract itself.

use super::{Harness, World};
use crate::store::Store;

pub fn org_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let org = w.billing.store.read(|tx| Ok(tx.org(w.admin.org_id())?)).unwrap().unwrap();
    assert_eq!(org, w.boot.org);
}

pub fn missing_rows_are_none<H: Harness>() {
    let w = World::new(H::store());
    w.billing
        .store
        .read(|tx| {
            assert!(tx.org(crate::ids::OrgId::new())?.is_none());
            assert!(tx.consumer(w.admin.branch_id(), crate::ids::ConsumerId::new())?.is_none());
            assert!(tx.product(w.admin.branch_id(), crate::ids::ProductId::new())?.is_none());
            assert!(tx.coupon(w.admin.branch_id(), crate::ids::CouponId::new())?.is_none());
            assert!(tx.api_key_by_key("ak_nope")?.is_none());
            Ok(())
        })
        .unwrap();
}
