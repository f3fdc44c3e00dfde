//! PostgreSQL-specific behaviour beyond the conformance suite: constraint names, savepoints,
//! rollback, retries of conflicting writes, list details and the temporary databases. Like the
//! suite, these print SKIPPED unless `BILLING_TEST_DATABASE_URL` names a server.

use billing_core::branch::Branch;
use billing_core::clock::parse_datetime;
use billing_core::consumer::{CommunicationMethod, Consumer, ConsumerFilter, ConsumerSort, ConsumerType};
use billing_core::coupon::{Coupon, CouponFilter, CouponSort, Discount};
use billing_core::error::{constraint, Error, StoreError};
use billing_core::fields::{Email, Language, PhoneNumber};
use billing_core::ids::{BranchId, ConsumerId, CouponId, OrgId, PriceId, ProductId};
use billing_core::list::{Direction, ListQuery};
use billing_core::money::{Currency, Money};
use billing_core::org::{OrgSettings, Organization};
use billing_core::product::{Product, ProductFilter, ProductPrice, ProductSort, ProductType, VatMode};
use billing_core::store::Store;
use billing_store_postgres::{testing, PgStore};
use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

fn store() -> Option<PgStore> {
    if testing::server_url().is_none() {
        eprintln!("SKIPPED: {} is not set", testing::DATABASE_URL_ENV);
        return None;
    }
    Some(testing::temp_store().expect("a temporary database"))
}

/// [`store`], with the address of its database (for a connection of the test's own).
fn store_and_url() -> Option<(PgStore, String)> {
    let Some(server) = testing::server_url() else {
        eprintln!("SKIPPED: {} is not set", testing::DATABASE_URL_ENV);
        return None;
    };
    let db = testing::TempDatabase::create(&server).expect("a temporary database");
    let url = db.url().to_string();
    Some((PgStore::open_temp(db).expect("a store"), url))
}

fn t(s: &str) -> billing_core::clock::Timestamp {
    parse_datetime(s).unwrap()
}

fn org() -> Organization {
    Organization {
        id: OrgId::new(),
        name: "Org".into(),
        name_en: None,
        sandbox: true,
        settings: OrgSettings::default(),
        clock_offset_us: 0,
        clock_advancing_to: None,
        created_at: t("2026-01-15T09:00:00.123456Z"),
    }
}

/// An organization with one branch, written.
fn seed(s: &PgStore) -> (Organization, Branch) {
    let o = org();
    let b = Branch::new(o.id, "Main", t("2026-01-15T09:00:00Z"));
    s.write(|tx| {
        tx.insert_org(&o)?;
        tx.insert_branch(&b)?;
        Ok(())
    })
    .unwrap();
    (o, b)
}

fn consumer(o: &Organization, b: &Branch, name: &str) -> Consumer {
    Consumer {
        id: ConsumerId::new(),
        org_id: o.id,
        branch_id: b.id,
        name: name.into(),
        phone_number: None,
        email: None,
        external_id: None,
        iban: None,
        alias: None,
        comment: None,
        preferred_language: Language::En,
        communication_methods: vec![CommunicationMethod::Email, CommunicationMethod::Sms],
        consumer_type: ConsumerType::Individual,
        address: None,
        vat_number: None,
        commercial_registration: None,
        external_metadata: serde_json::Map::new(),
        is_deleted: false,
        created_at: t("2026-01-15T10:00:00.000001Z"),
        updated_at: None,
    }
}

fn unique_name<T: std::fmt::Debug>(r: billing_core::Result<T>) -> String {
    match r {
        Err(Error::Store(StoreError::UniqueViolation(name))) => name,
        other => panic!("expected a unique violation, got {other:?}"),
    }
}

