//! Product cases: prices per currency, VAT modes, list filters and sorts, price operations, and
//! the freeze once a finalised invoice uses a product.

use super::{expect_code, expect_invalid, money, Harness, World};
use crate::auth::Scope;
use crate::error::{Code, Error, Result};
use crate::ids::{PriceId, ProductId};
use crate::list::{Page, QueryParams};
use crate::money::Currency;
use crate::product::{parse_price_body, parse_price_update, parse_product_list, Product, ProductFields, ProductSort, ProductType, RecurringInterval, VatMode};
use crate::store::Store;
use serde_json::{json, Value};

pub fn product_fields(v: &Value, create: bool) -> Result<ProductFields> {
    ProductFields::parse(v, create, Currency::SAR)
}

pub fn create<S: Store>(w: &World<S>, s: &Scope, v: Value) -> Product {
    let f = product_fields(&v, true).unwrap_or_else(|e| panic!("bad product {v}: {e:?}"));
    w.billing.products().create(s, f).expect("create product")
}

fn update<S: Store>(w: &World<S>, s: &Scope, id: ProductId, v: Value) -> Result<Product> {
    let f = product_fields(&v, false).unwrap_or_else(|e| panic!("bad product update {v}: {e:?}"));
    w.billing.products().update(s, id, f)
}

fn list<S: Store>(w: &World<S>, s: &Scope, query: &str) -> Page<Product> {
    let (q, f) = parse_product_list(&QueryParams::parse(query)).unwrap_or_else(|e| panic!("bad query {query}: {e:?}"));
    w.billing.products().list(s, &q, &f).expect("list products")
}

fn ids(p: &Page<Product>) -> Vec<ProductId> {
    p.items.iter().map(|x| x.id).collect()
}

fn price_summary(p: &Product) -> Vec<(String, String, VatMode, bool)> {
    p.prices
        .iter()
        .map(|x| (x.currency().to_string(), x.amount.to_string(), x.vat_mode, x.is_active))
        .collect()
}

fn price_of(p: &Product, c: Currency) -> PriceId {
    p.active_price(c).unwrap_or_else(|| panic!("no active {c} price")).id
}

pub fn product_prices_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let f = ProductFields::parse(
        &json!({"name": "Plan", "type": "ONE_OFF", "price": "115.00", "prices": [{"currency": "KWD", "amount": "1.250", "is_price_inclusive_of_vat": false}]}),
        true,
        crate::money::Currency::SAR,
    )
    .unwrap();
    let p = w.billing.products().create(&w.admin, f).unwrap();
    assert_eq!(p.prices.len(), 2);
    let got = w.billing.products().get(&w.admin, p.id).unwrap();
    assert_eq!(got, p);
}

