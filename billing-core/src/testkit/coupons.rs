//! Coupon cases: percentage and fixed discounts, list filters and sorts, updates, the freeze
//! once a finalised invoice uses a coupon, and delete.

use super::{expect_code, expect_invalid, money, Harness, World};
use crate::auth::Scope;
use crate::coupon::{parse_coupon_list, Coupon, CouponFields, CouponSort, Discount};
use crate::error::{Code, Error, Result};
use crate::ids::CouponId;
use crate::list::{Page, QueryParams};
use crate::money::Currency;
use crate::store::Store;
use serde_json::{json, Value};

fn try_create<S: Store>(w: &World<S>, s: &Scope, v: Value) -> Result<Coupon> {
    w.billing.coupons().create(s, CouponFields::parse(&v, true)?)
}

fn create<S: Store>(w: &World<S>, s: &Scope, v: Value) -> Coupon {
    try_create(w, s, v.clone()).unwrap_or_else(|e| panic!("create coupon {v}: {e:?}"))
}

fn update<S: Store>(w: &World<S>, s: &Scope, id: CouponId, v: Value) -> Result<Coupon> {
    w.billing.coupons().update(s, id, CouponFields::parse(&v, false)?)
}

fn list<S: Store>(w: &World<S>, s: &Scope, query: &str) -> Page<Coupon> {
    let (q, f) = parse_coupon_list(&QueryParams::parse(query)).unwrap_or_else(|e| panic!("bad query {query}: {e:?}"));
    w.billing.coupons().list(s, &q, &f).expect("list coupons")
}

fn ids(p: &Page<Coupon>) -> Vec<CouponId> {
    p.items.iter().map(|x| x.id).collect()
}

pub fn create_percentage_and_fixed<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let pct = create(&w, s, json!({"name": "Summer", "discount_value": "12.5", "is_percentage": true}));
    assert_eq!(pct.discount, Discount::Percentage("12.5".parse().unwrap()));
    assert_eq!(pct.discount.display_value(), "12.50");
    assert!(pct.is_active && !pct.used_in_finalized_invoice && !pct.is_deleted);
    assert_eq!((pct.redemptions, pct.created_at, pct.updated_at), (0, w.now(), None));
    assert_eq!((pct.branch_id, pct.org_id), (w.boot.branch.id, w.boot.org.id));
    let kwd = create(&w, s, json!({"name": "Dinar", "discount_value": "1.25", "currency": "KWD"}));
    assert_eq!(kwd.discount, Discount::Fixed(money("1.250", Currency::KWD)));
    let jpy = create(&w, s, json!({"name": "Yen", "discount_value": 500, "currency": "JPY", "is_active": false}));
    let full = create(&w, s, json!({"name": "Free", "discount_value": 100, "is_percentage": true}));
    for (c, shown) in [(&pct, "12.50"), (&kwd, "1.250"), (&jpy, "500"), (&full, "100.00")] {
        let got = w.billing.coupons().get(s, c.id).unwrap();
        assert_eq!(&got, c);
        assert_eq!(got.discount.display_value(), shown);
        assert_eq!(serde_json::to_value(got.detailed()).unwrap(), serde_json::to_value(c.detailed()).unwrap());
    }
    assert!(!w.billing.coupons().get(s, jpy.id).unwrap().is_active);
    assert_eq!(list(&w, s, "").total, 4);
}

pub fn invalid_coupons_are_not_created<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    expect_invalid(
        try_create(&w, s, json!({"name": "Zero", "discount_value": 0, "is_percentage": true})),
        "discount_value",
    );
    expect_invalid(
        try_create(&w, s, json!({"name": "Over", "discount_value": "100.01", "is_percentage": true})),
        "discount_value",
    );
    expect_invalid(
        try_create(&w, s, json!({"name": "Precise", "discount_value": "12.345", "is_percentage": true})),
        "discount_value",
    );
    expect_invalid(try_create(&w, s, json!({"name": "No currency", "discount_value": 5})), "currency");
    expect_invalid(
        try_create(&w, s, json!({"name": "Halala", "discount_value": "1.001", "currency": "SAR"})),
        "discount_value",
    );
    expect_invalid(
        try_create(&w, s, json!({"name": "Negative", "discount_value": -1, "currency": "SAR"})),
        "discount_value",
    );
    expect_invalid(try_create(&w, s, json!({"discount_value": 5, "currency": "SAR"})), "name");
    assert_eq!(list(&w, s, "").total, 0, "nothing created");
}