#[test]
fn rows_round_trip_with_microseconds_and_exact_money() {
    let Some(s) = store() else { return };
    let (o, b) = seed(&s);
    let mut c = consumer(&o, &b, "Sara");
    c.phone_number = Some(PhoneNumber::parse("+966501234567").unwrap());
    c.email = Some(Email::parse("Sara@Example.com").unwrap());
    c.external_metadata = json!({"plan": "gold", "seats": 3, "nested": {"a": [1, 2.5, null]}})
        .as_object()
        .unwrap()
        .clone();
    c.updated_at = Some(t("2026-01-15T10:00:00.999999Z"));
    let p = Product {
        id: ProductId::new(),
        org_id: o.id,
        branch_id: b.id,
        name: "Plan".into(),
        description: Some("d".into()),
        product_type: ProductType::OneOff,
        recurring_interval: None,
        recurring_interval_count: 1,
        is_active: true,
        external_metadata: serde_json::Map::new(),
        prices: vec![],
        used_in_finalized_invoice: false,
        is_deleted: false,
        created_at: t("2026-01-15T10:00:00.5Z"),
        updated_at: None,
    };
    let mut p = p;
    for (amount, cur) in [("1.250", Currency::KWD), ("99.99", Currency::SAR), ("500", Currency::JPY)] {
        p.prices.push(ProductPrice {
            id: PriceId::new(),
            product_id: p.id,
            amount: Money::exact(amount.parse().unwrap(), cur).unwrap(),
            vat_mode: VatMode::Exclusive,
            is_active: true,
            created_at: p.created_at,
            updated_at: None,
        });
    }
    let pct = Coupon {
        id: CouponId::new(),
        org_id: o.id,
        branch_id: b.id,
        name: "pct".into(),
        discount: Discount::Percentage("12.5".parse().unwrap()),
        is_active: true,
        used_in_finalized_invoice: false,
        redemptions: 0,
        is_deleted: false,
        created_at: t("2026-01-15T10:00:00Z"),
        updated_at: None,
    };
    s.write(|tx| {
        tx.insert_consumer(&c)?;
        tx.insert_product(&p, Currency::SAR)?;
        tx.insert_coupon(&pct)?;
        Ok(())
    })
    .unwrap();
    s.read(|tx| {
        assert_eq!(tx.org(o.id)?.unwrap(), o);
        assert_eq!(tx.consumer(b.id, c.id)?.unwrap(), c);
        assert_eq!(tx.product(b.id, p.id)?.unwrap(), p);
        let got = tx.coupon(b.id, pct.id)?.unwrap();
        assert_eq!(got.discount.display_value(), "12.50");
        assert_eq!(got, pct);
        // Another branch's rows are missing.
        assert!(tx.consumer(BranchId::new(), c.id)?.is_none());
        Ok(())
    })
    .unwrap();
}

/// Every constraint name the core tells apart is a constraint or index of the schema.
#[test]
fn the_constraints_the_core_tells_apart_are_in_the_schema() {
    let Some((_s, url)) = store_and_url() else { return };
    use diesel::prelude::*;
    #[derive(QueryableByName)]
    struct Name {
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
    }
    let mut conn = PgConnection::establish(&url).unwrap();
    let names: Vec<String> = diesel::sql_query("SELECT conname::text AS name FROM pg_constraint UNION SELECT relname::text FROM pg_class WHERE relkind = 'i'")
        .load::<Name>(&mut conn)
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    for name in constraint::ALL {
        assert!(names.iter().any(|n| n == name), "the schema has no constraint or index {name}");
    }
}

#[test]
fn unique_violations_name_the_constraint_and_leave_the_transaction_usable() {
    let Some(s) = store() else { return };
    let (o, b) = seed(&s);
    // Same id.
    assert_eq!(unique_name(s.write(|tx| Ok(tx.insert_org(&o)?))), constraint::ORGANIZATIONS_PKEY);
    // Live branch names, trimmed and case-insensitive.
    let dup = Branch::new(o.id, "  MAIN ", t("2026-01-15T09:00:01Z"));
    assert_eq!(unique_name(s.write(|tx| Ok(tx.insert_branch(&dup)?))), constraint::BRANCHES_ORG_NAME);
    // Consumers: phone and lower-cased e-mail among live consumers.
    let mut a = consumer(&o, &b, "A");
    a.phone_number = Some(PhoneNumber::parse("+966501234567").unwrap());
    a.email = Some(Email::parse("a@example.com").unwrap());
    s.write(|tx| Ok(tx.insert_consumer(&a)?)).unwrap();
    let mut same_phone = consumer(&o, &b, "B");
    same_phone.phone_number = a.phone_number.clone();
    assert_eq!(
        unique_name(s.write(|tx| Ok(tx.insert_consumer(&same_phone)?))),
        constraint::CONSUMERS_BRANCH_PHONE
    );
    let mut same_email = consumer(&o, &b, "C");
    same_email.email = Some(Email::parse("A@EXAMPLE.COM").unwrap());
    assert_eq!(
        unique_name(s.write(|tx| Ok(tx.insert_consumer(&same_email)?))),
        constraint::CONSUMERS_BRANCH_EMAIL
    );

    // A caught violation does not poison the transaction: later writes commit.
    let other = consumer(&o, &b, "D");
    s.write(|tx| {
        let e = tx.insert_consumer(&same_phone).unwrap_err();
        assert_eq!(e, StoreError::UniqueViolation(constraint::CONSUMERS_BRANCH_PHONE.into()));
        tx.insert_consumer(&other)?;
        Ok(())
    })
    .unwrap();
    assert!(s.read(|tx| Ok(tx.consumer(b.id, other.id)?)).unwrap().is_some());
    assert!(s.read(|tx| Ok(tx.consumer(b.id, same_phone.id)?)).unwrap().is_none());

    // Once deleted, the phone is free again.
    let mut gone = a.clone();
    gone.is_deleted = true;
    s.write(|tx| Ok(tx.update_consumer(&gone)?)).unwrap();
    s.write(|tx| Ok(tx.insert_consumer(&same_phone)?)).unwrap();
}