pub fn create_one_off_and_recurring<H: Harness>() {
    let w = World::new(H::store());
    let one = create(
        &w,
        &w.admin,
        json!({
            "name": "Setup fee", "type": "ONE_OFF", "description": "Paid once", "price": "115.00",
            "prices": [
                {"currency": "KWD", "amount": "1.250", "is_price_inclusive_of_vat": false},
                {"currency": "JPY", "amount": 500, "is_price_exempt_from_vat": true}
            ],
            "external_metadata": {"sku": "S-1"}
        }),
    );
    assert_eq!(
        (one.product_type, one.recurring_interval, one.recurring_interval_count),
        (ProductType::OneOff, None, 1)
    );
    assert_eq!(one.description.as_deref(), Some("Paid once"));
    assert!(one.is_active && !one.used_in_finalized_invoice && !one.is_deleted);
    assert_eq!((one.created_at, one.updated_at), (w.now(), None));
    assert_eq!(
        price_summary(&one),
        vec![
            ("SAR".into(), "115.00".into(), VatMode::Inclusive, true),
            ("KWD".into(), "1.250".into(), VatMode::Exclusive, true),
            ("JPY".into(), "500".into(), VatMode::Exempt, true),
        ]
    );
    let got = w.billing.products().get(&w.admin, one.id).unwrap();
    assert_eq!(got, one);
    let j = serde_json::to_value(got.view(&w.admin.org.settings)).unwrap();
    assert_eq!(
        (j["price"].clone(), j["price_excluding_vat"].clone(), j["vat_amount"].clone()),
        (json!("115.00"), json!("100.00"), json!("15.00"))
    );
    assert_eq!((j["currency"].clone(), j["amount_in_smallest_unit"].clone()), (json!("SAR"), json!(11500)));
    assert_eq!(
        (j["prices"][1]["amount"].clone(), j["prices"][1]["vat_amount"].clone()),
        (json!("1.250"), json!("0.188"))
    );
    assert_eq!(
        (
            j["prices"][2]["amount"].clone(),
            j["prices"][2]["amount_in_smallest_unit"].clone(),
            j["prices"][2]["vat_amount"].clone()
        ),
        (json!("500"), json!(500), json!("0"))
    );

    w.tick(1);
    let rec = create(
        &w,
        &w.admin,
        json!({"name": "Gold", "type": "RECURRING", "recurring_interval": "MONTH", "recurring_interval_count": 3, "price": 99}),
    );
    assert_eq!(
        (rec.product_type, rec.recurring_interval, rec.recurring_interval_count),
        (ProductType::Recurring, Some(RecurringInterval::Month), 3)
    );
    assert_eq!(price_summary(&rec), vec![("SAR".into(), "99.00".into(), VatMode::Inclusive, true)]);
    assert_eq!(w.billing.products().get(&w.admin, rec.id).unwrap(), rec);

    expect_invalid(
        product_fields(&json!({"name": "No interval", "type": "RECURRING", "price": 1}), true),
        "recurring_interval",
    );
    expect_invalid(
        product_fields(&json!({"name": "Too precise", "type": "ONE_OFF", "price": "1.001"}), true),
        "price",
    );
    expect_invalid(
        product_fields(
            &json!({"name": "Too precise", "type": "ONE_OFF", "prices": [{"currency": "KWD", "amount": "1.2505"}]}),
            true,
        ),
        "amount",
    );
    expect_invalid(
        product_fields(
            &json!({"name": "Yen", "type": "ONE_OFF", "prices": [{"currency": "JPY", "amount": "1.5"}]}),
            true,
        ),
        "amount",
    );
    let p = list(&w, &w.admin, "sort_direction=asc");
    assert_eq!((ids(&p), p.total), (vec![one.id, rec.id], 2));
    // A page carries each product's prices, in order, as reading the product alone does (a
    // store may read the page's prices together).
    for listed in &p.items {
        assert_eq!(listed, &w.billing.products().get(&w.admin, listed.id).unwrap());
    }
}

pub fn list_filters<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let mk = |v: Value| {
        w.tick(1);
        create(&w, s, v).id
    };
    let p1 = mk(json!({"name": "P1", "type": "ONE_OFF", "price": 10, "prices": [{"currency": "USD", "amount": 3}]}));
    let p2 = mk(json!({"name": "P2", "type": "RECURRING", "recurring_interval": "YEAR", "price": 20}));
    let p3 = mk(json!({"name": "P3", "type": "ONE_OFF", "is_active": false, "prices": [{"currency": "USD", "amount": 5}]}));
    let p4 = mk(json!({"name": "P4", "type": "ONE_OFF", "price": 1, "prices": [{"currency": "USD", "amount": 2}]}));
    // `prices` is the whole set: P4 loses its USD price.
    update(&w, s, p4, json!({"prices": [{"currency": "SAR", "amount": 1}]})).unwrap();
    let p5 = mk(json!({"name": "P5", "type": "ONE_OFF"}));
    let cases: &[(&str, Vec<ProductId>)] = &[
        ("", vec![p1, p2, p3, p4, p5]),
        ("active=true", vec![p1, p2, p4, p5]),
        ("active=false", vec![p3]),
        ("type=RECURRING", vec![p2]),
        ("type=ONE_OFF", vec![p1, p3, p4, p5]),
        ("currency=USD", vec![p1, p3]),
        ("currency=usd", vec![p1, p3]),
        ("currency=SAR", vec![p1, p2, p4]),
        ("currency=XYZ", vec![]),
        ("currency=KWD", vec![]),
        ("active=true&currency=USD", vec![p1]),
        ("type=ONE_OFF&active=false", vec![p3]),
        ("type=RECURRING&currency=USD", vec![]),
    ];
    for (query, want) in cases {
        let got = list(&w, s, &format!("{query}&sort_direction=asc&limit=100"));
        assert_eq!(&ids(&got), want, "{query}");
        assert_eq!(got.total, want.len() as u64, "total for {query}");
    }
    let paged = list(&w, s, "currency=USD&limit=1&page=2&sort_direction=asc");
    assert_eq!((ids(&paged), paged.total), (vec![p3], 2));
    expect_invalid(parse_product_list(&QueryParams::parse("currency=US")), "currency");
}