pub fn list_filters_and_search<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let mk = |v: Value| {
        w.tick(1);
        create(&w, s, v).id
    };
    let c1 = mk(json!({"name": "Summer Sale", "discount_value": 10, "is_percentage": true}));
    let c2 = mk(json!({"name": "Winter sale", "discount_value": 5, "currency": "SAR"}));
    let c3 = mk(json!({"name": "Spring", "discount_value": 20, "is_percentage": true, "is_active": false}));
    let c4 = mk(json!({"name": "summer_2", "discount_value": 1, "currency": "KWD", "is_active": false}));
    let cases: &[(&str, Vec<CouponId>)] = &[
        ("", vec![c1, c2, c3, c4]),
        ("active=true", vec![c1, c2]),
        ("active=false", vec![c3, c4]),
        ("is_percentage=true", vec![c1, c3]),
        ("is_percentage=false", vec![c2, c4]),
        ("active=true&is_percentage=false", vec![c2]),
        ("active=false&is_percentage=true", vec![c3]),
        ("search_term=summer", vec![c1, c4]),
        ("search_term=SALE", vec![c1, c2]),
        ("search_term=_", vec![c4]),
        ("search_term=%25", vec![]),
        ("search_term=summer&is_percentage=true", vec![c1]),
        ("search_term=autumn", vec![]),
    ];
    for (query, want) in cases {
        let got = list(&w, s, &format!("{query}&sort_direction=asc"));
        assert_eq!(&ids(&got), want, "{query}");
        assert_eq!(got.total, want.len() as u64, "total for {query}");
    }
    let paged = list(&w, s, "active=true&limit=1&page=2&sort_direction=asc");
    assert_eq!((ids(&paged), paged.total), (vec![c2], 2));
}

pub fn list_sorts_with_id_tie_break<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let a = create(&w, s, json!({"name": "Bravo", "discount_value": 10, "is_percentage": true}));
    let b = create(&w, s, json!({"name": "Alpha", "discount_value": "10.00", "currency": "SAR"}));
    w.tick(1);
    let c = create(&w, s, json!({"name": "Charlie", "discount_value": "5.5", "is_percentage": true}));
    let d = create(&w, s, json!({"name": "Alpha", "discount_value": "0.25", "currency": "KWD"}));
    w.tick(1);
    let e = create(&w, s, json!({"name": "Delta", "discount_value": 20000, "currency": "JPY"}));
    // updated_at: C, then A and E together, then B, then D.
    for (group, coupons) in [(1, vec![&c]), (2, vec![&a, &e]), (3, vec![&b]), (4, vec![&d])] {
        w.tick(group);
        for x in coupons {
            update(&w, s, x.id, json!({"is_active": true})).unwrap();
        }
    }
    let all: Vec<Coupon> = [&a, &b, &c, &d, &e].iter().map(|x| w.billing.coupons().get(s, x.id).unwrap()).collect();
    for sort in CouponSort::ALL {
        let key = |x: &Coupon| -> String {
            match sort {
                CouponSort::CreatedAt => format!("{:020}", x.created_at.timestamp_micros()),
                CouponSort::UpdatedAt => {
                    format!("{:020}", x.updated_at.expect("updated").timestamp_micros())
                }
                CouponSort::Name => x.name.clone(),
                CouponSort::DiscountValue => {
                    format!("{:020}", crate::money::stored(x.discount.value()).unwrap())
                }
            }
        };
        let mut asc: Vec<&Coupon> = all.iter().collect();
        asc.sort_by(|x, y| key(x).cmp(&key(y)).then(x.id.cmp(&y.id)));
        let asc: Vec<CouponId> = asc.into_iter().map(|x| x.id).collect();
        let mut desc = asc.clone();
        desc.reverse();
        for (dir, want) in [("asc", &asc), ("desc", &desc)] {
            let got = list(&w, s, &format!("sort_field={}&sort_direction={dir}", sort.as_str()));
            assert_eq!(
                &ids(&got),
                want,
                "sort_field={} sort_direction={dir} (ties broken by id in the same direction)",
                sort.as_str()
            );
            let mut paged = vec![];
            for page in 1..=3 {
                paged.extend(ids(&list(
                    &w,
                    s,
                    &format!("sort_field={}&sort_direction={dir}&limit=2&page={page}", sort.as_str()),
                )));
            }
            assert_eq!(&paged, want, "paged sort_field={} sort_direction={dir}", sort.as_str());
        }
    }
    let by_value = list(&w, s, "sort_field=discount_value&sort_direction=asc");
    assert_eq!(
        (by_value.items[0].id, by_value.items[1].id, by_value.items[4].id),
        (d.id, c.id, e.id),
        "discount values compare as numbers"
    );
}