#[test]
fn a_failing_closure_rolls_back_everything() {
    let Some(s) = store() else { return };
    let (o, b) = seed(&s);
    let c = consumer(&o, &b, "Kept?");
    let r: billing_core::Result<()> = s.write(|tx| {
        tx.insert_consumer(&c)?;
        Err(Error::not_found("thing", 1))
    });
    assert!(r.is_err());
    assert!(s.read(|tx| Ok(tx.consumer(b.id, c.id)?)).unwrap().is_none());
}

#[test]
fn reads_cannot_write() {
    let Some(s) = store() else { return };
    let o = org();
    let r = s.read(|tx| Ok(tx.insert_org(&o)?));
    assert!(matches!(r, Err(Error::Store(StoreError::Backend { .. }))), "{r:?}");
}

#[test]
fn conflicting_writes_are_retried_until_they_serialize() {
    let Some(s) = store() else { return };
    let (o, _) = seed(&s);
    let s = Arc::new(s);
    let attempts = Arc::new(AtomicU32::new(0));
    let per_thread = 15;
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            let attempts = attempts.clone();
            std::thread::spawn(move || {
                for _ in 0..per_thread {
                    s.write(|tx| {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        let mut org = tx.org(o.id)?.unwrap();
                        std::thread::sleep(std::time::Duration::from_millis(1));
                        org.clock_offset_us += 1;
                        tx.update_org(&org)?;
                        Ok(())
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let org = s.read(|tx| Ok(tx.org(o.id)?)).unwrap().unwrap();
    assert_eq!(org.clock_offset_us, 4 * per_thread, "no increment may be lost");
    assert!(
        attempts.load(Ordering::Relaxed) > 4 * per_thread as u32,
        "some attempts conflicted and were retried"
    );
}

#[test]
fn consumer_lists_search_filter_sort_and_count() {
    let Some(s) = store() else { return };
    let (o, b) = seed(&s);
    let mut all = Vec::new();
    for (i, (name, email, meta)) in [
        ("alpha 50% off", Some("x@example.com"), json!({"plan": "gold", "seats": 3})),
        ("Beta_user", None, json!({"plan": "silver"})),
        ("gamma", Some("ALPHA@example.com"), json!({"plan": "gold", "vip": true})),
        ("delta", None, json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        let mut c = consumer(&o, &b, name);
        c.email = email.map(|e| Email::parse(e).unwrap());
        c.external_metadata = meta.as_object().unwrap().clone();
        c.created_at = t("2026-01-15T10:00:00Z") + chrono::Duration::seconds(i as i64);
        all.push(c);
    }
    let mut deleted = consumer(&o, &b, "alpha deleted");
    deleted.is_deleted = true;
    s.write(|tx| {
        for c in all.iter().chain([&deleted]) {
            tx.insert_consumer(c)?;
        }
        Ok(())
    })
    .unwrap();
    let list = |search: Option<&str>, sort: ConsumerSort, dir: Direction, metadata: Vec<(&str, &str)>, page: u32, limit: u32| {
        let q = ListQuery {
            page,
            limit,
            sort,
            direction: dir,
            search: search.map(str::to_string),
        };
        let f = ConsumerFilter {
            external_id: None,
            metadata: metadata.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        };
        let p = s.read(|tx| Ok(tx.list_consumers(b.id, &q, &f)?)).unwrap();
        (p.items.iter().map(|c| c.name.clone()).collect::<Vec<_>>(), p.total)
    };
    // Case-insensitive substring of name or e-mail; deleted consumers never listed.
    assert_eq!(
        list(Some("ALPHA"), ConsumerSort::Name, Direction::Asc, vec![], 1, 10),
        (vec!["alpha 50% off".into(), "gamma".into()], 2)
    );
    // Case folding is Unicode's, not only ASCII's.
    let mut elise = consumer(&o, &b, "ÉLISE");
    elise.is_deleted = true;
    s.write(|tx| {
        Ok(tx.insert_consumer(&Consumer {
            is_deleted: false,
            ..elise.clone()
        })?)
    })
    .unwrap();
    assert_eq!(
        list(Some("élise"), ConsumerSort::Name, Direction::Asc, vec![], 1, 10).0,
        vec!["ÉLISE".to_string()]
    );
    s.write(|tx| Ok(tx.update_consumer(&elise)?)).unwrap();
    // Wildcards in the term match themselves.
    assert_eq!(list(Some("50%"), ConsumerSort::Name, Direction::Asc, vec![], 1, 10).1, 1);
    assert_eq!(
        list(Some("a_u"), ConsumerSort::Name, Direction::Asc, vec![], 1, 10).0,
        vec!["Beta_user".to_string()]
    );
    assert_eq!(list(Some("%"), ConsumerSort::Name, Direction::Asc, vec![], 1, 10).1, 1);
    // Metadata: exact match on the value's text, all pairs.
    assert_eq!(list(None, ConsumerSort::Name, Direction::Asc, vec![("plan", "gold")], 1, 10).1, 2);
    assert_eq!(
        list(None, ConsumerSort::Name, Direction::Asc, vec![("plan", "gold"), ("seats", "3")], 1, 10).0,
        vec!["alpha 50% off".to_string()]
    );
    assert_eq!(
        list(None, ConsumerSort::Name, Direction::Asc, vec![("vip", "true")], 1, 10).0,
        vec!["gamma".to_string()]
    );
    assert_eq!(list(None, ConsumerSort::Name, Direction::Asc, vec![("plan", "GOLD")], 1, 10).1, 0);
    // Byte order (upper case first); NULL first ascending, last descending.
    assert_eq!(
        list(None, ConsumerSort::Name, Direction::Asc, vec![], 1, 10).0,
        vec!["Beta_user", "alpha 50% off", "delta", "gamma"]
    );
    let by_email = list(None, ConsumerSort::Email, Direction::Asc, vec![], 1, 10).0;
    assert_eq!(by_email, vec!["Beta_user", "delta", "gamma", "alpha 50% off"]);
    let by_email_desc = list(None, ConsumerSort::Email, Direction::Desc, vec![], 1, 10).0;
    assert_eq!(by_email_desc, vec!["alpha 50% off", "gamma", "delta", "Beta_user"]);
    // Pages and the total across pages.
    assert_eq!(
        list(None, ConsumerSort::CreatedAt, Direction::Desc, vec![], 2, 3),
        (vec!["alpha 50% off".into()], 4)
    );
    assert_eq!(list(None, ConsumerSort::CreatedAt, Direction::Desc, vec![], 3, 3), (vec![], 4));
}

#[test]
fn product_and_coupon_lists() {
    let Some(s) = store() else { return };
    let (o, b) = seed(&s);
    let mk = |name: &str, prices: &[(&str, Currency, bool)], i: i64| {
        let mut p = Product {
            id: ProductId::new(),
            org_id: o.id,
            branch_id: b.id,
            name: name.into(),
            description: None,
            product_type: ProductType::OneOff,
            recurring_interval: None,
            recurring_interval_count: 1,
            is_active: true,
            external_metadata: serde_json::Map::new(),
            prices: vec![],
            used_in_finalized_invoice: false,
            is_deleted: false,
            created_at: t("2026-01-15T10:00:00Z") + chrono::Duration::seconds(i),
            updated_at: None,
        };
        for (amount, cur, active) in prices {
            p.prices.push(ProductPrice {
                id: PriceId::new(),
                product_id: p.id,
                amount: Money::exact(amount.parse().unwrap(), *cur).unwrap(),
                vat_mode: VatMode::Inclusive,
                is_active: *active,
                created_at: p.created_at,
                updated_at: None,
            });
        }
        p
    };
    let cheap = mk("cheap", &[("5", Currency::SAR, true)], 0);
    let dear = mk("dear", &[("50", Currency::SAR, true), ("9", Currency::USD, true)], 1);
    let usd_only = mk("usd only", &[("20", Currency::USD, true), ("1", Currency::SAR, false)], 2);
    let free = mk("free", &[], 3);
    s.write(|tx| {
        for p in [&cheap, &dear, &usd_only, &free] {
            tx.insert_product(p, Currency::SAR)?;
        }
        Ok(())
    })
    .unwrap();
    let names = |sort: ProductSort, dir: Direction, currency: Option<&str>| {
        let q = ListQuery {
            page: 1,
            limit: 10,
            sort,
            direction: dir,
            search: None,
        };
        let f = ProductFilter {
            currency: currency.map(str::to_string),
            ..ProductFilter::default()
        };
        let p = s.read(|tx| Ok(tx.list_products(b.id, &q, &f)?)).unwrap();
        p.items.iter().map(|p| p.name.clone()).collect::<Vec<_>>()
    };
    // Sorted by the primary price (default currency, else first active), NULL first.
    assert_eq!(names(ProductSort::Price, Direction::Asc, None), vec!["free", "cheap", "usd only", "dear"]);
    assert_eq!(names(ProductSort::Price, Direction::Desc, None), vec!["dear", "usd only", "cheap", "free"]);
    // Only products with an active price in the currency.
    assert_eq!(names(ProductSort::CreatedAt, Direction::Asc, Some("SAR")), vec!["cheap", "dear"]);
    assert_eq!(names(ProductSort::CreatedAt, Direction::Asc, Some("XYZ")), Vec::<String>::new());
    // Listed products carry all their prices.
    let q = ListQuery {
        page: 1,
        limit: 10,
        sort: ProductSort::CreatedAt,
        direction: Direction::Asc,
        search: Some("USD".into()),
    };
    let listed = s.read(|tx| Ok(tx.list_products(b.id, &q, &ProductFilter::default())?)).unwrap();
    assert_eq!(listed.items, vec![usd_only.clone()]);

    // Replacing a currency's active price in one update.
    let mut changed = dear.clone();
    changed.prices[0].is_active = false;
    changed.prices.push(ProductPrice {
        id: PriceId::new(),
        is_active: true,
        ..dear.prices[0].clone()
    });
    changed.prices.last_mut().unwrap().amount = Money::exact("1".parse().unwrap(), Currency::SAR).unwrap();
    s.write(|tx| Ok(tx.update_product(&changed, Currency::SAR)?)).unwrap();
    assert_eq!(s.read(|tx| Ok(tx.product(b.id, dear.id)?)).unwrap().unwrap(), changed);
    assert_eq!(names(ProductSort::Price, Direction::Asc, None), vec!["free", "dear", "cheap", "usd only"]);

    // Coupons: updated_at sorts NULL first; redemptions are not written by update.
    let coupon = |name: &str, updated: Option<&str>| Coupon {
        id: CouponId::new(),
        org_id: o.id,
        branch_id: b.id,
        name: name.into(),
        discount: Discount::Fixed(Money::exact("10".parse().unwrap(), Currency::SAR).unwrap()),
        is_active: true,
        used_in_finalized_invoice: false,
        redemptions: 2,
        is_deleted: false,
        created_at: t("2026-01-15T10:00:00Z"),
        updated_at: updated.map(t),
    };
    let c1 = coupon("one", Some("2026-01-16T00:00:00Z"));
    let c2 = coupon("two", None);
    let c3 = coupon("three", Some("2026-01-15T12:00:00Z"));
    s.write(|tx| {
        for c in [&c1, &c2, &c3] {
            tx.insert_coupon(c)?;
        }
        Ok(())
    })
    .unwrap();
    let q = ListQuery {
        page: 1,
        limit: 10,
        sort: CouponSort::UpdatedAt,
        direction: Direction::Asc,
        search: None,
    };
    let listed = s.read(|tx| Ok(tx.list_coupons(b.id, &q, &CouponFilter::default())?)).unwrap();
    assert_eq!(listed.items.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), vec!["two", "three", "one"]);
    let mut edited = c1.clone();
    edited.redemptions = 99;
    edited.name = "uno".into();
    s.write(|tx| Ok(tx.update_coupon(&edited)?)).unwrap();
    let got = s.read(|tx| Ok(tx.coupon(b.id, c1.id)?)).unwrap().unwrap();
    assert_eq!((got.name.as_str(), got.redemptions), ("uno", 2));
}

#[test]
fn a_temporary_database_is_dropped_with_its_store() {
    let Some(url) = testing::server_url() else {
        eprintln!("SKIPPED: {} is not set", testing::DATABASE_URL_ENV);
        return;
    };
    let db = testing::TempDatabase::create(&url).unwrap();
    let name = db.name().to_string();
    let s = PgStore::open_temp(db).unwrap();
    seed(&s);
    let exists = |name: &str| {
        use diesel::prelude::*;
        use diesel::sql_types::{Bool, Text};
        let mut admin = PgConnection::establish(&url).unwrap();
        let q = diesel::dsl::sql::<Bool>("EXISTS (SELECT 1 FROM pg_database WHERE datname = ")
            .bind::<Text, _>(name.to_string())
            .sql(")");
        diesel::select(q).get_result::<bool>(&mut admin).unwrap()
    };
    assert!(exists(&name));
    drop(s);
    assert!(!exists(&name));
}

#[test]
fn deadlocks_are_retried() {
    let Some(s) = store() else { return };
    let (a, _) = seed(&s);
    let (b, _) = seed(&s);
    let barrier = std::sync::Barrier::new(2);
    let attempts = AtomicU32::new(0);
    std::thread::scope(|scope| {
        for (first, second) in [(a.id, b.id), (b.id, a.id)] {
            let (s, barrier, attempts) = (&s, &barrier, &attempts);
            scope.spawn(move || {
                let mut tries = 0;
                s.write(|tx| {
                    tries += 1;
                    attempts.fetch_add(1, Ordering::Relaxed);
                    let mut x = tx.org(first)?.unwrap();
                    x.clock_offset_us += 1;
                    tx.update_org(&x)?;
                    if tries == 1 {
                        // Both hold one row lock and now want the other's: a deadlock.
                        barrier.wait();
                    }
                    let mut y = tx.org(second)?.unwrap();
                    y.clock_offset_us += 1;
                    tx.update_org(&y)?;
                    Ok(())
                })
                .unwrap();
            });
        }
    });
    assert!(attempts.load(Ordering::Relaxed) > 2, "one of the two was retried");
    let total: i64 = s
        .read(|tx| Ok(tx.org(a.id)?.unwrap().clock_offset_us + tx.org(b.id)?.unwrap().clock_offset_us))
        .unwrap();
    assert_eq!(total, 4, "both transactions committed once");
}

/// Concurrent creations in one fresh branch (sequential phones and e-mails, the worst case for
/// index-page conflicts under SERIALIZABLE) all succeed: the duplicate check reads only the
/// unique indexes' keys, and conflicts that remain are retried.
#[test]
fn concurrent_consumer_creations_in_one_branch_all_commit() {
    let Some(server) = testing::server_url() else {
        eprintln!("SKIPPED: {} is not set", testing::DATABASE_URL_ENV);
        return;
    };
    // Only one attempt more than the shared-gate ones: the last runs alone (the exclusive write
    // gate), so it cannot lose, and every creation commits however contended.
    let db = testing::TempDatabase::create(&server).unwrap();
    let options = billing_store_postgres::PgStoreOptions {
        max_connections: 8,
        min_idle: 0,
        max_write_attempts: billing_store_postgres::EXCLUSIVE_AFTER + 1,
        ..Default::default()
    };
    let s = PgStore::connect_with(db.url(), options).unwrap();
    let (o, b) = seed(&s);
    let threads = 8;
    let per_thread = 150;
    let failures = AtomicU32::new(0);
    let attempts = AtomicU32::new(0);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (s, o, b, failures, attempts) = (&s, &o, &b, &failures, &attempts);
            scope.spawn(move || {
                for i in 0..per_thread {
                    let n = t * per_thread + i;
                    let mut c = consumer(o, b, &format!("c{n}"));
                    c.phone_number = Some(PhoneNumber::parse(&format!("+9665{:08}", 10_000_000 + n)).unwrap());
                    c.email = Some(Email::parse(&format!("user{n}@example.com")).unwrap());
                    let r = s.write(|tx| {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        let email = c.email.as_ref().map(|e| e.normalized());
                        assert!(tx
                            .consumer_conflict(b.id, c.phone_number.as_ref().map(|p| p.as_str()), email.as_deref(), c.id)?
                            .is_none());
                        Ok(tx.insert_consumer(&c)?)
                    });
                    if r.is_err() {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    eprintln!("{} attempts for {} creations", attempts.load(Ordering::Relaxed), threads * per_thread);
    assert_eq!(failures.load(Ordering::Relaxed), 0, "every creation commits");
    let q = ListQuery {
        page: 1,
        limit: 1,
        sort: ConsumerSort::CreatedAt,
        direction: Direction::Asc,
        search: None,
    };
    let total = s.read(|tx| Ok(tx.list_consumers(b.id, &q, &ConsumerFilter::default())?.total)).unwrap();
    assert_eq!(total, (threads * per_thread) as u64);
}

/// Pooled connections are not tested with a query at every checkout; one that broke while idle
/// (here: its server process is terminated, as in a server restart) fails its BEGIN, and the
/// store carries on with a new connection: nothing is lost and the caller sees no error.
#[test]
fn connections_broken_while_idle_are_replaced() {
    let Some(url) = testing::server_url() else {
        eprintln!("SKIPPED: {} is not set", testing::DATABASE_URL_ENV);
        return;
    };
    let db = testing::TempDatabase::create(&url).unwrap();
    let name = db.name().to_string();
    let s = PgStore::open_temp(db).unwrap();
    let (o, b) = seed(&s);
    // Several connections in the pool.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| s.read(|tx| Ok(tx.org(o.id)?)).unwrap());
        }
    });
    let terminated = {
        use diesel::prelude::*;
        use diesel::sql_types::{BigInt, Text};
        #[derive(QueryableByName)]
        struct N {
            #[diesel(sql_type = BigInt)]
            n: i64,
        }
        let mut admin = PgConnection::establish(&url).unwrap();
        diesel::sql_query("SELECT COUNT(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()")
            .bind::<Text, _>(&name)
            .get_result::<N>(&mut admin)
            .unwrap()
            .n
    };
    assert!(terminated >= 1, "the pool had idle connections to break");
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(s.read(|tx| Ok(tx.org(o.id)?)).unwrap().map(|x| x.id), Some(o.id));
    let c = consumer(&o, &b, "After the restart");
    s.write(|tx| Ok(tx.insert_consumer(&c)?)).unwrap();
    assert_eq!(
        s.read(|tx| Ok(tx.consumer(b.id, c.id)?)).unwrap().map(|x| x.name),
        Some("After the restart".to_string())
    );
}

/// Each store folds case under its own collation: a second store on the same server that is
/// pinned to "C" (which folds no accents) must not change what the first one finds, nor take
/// the first one's choice. The collation was once a process-wide value set by the first store.
#[test]
fn each_store_searches_under_its_own_collation() {
    use billing_core::invoice::{InvoiceFilter, InvoiceSort};
    use billing_core::list::ListQuery;
    use billing_core::testkit::{invoices as fixtures, World};
    let Some(server) = testing::server_url() else {
        eprintln!("SKIPPED: {} is not set", testing::DATABASE_URL_ENV);
        return;
    };
    let db = testing::TempDatabase::create(&server).unwrap();
    let url = db.url().to_string();
    let pinned = |name| billing_store_postgres::PgStoreOptions {
        max_connections: 2,
        min_idle: 0,
        search_collation: Some(name),
        ..Default::default()
    };
    // The pinned store opens first, so a process-wide choice would be "C" for both.
    let c_store = PgStore::connect_with(&url, pinned("C")).unwrap();
    let w = World::new(PgStore::open_temp(db).unwrap());
    let s = &w.admin;
    let c = fixtures::consumer(&w, s, false);
    let p = fixtures::product(&w, s, "10.00", json!({}));
    let mut body = fixtures::invoice_body(c.id, &[(p.id, 1)], &[]);
    body["description"] = json!("Élan vital");
    let inv = fixtures::create(&w, s, body);

    let mut q = ListQuery::new(InvoiceSort::CreatedAt);
    q.search = Some("élan".into());
    let found = |store: &PgStore| -> Vec<_> {
        store
            .read(|tx| Ok(tx.list_invoices(inv.branch_id, &q, &InvoiceFilter::default())?))
            .unwrap()
            .items
            .into_iter()
            .map(|i| i.id)
            .collect()
    };
    assert_eq!(found(&w.billing.engine().store), vec![inv.id], "the automatic collation folds É to é");
    assert_eq!(found(&c_store), vec![], "\"C\" folds ASCII only");

    let unknown = PgStore::connect_with(&url, pinned("no-such-collation")).unwrap_err();
    assert!(unknown.to_string().contains("no-such-collation"), "{unknown}");
    drop(c_store);
}

/// Waits up to two seconds for `cond`.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while std::time::Instant::now() < until {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    cond()
}

#[test]
fn auth_changes_reach_every_store_on_the_database() {
    let Some(server) = testing::server_url() else {
        eprintln!("SKIPPED: {} is not set", testing::DATABASE_URL_ENV);
        return;
    };
    // Two stores on one database stand for two processes.
    let db = testing::TempDatabase::create(&server).unwrap();
    let a = PgStore::connect(db.url()).unwrap();
    let b = PgStore::connect(db.url()).unwrap();
    assert!(
        eventually(|| a.auth_generation().is_some() && b.auth_generation().is_some()),
        "both feeds listen"
    );
    let (o, br) = seed(&a);
    let (ga, gb) = (a.auth_generation().unwrap(), b.auth_generation());
    assert!(eventually(|| b.auth_generation() != gb), "b hears of a's new organization");

    // What authentication does not read moves nothing, here or there.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let (ga, gb) = (a.auth_generation().unwrap().max(ga), b.auth_generation());
    a.write(|tx| Ok(tx.insert_consumer(&consumer(&o, &br, "Not auth"))?)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(b.auth_generation(), gb, "a consumer is not an auth change");

    // A change made here moves this store's generation before `write` returns, and the other's
    // soon after; so does one made with plain SQL, outside any store.
    let mut renamed = o.clone();
    renamed.name = "Renamed".into();
    a.write(|tx| Ok(tx.update_org(&renamed)?)).unwrap();
    assert!(a.auth_generation().unwrap() > ga, "at once in the changing store");
    assert!(eventually(|| b.auth_generation() != gb), "b hears of the update");
    let gb = b.auth_generation();
    let mut conn = <diesel::PgConnection as diesel::Connection>::establish(db.url()).unwrap();
    diesel::RunQueryDsl::execute(diesel::sql_query("UPDATE branches SET name = 'By hand'"), &mut conn).unwrap();
    assert!(eventually(|| b.auth_generation() != gb), "b hears of a change made by hand");
    drop(conn);

    // A feed that loses its connection says so (no generation) until it is back.
    let mut admin = <diesel::PgConnection as diesel::Connection>::establish(&server).unwrap();
    let kill = format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{}' AND query LIKE 'LISTEN%'",
        db.url().rsplit('/').next().unwrap().split('?').next().unwrap()
    );
    diesel::RunQueryDsl::execute(diesel::sql_query(kill), &mut admin).unwrap();
    assert!(eventually(|| b.auth_generation().is_none()), "a lost feed gives no generation");
    assert!(eventually(|| b.auth_generation().is_some()), "and a new one once it listens again");
}

#[test]
fn lone_reads_run_without_a_transaction_but_never_mix_snapshots() {
    let Some(s) = store() else { return };
    let (o, b) = seed(&s);
    let c1 = consumer(&o, &b, "One");
    let c2 = consumer(&o, &b, "Two");
    s.write(|tx| {
        tx.insert_consumer(&c1)?;
        Ok(tx.insert_consumer(&c2)?)
    })
    .unwrap();
    // One statement: answered as it is.
    let one = s.read_one(|tx| Ok(tx.consumer(b.id, c1.id)?)).unwrap();
    assert_eq!(one.unwrap().name, "One");
    // Several: run again in a transaction, so every statement sees one snapshot; the closure
    // runs twice, and its answer is the second run's.
    let mut runs = 0;
    let both = s
        .read_one(|tx| {
            runs += 1;
            Ok((tx.consumer(b.id, c1.id)?, tx.consumer(b.id, c2.id)?))
        })
        .unwrap();
    assert_eq!(runs, 2);
    assert!(both.0.is_some() && both.1.is_some());
    // And never a write.
    let r = s.read_one(|tx| Ok(tx.insert_org(&org())?));
    assert!(matches!(r, Err(Error::Store(StoreError::Backend { .. }))), "{r:?}");
}

/// The due-work engine's batches (`write_each`) take turns through the batch lock, taken before
/// BEGIN: batches that read and write the same row all commit without one conflict (each
/// closure runs once), and the lock is free again afterwards, also after a batch whose item
/// failed (it ran twice: without and with savepoints).
#[test]
fn batches_take_turns_and_leave_the_batch_lock_free() {
    use diesel::{Connection, RunQueryDsl};
    let Some((s, url)) = store_and_url() else { return };
    let s = Arc::new(s);
    let (o, _) = seed(&s);
    let calls = Arc::new(AtomicU32::new(0));
    let (threads, batches) = (4, 5);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (s, calls) = (s.clone(), calls.clone());
            std::thread::spawn(move || {
                for _ in 0..batches {
                    let results = s.write_each(&[0u32, 1], |tx, _| {
                        calls.fetch_add(1, Ordering::Relaxed);
                        let mut org = tx.org(o.id)?.unwrap();
                        std::thread::sleep(std::time::Duration::from_millis(2));
                        org.clock_offset_us += 1;
                        tx.update_org(&org)?;
                        Ok(())
                    });
                    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let org = s.read(|tx| Ok(tx.org(o.id)?)).unwrap().unwrap();
    assert_eq!(org.clock_offset_us, 2 * threads * batches, "no increment may be lost");
    assert_eq!(calls.load(Ordering::Relaxed) as i64, 2 * threads * batches, "no batch ran twice");

    let failed = s.write_each(&[0u32, 1], |tx, k| match k {
        0 => Err(Error::Store(StoreError::backend("item 0 fails"))),
        _ => Ok(tx.org(o.id)?.is_some()),
    });
    assert_eq!(failed[1], Ok(true));
    #[derive(diesel::QueryableByName)]
    struct Free {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        free: bool,
    }
    let mut other = diesel::PgConnection::establish(&url).expect("a connection of its own");
    let got: Free = diesel::sql_query(format!("SELECT pg_try_advisory_lock({}) AS free", billing_store_postgres::BATCH_LOCK))
        .get_result(&mut other)
        .unwrap();
    assert!(got.free, "the batch lock was left held");
}

/// A batch waits for the batch lock at most its budget (`set_batch_lock_wait`; its items'
/// leases run while it waits), over all its attempts, then runs without it, beside whatever
/// holds it. Here the first pass fails on an item, so the batch runs twice: the second pass
/// finds the budget spent and does not wait again.
#[test]
fn a_batch_waits_for_the_batch_lock_a_bounded_time_in_all() {
    use diesel::{Connection, RunQueryDsl};
    let Some((s, url)) = store_and_url() else { return };
    let (o, _) = seed(&s);
    let budget = std::time::Duration::from_secs(2);
    s.set_batch_lock_wait(budget);
    assert_eq!(s.batch_lock_wait(), budget);
    let mut holder = diesel::PgConnection::establish(&url).expect("a connection of its own");
    diesel::sql_query(format!("SELECT pg_advisory_lock({})", billing_store_postgres::BATCH_LOCK))
        .execute(&mut holder)
        .unwrap();
    let runs = AtomicU32::new(0);
    let started = std::time::Instant::now();
    let results = s.write_each(&[0u32, 1], |tx, k| {
        runs.fetch_add(1, Ordering::Relaxed);
        match k {
            0 => Err(Error::Store(StoreError::backend("item 0 fails"))),
            _ => Ok(tx.org(o.id)?.is_some()),
        }
    });
    let waited = started.elapsed();
    assert_eq!(results[1], Ok(true));
    assert!(results[0].is_err());
    assert_eq!(runs.load(Ordering::Relaxed), 3, "item 0 alone in the first pass, then both with savepoints");
    assert!(waited >= budget.mul_f32(0.9), "it waited for the lock first ({waited:?})");
    assert!(waited < budget.mul_f32(1.75), "the second pass waited again ({waited:?})");
}