pub fn list_sorts_and_paging<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let a = create(&w, s, json!({"name": "Delta", "type": "ONE_OFF", "price": "10.00"}));
    let b = create(&w, s, json!({"name": "Alpha", "type": "ONE_OFF", "price": "5.00"}));
    w.tick(1);
    let c = create(&w, s, json!({"name": "Bravo", "type": "ONE_OFF", "price": "10"}));
    let d = create(
        &w,
        s,
        json!({"name": "Bravo", "type": "ONE_OFF", "prices": [{"currency": "USD", "amount": "7.00"}]}),
    );
    w.tick(1);
    let e = create(
        &w,
        s,
        json!({"name": "Echo", "type": "ONE_OFF", "price": 10, "prices": [{"currency": "KWD", "amount": "0.500"}]}),
    );
    let f = create(
        &w,
        s,
        json!({"name": "Charlie", "type": "ONE_OFF", "price": 3, "prices": [{"currency": "USD", "amount": "12.00"}]}),
    );
    let g = create(
        &w,
        s,
        json!({"name": "Foxtrot", "type": "ONE_OFF", "prices": [{"currency": "KWD", "amount": "8.000"}, {"currency": "USD", "amount": "1.00"}]}),
    );
    // F loses its SAR price: it now sorts by its first active price (USD 12.00).
    w.billing.products().delete_price(s, f.id, price_of(&f, Currency::SAR)).unwrap();
    // B's price changes after creation: it sorts by the new one.
    w.billing
        .products()
        .update_price(s, b.id, price_of(&b, Currency::SAR), parse_price_update(&json!({"amount": 50})).unwrap())
        .unwrap();
    let all: Vec<Product> = [&a, &b, &c, &d, &e, &f, &g]
        .iter()
        .map(|p| w.billing.products().get(s, p.id).unwrap())
        .collect();

    for sort in ProductSort::ALL {
        let key = |p: &Product| -> String {
            match sort {
                ProductSort::Price => format!("{:015}", p.primary_price(Currency::SAR).expect("priced").amount.to_stored().unwrap()),
                ProductSort::Name => p.name.clone(),
                ProductSort::CreatedAt => format!("{:020}", p.created_at.timestamp_micros()),
            }
        };
        let mut asc: Vec<&Product> = all.iter().collect();
        asc.sort_by(|x, y| key(x).cmp(&key(y)).then(x.id.cmp(&y.id)));
        let asc: Vec<ProductId> = asc.into_iter().map(|p| p.id).collect();
        let mut desc = asc.clone();
        desc.reverse();
        for (dir, want) in [("asc", &asc), ("desc", &desc)] {
            let got = list(&w, s, &format!("sort_field={}&sort_direction={dir}&limit=100", sort.as_str()));
            assert_eq!(
                &ids(&got),
                want,
                "sort_field={} sort_direction={dir} (ties broken by id in the same direction)",
                sort.as_str()
            );
            let mut paged = vec![];
            for page in 1..=3 {
                let p = list(&w, s, &format!("sort_field={}&sort_direction={dir}&limit=3&page={page}", sort.as_str()));
                assert_eq!((p.total, p.page, p.limit), (7, page, 3));
                paged.extend(ids(&p));
            }
            assert_eq!(&paged, want, "paged sort_field={} sort_direction={dir}", sort.as_str());
        }
    }
    // The price each product sorts by: SAR when it has an active SAR price, else its first
    // active price (D: USD 7.00, G: KWD 8.000, F: USD 12.00 after losing SAR; B: SAR 50.00).
    let by_price = list(&w, s, "sort_field=price&sort_direction=asc");
    let names: Vec<&str> = by_price.items.iter().map(|p| p.name.as_str()).collect();
    assert_eq!((names[0], names[1]), ("Bravo", "Foxtrot"));
    assert_eq!(by_price.items[0].id, d.id);
    assert_eq!((names[5], names[6]), ("Charlie", "Alpha"));
}