pub fn update_coupon<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = create(&w, s, json!({"name": "Ten", "discount_value": 10, "is_percentage": true}));
    let other = create(&w, s, json!({"name": "Other", "discount_value": 1, "currency": "SAR"}));
    w.tick(7);
    let u = update(&w, s, c.id, json!({"name": "Fifteen", "discount_value": 15})).unwrap();
    assert_eq!(
        (u.name.as_str(), u.discount, u.updated_at, u.created_at),
        ("Fifteen", Discount::Percentage(15.into()), Some(w.now()), c.created_at)
    );
    assert_eq!(w.billing.coupons().get(s, c.id).unwrap(), u);
    let fixed = update(&w, s, c.id, json!({"is_percentage": false, "currency": "SAR", "discount_value": "7.5"})).unwrap();
    assert_eq!(fixed.discount, Discount::Fixed(money("7.50", Currency::SAR)));
    assert_eq!(w.billing.coupons().get(s, c.id).unwrap(), fixed);
    let pct = update(&w, s, c.id, json!({"is_percentage": true})).unwrap();
    assert_eq!(pct.discount.display_value(), "7.50");
    assert_eq!(w.billing.coupons().get(s, c.id).unwrap(), pct);

    expect_invalid(update(&w, s, c.id, json!({"discount_value": 150})), "discount_value");
    expect_invalid(update(&w, s, c.id, json!({"is_percentage": false})), "currency");
    assert_eq!(w.billing.coupons().get(s, c.id).unwrap(), pct, "refused updates change nothing");
    let off = update(&w, s, c.id, json!({"is_active": false})).unwrap();
    assert!(!off.is_active);
    assert_eq!(ids(&list(&w, s, "active=false")), vec![c.id]);
    expect_code(update(&w, s, CouponId::new(), json!({"name": "x"})), Code::NOT_FOUND);
    assert_eq!(w.billing.coupons().get(s, other.id).unwrap(), other);
}

pub fn frozen_coupon_refuses_update<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let branch = w.boot.branch.id;
    let c = create(&w, s, json!({"name": "Used", "discount_value": 10, "is_percentage": true}));
    w.write(|tx| {
        let mut stored = tx.coupon(branch, c.id)?.expect("coupon");
        stored.used_in_finalized_invoice = true;
        tx.update_coupon(&stored)
    });
    let before = w.billing.coupons().get(s, c.id).unwrap();
    assert!(before.used_in_finalized_invoice);
    w.tick(3);
    expect_code(update(&w, s, c.id, json!({"name": "Changed"})), Code::COUPON_USED_IN_FINALIZED_INVOICE);
    expect_code(update(&w, s, c.id, json!({"is_active": false})), Code::COUPON_USED_IN_FINALIZED_INVOICE);
    expect_code(update(&w, s, c.id, json!({"discount_value": 20})), Code::COUPON_USED_IN_FINALIZED_INVOICE);
    assert_eq!(w.billing.coupons().get(s, c.id).unwrap(), before, "nothing changed");
}