pub fn list_search_and_metadata<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let p1 = create(
        &w,
        s,
        json!({"name": "Gold Plan", "type": "ONE_OFF", "description": "Monthly premium", "external_metadata": {"sku": "G-1", "kind": "plan"}}),
    )
    .id;
    w.tick(1);
    let p2 = create(
        &w,
        s,
        json!({"name": "Silver", "type": "ONE_OFF", "description": "Includes GOLD support", "external_metadata": {"sku": "S-1", "kind": "plan"}}),
    )
    .id;
    w.tick(1);
    let p3 = create(
        &w,
        s,
        json!({"name": "Bronze 100%", "type": "ONE_OFF", "external_metadata": {"kind": "Plan", "tier": "3rd"}}),
    )
    .id;
    let cases: &[(&str, Vec<ProductId>)] = &[
        ("search_term=gold", vec![p1, p2]),
        ("search_term=PREMIUM", vec![p1]),
        ("search_term=bronze", vec![p3]),
        ("search_term=3rd", vec![]),
        ("search_term=G-1", vec![]),
        ("search_term=%25", vec![p3]),
        ("search_term=_", vec![]),
        ("external_metadata.kind=plan", vec![p1, p2]),
        ("external_metadata.kind=Plan", vec![p3]),
        ("external_metadata.kind=plan&external_metadata.sku=S-1", vec![p2]),
        ("external_metadata.sku=s-1", vec![]),
        ("search_term=gold&external_metadata.sku=S-1", vec![p2]),
        ("search_term=gold&active=false", vec![]),
    ];
    for (query, want) in cases {
        let got = list(&w, s, &format!("{query}&sort_direction=asc"));
        assert_eq!(&ids(&got), want, "{query}");
        assert_eq!(got.total, want.len() as u64, "total for {query}");
    }
}

pub fn update_replaces_prices<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let p = create(
        &w,
        s,
        json!({"name": "Plan", "type": "ONE_OFF", "price": 100, "prices": [{"currency": "USD", "amount": 30}]}),
    );
    let sar_id = price_of(&p, Currency::SAR);
    let usd_id = price_of(&p, Currency::USD);
    w.tick(10);
    let u = update(
        &w,
        s,
        p.id,
        json!({"prices": [{"currency": "SAR", "amount": "120", "is_price_inclusive_of_vat": false}, {"currency": "EUR", "amount": "25.5"}]}),
    )
    .unwrap();
    assert_eq!(u.updated_at, Some(w.now()));
    assert_eq!(
        price_summary(&u),
        vec![
            ("SAR".into(), "120.00".into(), VatMode::Exclusive, true),
            ("USD".into(), "30.00".into(), VatMode::Inclusive, false),
            ("EUR".into(), "25.50".into(), VatMode::Inclusive, true),
        ]
    );
    assert_eq!(u.prices[0].id, sar_id, "a currency still priced keeps its price id");
    assert_eq!(u.prices[1].id, usd_id, "a removed currency stays, inactive");
    assert_eq!(
        (u.prices[0].updated_at, u.prices[1].updated_at, u.prices[2].created_at),
        (Some(w.now()), Some(w.now()), w.now())
    );
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), u);
    assert!(
        list(&w, s, "currency=USD").items.is_empty(),
        "an inactive price does not match the currency filter"
    );
    assert_eq!(ids(&list(&w, s, "currency=EUR")), vec![p.id]);

    w.tick(10);
    let renamed = update(&w, s, p.id, json!({"name": "Plan B", "description": "now described"})).unwrap();
    assert_eq!(renamed.prices, u.prices, "an update without prices leaves them");
    assert_eq!((renamed.name.as_str(), renamed.description.as_deref()), ("Plan B", Some("now described")));
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), renamed);

    let before: Vec<Currency> = renamed.prices.iter().filter(|x| x.is_active).map(|x| x.currency()).collect();
    let only_sar = update(&w, s, p.id, json!({"price": "130.00"})).unwrap();
    let mut after: Vec<Currency> = only_sar.prices.iter().filter(|x| x.is_active).map(|x| x.currency()).collect();
    let mut expected = before.clone();
    if !expected.contains(&Currency::SAR) {
        expected.push(Currency::SAR);
    }
    expected.sort();
    after.sort();
    assert_eq!(after, expected, "`price` alone sets the default currency's price and keeps the others");
    assert_eq!(only_sar.active_price(Currency::SAR).map(|x| x.amount.to_string()), Some("130.00".into()));
    for c in before.iter().filter(|c| **c != Currency::SAR) {
        assert_eq!(only_sar.active_price(*c), renamed.active_price(*c), "{c} price untouched");
    }
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), only_sar);
    let deact = update(&w, s, p.id, json!({"is_active": false, "external_metadata": {"x": "y"}})).unwrap();
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), deact);
    assert_eq!(ids(&list(&w, s, "active=false")), vec![p.id]);
}

pub fn price_operations<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let p = create(&w, s, json!({"name": "Plan", "type": "ONE_OFF", "price": 100}));
    let other = create(&w, s, json!({"name": "Other", "type": "ONE_OFF", "price": 1}));
    w.tick(5);
    let (p2, kwd) = w
        .billing
        .products()
        .add_price(
            s,
            p.id,
            parse_price_body(&json!({"currency": "KWD", "amount": "1.250", "is_price_inclusive_of_vat": false})).unwrap(),
        )
        .unwrap();
    let added = p2.prices.iter().find(|x| x.id == kwd).expect("new price");
    assert_eq!(
        (added.amount, added.vat_mode, added.is_active, added.created_at),
        (money("1.250", Currency::KWD), VatMode::Exclusive, true, w.now())
    );
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), p2);
    expect_code(
        w.billing
            .products()
            .add_price(s, p.id, parse_price_body(&json!({"currency": "KWD", "amount": "2"})).unwrap()),
        Code::RESOURCE_ALREADY_EXISTS,
    );
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), p2, "refused add changes nothing");

    w.tick(5);
    let p3 = w
        .billing
        .products()
        .update_price(s, p.id, kwd, parse_price_update(&json!({"amount": "2.5"})).unwrap())
        .unwrap();
    let upd = p3.prices.iter().find(|x| x.id == kwd).unwrap();
    assert_eq!((upd.amount.to_string(), upd.updated_at), ("2.500".to_string(), Some(w.now())));
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), p3);
    expect_invalid(
        w.billing
            .products()
            .update_price(s, p.id, kwd, parse_price_update(&json!({"amount": "2.5005"})).unwrap()),
        "amount",
    );
    let (p4, jpy) = w
        .billing
        .products()
        .add_price(s, p.id, parse_price_body(&json!({"currency": "JPY", "amount": 500})).unwrap())
        .unwrap();
    expect_invalid(
        w.billing
            .products()
            .update_price(s, p.id, jpy, parse_price_update(&json!({"amount": "1.5"})).unwrap()),
        "amount",
    );
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), p4, "refused updates change nothing");
    let p5 = w
        .billing
        .products()
        .update_price(s, p.id, jpy, parse_price_update(&json!({"is_price_exempt_from_vat": true})).unwrap())
        .unwrap();
    assert_eq!(p5.prices.iter().find(|x| x.id == jpy).unwrap().vat_mode, VatMode::Exempt);
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), p5);
    expect_code(w.billing.products().update_price(s, p.id, PriceId::new(), Default::default()), Code::NOT_FOUND);
    expect_code(
        w.billing.products().update_price(s, p.id, price_of(&other, Currency::SAR), Default::default()),
        Code::NOT_FOUND,
    );
    expect_code(w.billing.products().delete_price(s, other.id, kwd), Code::NOT_FOUND);

    let p6 = w.billing.products().delete_price(s, p.id, kwd).unwrap();
    let gone = p6.prices.iter().find(|x| x.id == kwd).unwrap();
    assert!(!gone.is_active, "a deleted price is kept, inactive");
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), p6);
    assert!(list(&w, s, "currency=KWD").items.is_empty());
    expect_code(w.billing.products().update_price(s, p.id, kwd, Default::default()), Code::NOT_FOUND);
    expect_code(w.billing.products().delete_price(s, p.id, kwd), Code::NOT_FOUND);
    let (p7, kwd2) = w
        .billing
        .products()
        .add_price(s, p.id, parse_price_body(&json!({"currency": "KWD", "amount": "0.750"})).unwrap())
        .unwrap();
    assert_ne!(kwd2, kwd);
    assert_eq!(p7.prices.iter().filter(|x| x.currency() == Currency::KWD).count(), 2);
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), p7);
    assert_eq!(ids(&list(&w, s, "currency=KWD")), vec![p.id]);
    assert_eq!(w.billing.products().get(s, other.id).unwrap(), other, "the other product is untouched");
}