pub fn delete_coupon<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = create(&w, s, json!({"name": "Doomed", "discount_value": 10, "is_percentage": true}));
    let k = create(&w, s, json!({"name": "Kept", "discount_value": 10, "is_percentage": true}));
    w.billing.coupons().delete(s, c.id).unwrap();
    expect_code(w.billing.coupons().get(s, c.id), Code::NOT_FOUND);
    assert_eq!(w.read(|tx| tx.coupon(w.boot.branch.id, c.id)), None);
    let l = list(&w, s, "");
    assert_eq!((ids(&l), l.total), (vec![k.id], 1));
    assert_eq!(list(&w, s, "search_term=doomed").total, 0);
    expect_code(update(&w, s, c.id, json!({"name": "Back"})), Code::NOT_FOUND);
    expect_code(w.billing.coupons().delete(s, c.id), Code::NOT_FOUND);
    expect_code(w.billing.coupons().delete(s, CouponId::new()), Code::NOT_FOUND);
    assert_eq!(w.billing.coupons().get(s, k.id).unwrap(), k);
}

pub fn coupon_branch_isolation<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let sb = w.in_branch(b.id);
    let theirs = create(&w, &sb, json!({"name": "Theirs", "discount_value": 10, "is_percentage": true}));
    let s = &w.admin;
    expect_code(w.billing.coupons().get(s, theirs.id), Code::NOT_FOUND);
    expect_code(update(&w, s, theirs.id, json!({"name": "Mine"})), Code::NOT_FOUND);
    expect_code(w.billing.coupons().delete(s, theirs.id), Code::NOT_FOUND);
    for query in ["", "search_term=theirs", "is_percentage=true"] {
        assert_eq!(list(&w, s, query).total, 0, "branch B's coupon leaked into branch A with '{query}'");
    }
    assert_eq!(w.billing.coupons().get(&sb, theirs.id).unwrap(), theirs);
}

pub fn accepted_discounts_are_stored_exactly<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    for (currency, value) in [("KWD", "999999999.999"), ("SAR", "10000000000000000"), ("JPY", "100000000000000000000")] {
        let Ok(f) = CouponFields::parse(&json!({"name": "Big", "discount_value": value, "currency": currency}), true) else {
            continue;
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.billing.coupons().create(s, f)));
        let c = match r {
            Ok(Ok(c)) => c,
            Ok(Err(Error::Validation(_))) => continue,
            Ok(Err(e)) => panic!("{value} {currency} accepted by the parser but not stored: {e:?}"),
            Err(_) => panic!("create_coupon with {value} {currency} panicked: the parser accepts amounts the store cannot represent"),
        };
        assert_eq!(w.billing.coupons().get(s, c.id).unwrap(), c);
    }
}

pub fn never_updated_coupons_sort_first_ascending<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let a = create(&w, s, json!({"name": "A", "discount_value": 1, "is_percentage": true})).id;
    let b = create(&w, s, json!({"name": "B", "discount_value": 1, "is_percentage": true})).id;
    let touched = create(&w, s, json!({"name": "C", "discount_value": 1, "is_percentage": true})).id;
    w.tick(1);
    update(&w, s, touched, json!({"name": "C2"})).unwrap();
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    assert_eq!(
        ids(&list(&w, s, "sort_field=updated_at&sort_direction=asc")),
        vec![lo, hi, touched],
        "never updated sorts first ascending"
    );
    assert_eq!(
        ids(&list(&w, s, "sort_field=updated_at&sort_direction=desc")),
        vec![touched, hi, lo],
        "and last descending"
    );
}

pub fn search_folds_non_ascii_case<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let c = create(&w, s, json!({"name": "ÉTÉ Soldes", "discount_value": 10, "is_percentage": true})).id;
    for term in ["été", "é", "ÉTÉ", "soldes"] {
        let query = format!("search_term={}", term.bytes().map(|b| format!("%{b:02X}")).collect::<String>());
        assert_eq!(ids(&list(&w, s, &query)), vec![c], "search_term={term} (case-insensitive beyond ASCII)");
    }
}