pub fn frozen_product_refuses_every_change<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let branch = w.boot.branch.id;
    let p = create(
        &w,
        s,
        json!({"name": "Used", "type": "ONE_OFF", "price": 100, "prices": [{"currency": "KWD", "amount": "1.000"}]}),
    );
    w.write(|tx| {
        let mut stored = tx.product(branch, p.id)?.expect("product");
        stored.used_in_finalized_invoice = true;
        tx.update_product(&stored, Currency::SAR)
    });
    let before = w.billing.products().get(s, p.id).unwrap();
    assert!(before.used_in_finalized_invoice);
    w.tick(5);
    let code = Code::PRODUCT_USED_IN_FINALIZED_INVOICE;
    expect_code(update(&w, s, p.id, json!({"name": "Changed"})), code);
    expect_code(update(&w, s, p.id, json!({"is_active": false})), code);
    expect_code(w.billing.products().delete(s, p.id), code);
    expect_code(
        w.billing
            .products()
            .add_price(s, p.id, parse_price_body(&json!({"currency": "USD", "amount": 1})).unwrap()),
        code,
    );
    expect_code(
        w.billing
            .products()
            .update_price(s, p.id, price_of(&p, Currency::SAR), parse_price_update(&json!({"amount": 1})).unwrap()),
        code,
    );
    expect_code(w.billing.products().delete_price(s, p.id, price_of(&p, Currency::KWD)), code);
    assert_eq!(w.billing.products().get(s, p.id).unwrap(), before, "nothing changed");
    assert_eq!(ids(&list(&w, s, "")), vec![p.id]);
}

/// `mark_products_used` sets the flag of the branch's live products named, and of nothing
/// else: not another branch's product, not a deleted one, not a product left out, and no other
/// field or price of the products it marks.
pub fn marking_products_used_changes_only_the_flag<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let branch = w.boot.branch.id;
    let other_branch = w.new_branch("Other");
    let body = json!({"name": "Plan", "type": "ONE_OFF", "price": 100, "prices": [{"currency": "KWD", "amount": "1.000"}]});
    let a = create(&w, s, body.clone());
    let left_out = create(&w, s, body.clone());
    let deleted = create(&w, s, body.clone());
    w.billing.products().delete(s, deleted.id).unwrap();
    let elsewhere = create(&w, &w.in_branch(other_branch.id), body);
    w.write(|tx| tx.mark_products_used(branch, &[a.id, deleted.id, elsewhere.id, ProductId::new()]));
    let marked = w.billing.products().get(s, a.id).unwrap();
    assert!(marked.used_in_finalized_invoice);
    assert_eq!(
        Product {
            used_in_finalized_invoice: false,
            ..marked
        },
        a,
        "only the flag changed"
    );
    assert!(!w.billing.products().get(s, left_out.id).unwrap().used_in_finalized_invoice);
    let elsewhere_now = w.read(|tx| tx.product(other_branch.id, elsewhere.id)).expect("the other branch's product");
    assert!(!elsewhere_now.used_in_finalized_invoice, "another branch's product is not marked");
    assert_eq!(w.read(|tx| tx.product(branch, deleted.id)), None, "a deleted product stays deleted");
    let mut listed = ids(&list(&w, s, ""));
    listed.sort();
    let mut live = vec![a.id, left_out.id];
    live.sort();
    assert_eq!(listed, live, "no deleted product came back");
    // Marking again changes nothing and does not fail.
    w.write(|tx| tx.mark_products_used(branch, &[a.id]));
    assert_eq!(
        w.billing.products().get(s, a.id).unwrap(),
        Product {
            used_in_finalized_invoice: true,
            ..a.clone()
        }
    );
    expect_code(update(&w, s, a.id, json!({"name": "Changed"})), Code::PRODUCT_USED_IN_FINALIZED_INVOICE);
}

pub fn deleted_product_is_gone<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let p = create(&w, s, json!({"name": "Doomed", "type": "ONE_OFF", "price": 100}));
    let q = create(&w, s, json!({"name": "Kept", "type": "ONE_OFF", "price": 100}));
    w.billing.products().delete(s, p.id).unwrap();
    expect_code(w.billing.products().get(s, p.id), Code::NOT_FOUND);
    assert_eq!(w.read(|tx| tx.product(w.boot.branch.id, p.id)), None);
    for query in ["", "currency=SAR", "active=true", "type=ONE_OFF"] {
        let l = list(&w, s, query);
        assert_eq!((ids(&l), l.total), (vec![q.id], 1), "{query}");
    }
    assert_eq!(list(&w, s, "search_term=doomed").total, 0);
    expect_code(update(&w, s, p.id, json!({"name": "Back"})), Code::NOT_FOUND);
    expect_code(w.billing.products().delete(s, p.id), Code::NOT_FOUND);
    expect_code(
        w.billing
            .products()
            .add_price(s, p.id, parse_price_body(&json!({"currency": "USD", "amount": 1})).unwrap()),
        Code::NOT_FOUND,
    );
    expect_code(w.billing.products().delete(s, ProductId::new()), Code::NOT_FOUND);
    assert_eq!(w.billing.products().get(s, q.id).unwrap(), q);
}

pub fn product_branch_isolation<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let sb = w.in_branch(b.id);
    let theirs = create(
        &w,
        &sb,
        json!({"name": "Theirs", "type": "ONE_OFF", "price": 100, "external_metadata": {"k": "v"}}),
    );
    let s = &w.admin;
    expect_code(w.billing.products().get(s, theirs.id), Code::NOT_FOUND);
    expect_code(update(&w, s, theirs.id, json!({"name": "Mine"})), Code::NOT_FOUND);
    expect_code(w.billing.products().delete(s, theirs.id), Code::NOT_FOUND);
    expect_code(
        w.billing
            .products()
            .add_price(s, theirs.id, parse_price_body(&json!({"currency": "USD", "amount": 1})).unwrap()),
        Code::NOT_FOUND,
    );
    expect_code(
        w.billing.products().delete_price(s, theirs.id, price_of(&theirs, Currency::SAR)),
        Code::NOT_FOUND,
    );
    for query in ["", "search_term=theirs", "currency=SAR", "external_metadata.k=v"] {
        assert_eq!(list(&w, s, query).total, 0, "branch B's product leaked into branch A with '{query}'");
    }
    assert_eq!(w.billing.products().get(&sb, theirs.id).unwrap(), theirs);
    assert_eq!(ids(&list(&w, &sb, "")), vec![theirs.id]);
}

/// Runs `f`, turning a panic into a failure that says what was being done.
fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{what} panicked: {msg}");
        }
    }
}

pub fn accepted_amounts_are_stored_exactly<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    for (currency, amount) in [
        ("SAR", "9999999999.99"),
        ("KWD", "999999999.999"),
        ("JPY", "99999999999"),
        ("SAR", "10000000000000000"),
        ("KWD", "9999999999999999.999"),
        ("JPY", "100000000000000000000"),
    ] {
        let body = json!({"name": "Big", "type": "ONE_OFF", "prices": [{"currency": currency, "amount": amount}]});
        // An amount the request parser accepts must be stored and read back exactly; one the
        // store cannot represent must be refused by the parser (422), never crash the store.
        let Ok(f) = product_fields(&body, true) else { continue };
        let p = no_panic(&format!("create_product with {amount} {currency}"), || w.billing.products().create(s, f))
            .unwrap_or_else(|e| panic!("{amount} {currency} accepted by the parser but not stored: {e:?}"));
        let got = no_panic(&format!("get_product with {amount} {currency}"), || w.billing.products().get(s, p.id)).unwrap();
        assert_eq!(got, p);
        assert_eq!(got.prices[0].amount.to_string(), p.prices[0].amount.to_string());
        no_panic(&format!("ProductDto of {amount} {currency}"), || {
            serde_json::to_vec(&got.view(&s.org.settings)).unwrap()
        });
    }
}

pub fn unpriced_products_sort_first_ascending<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let priced = create(&w, s, json!({"name": "Priced", "type": "ONE_OFF", "price": 1})).id;
    let a = create(&w, s, json!({"name": "Free A", "type": "ONE_OFF"})).id;
    let b = create(&w, s, json!({"name": "Free B", "type": "ONE_OFF"})).id;
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    assert_eq!(
        ids(&list(&w, s, "sort_field=price&sort_direction=asc")),
        vec![lo, hi, priced],
        "no price sorts first ascending"
    );
    assert_eq!(
        ids(&list(&w, s, "sort_field=price&sort_direction=desc")),
        vec![priced, hi, lo],
        "and last descending"
    );
}

pub fn search_folds_non_ascii_case<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let p = create(&w, s, json!({"name": "ÉCOLE Plan", "type": "ONE_OFF", "description": "Überall gültig"})).id;
    for term in ["école", "é", "ÜBERALL", "GÜLTIG", "ü"] {
        let query = format!("search_term={}", term.bytes().map(|b| format!("%{b:02X}")).collect::<String>());
        assert_eq!(ids(&list(&w, s, &query)), vec![p], "search_term={term} (case-insensitive beyond ASCII)");
    }
}

pub fn metadata_filter_matches_scalars_by_json_text<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let typed = create(
        &w,
        s,
        json!({"name": "typed", "type": "ONE_OFF", "external_metadata": {"vip": true, "seats": 5, "off": false}}),
    )
    .id;
    w.tick(1);
    let texts = create(
        &w,
        s,
        json!({"name": "texts", "type": "ONE_OFF", "external_metadata": {"vip": "yes", "seats": "05", "off": "0"}}),
    )
    .id;
    let cases: &[(&str, Vec<ProductId>)] = &[
        ("external_metadata.vip=true", vec![typed]),
        ("external_metadata.vip=1", vec![]),
        ("external_metadata.off=false", vec![typed]),
        ("external_metadata.off=0", vec![texts]),
        ("external_metadata.seats=5", vec![typed]),
        ("external_metadata.seats=05", vec![texts]),
    ];
    for (query, want) in cases {
        assert_eq!(
            &ids(&list(&w, s, &format!("{query}&sort_direction=asc"))),
            want,
            "{query}: a JSON scalar matches its JSON text"
        );
    }
}

/// A transaction may remember which products it marked used (a batch of renewals of one
/// product marks it once per renewal), but what it remembers follows its writes: a product
/// written after a mark that missed it (it did not exist yet) is marked by the next one, and an
/// item of a batch rolled back with its mark leaves the next item's mark to do.
pub fn marking_products_used_follows_the_transaction<H: Harness>() {
    let w = World::new(H::store());
    let s = &w.admin;
    let branch = w.boot.branch.id;
    let body = json!({"name": "Plan", "type": "ONE_OFF", "price": 100, "prices": [{"currency": "KWD", "amount": "1.000"}]});
    let a = create(&w, s, body.clone());
    let mut late = a.clone();
    late.id = ProductId::new();
    late.prices.clear();
    w.write(|tx| {
        tx.mark_products_used(branch, &[a.id, late.id])?;
        tx.insert_product(&late, w.boot.org.settings.default_currency)?;
        tx.mark_products_used(branch, &[a.id, late.id])
    });
    let used = |id: ProductId| w.read(|tx| tx.product(branch, id)).expect("the product").used_in_finalized_invoice;
    assert!(used(a.id) && used(late.id), "the product written after the first mark is marked by the second");

    let b = create(&w, s, body);
    let changed = Error::rule(Code::INVALID_STATUS, "item 0 changed its mind");
    let results = w.billing.engine().store.write_each(&[0u32, 1], |tx, k| {
        tx.mark_products_used(branch, &[b.id])?;
        match k {
            0 => Err(changed.clone()),
            _ => Ok(()),
        }
    });
    assert_eq!(results, vec![Err(changed), Ok(())]);
    assert!(used(b.id), "the item that was kept marked it");
}
