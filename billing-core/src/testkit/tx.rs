//! Cases on the `Tx` contract itself: exact round trips, uniqueness, scoping, and rollback.

use super::{expect_unique, money, start, ts, Harness, World};
use crate::auth::{hash_secret, ApiKey, KeyPair};
use crate::branch::Branch;
use crate::consumer::{Address, CommunicationMethod, Consumer, ConsumerFilter, ConsumerSort, ConsumerType};
use crate::coupon::{Coupon, CouponFilter, CouponSort, Discount};
use crate::error::{Code, Error};
use crate::event::{EntityType, Event, EventType};
use crate::fields::{Email, Iban, Language, PhoneNumber};
use crate::ids::{ApiKeyId, BranchId, ConsumerId, CouponId, EventId, InvitationId, NotificationId, OrgId, PriceId, ProductId, UserId};
use crate::list::ListQuery;
use crate::money::Currency;
use crate::notification::{Channel, Notification};
use crate::org::{Invitation, OrgSettings, Organization, Role, User};
use crate::product::{Product, ProductFilter, ProductPrice, ProductSort, ProductType, RecurringInterval, VatMode};
use crate::store::Store;
use crate::Tx;
use serde_json::{json, Map, Value};

pub fn phone(s: &str) -> PhoneNumber {
    PhoneNumber::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

pub fn email(s: &str) -> Email {
    Email::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

pub fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

/// A consumer row with only the required fields set.
pub fn raw_consumer(org: OrgId, branch: BranchId, name: &str) -> Consumer {
    Consumer {
        id: ConsumerId::new(),
        org_id: org,
        branch_id: branch,
        name: name.to_string(),
        phone_number: None,
        email: None,
        external_id: None,
        iban: None,
        alias: None,
        comment: None,
        preferred_language: Language::Ar,
        communication_methods: vec![],
        consumer_type: ConsumerType::Individual,
        address: None,
        vat_number: None,
        commercial_registration: None,
        external_metadata: Map::new(),
        is_deleted: false,
        created_at: start(),
        updated_at: None,
    }
}

/// A product row without prices.
pub fn raw_product(org: OrgId, branch: BranchId, name: &str) -> Product {
    Product {
        id: ProductId::new(),
        org_id: org,
        branch_id: branch,
        name: name.to_string(),
        description: None,
        product_type: ProductType::OneOff,
        recurring_interval: None,
        recurring_interval_count: 1,
        is_active: true,
        external_metadata: Map::new(),
        prices: vec![],
        used_in_finalized_invoice: false,
        is_deleted: false,
        created_at: start(),
        updated_at: None,
    }
}

pub fn raw_price(product: ProductId, amount: crate::money::Money, mode: VatMode, created_at: crate::clock::Timestamp) -> ProductPrice {
    ProductPrice {
        id: PriceId::new(),
        product_id: product,
        amount,
        vat_mode: mode,
        is_active: true,
        created_at,
        updated_at: None,
    }
}

pub fn raw_coupon(org: OrgId, branch: BranchId, name: &str, discount: Discount) -> Coupon {
    Coupon {
        id: CouponId::new(),
        org_id: org,
        branch_id: branch,
        name: name.to_string(),
        discount,
        is_active: true,
        used_in_finalized_invoice: false,
        redemptions: 0,
        is_deleted: false,
        created_at: start(),
        updated_at: None,
    }
}

pub fn raw_notification(org: OrgId, created_at: crate::clock::Timestamp) -> Notification {
    Notification {
        id: NotificationId::new(),
        org_id: org,
        branch_id: None,
        consumer_id: None,
        kind: crate::notification::Kind::OrganizationInvite,
        channel: Channel::Email,
        recipient: "someone@example.com".into(),
        language: Language::Ar,
        payload: json!({"k": "v"}),
        status: crate::notification::Status::Pending,
        attempts: vec![],
        next_attempt_at: None,
        created_at,
        updated_at: created_at,
        sent_at: None,
    }
}

pub fn raw_event(org: OrgId, branch: BranchId, id: EventId, created_at: crate::clock::Timestamp) -> Event {
    Event {
        id,
        org_id: org,
        branch_id: branch,
        event_type: EventType::InvoiceCreated,
        entity_type: EntityType::Invoice,
        entity_id: uuid::Uuid::now_v7(),
        payload: json!({"event_type": "INVOICE_CREATED", "amount": "115.00", "data": {"invoice": {"id": id.to_string()}}}),
        created_at,
    }
}

pub fn raw_user(org: OrgId, role: Role, branches: Vec<BranchId>, created_at: crate::clock::Timestamp) -> User {
    User {
        id: UserId::new(),
        org_id: org,
        email: super::unique_email("raw"),
        first_name: "Raw".into(),
        last_name: "User".into(),
        en_first_name: None,
        en_last_name: None,
        role,
        branch_ids: branches,
        created_at,
    }
}

pub fn all_consumers() -> ListQuery<ConsumerSort> {
    let mut q = ListQuery::new(ConsumerSort::CreatedAt);
    q.limit = 100;
    q
}

pub fn all_products() -> ListQuery<ProductSort> {
    let mut q = ListQuery::new(ProductSort::CreatedAt);
    q.limit = 100;
    q
}

pub fn all_coupons() -> ListQuery<CouponSort> {
    let mut q = ListQuery::new(CouponSort::CreatedAt);
    q.limit = 100;
    q
}

fn consumer_count(tx: &mut dyn Tx, branch: BranchId) -> crate::store::StoreResult<u64> {
    Ok(tx.list_consumers(branch, &all_consumers(), &ConsumerFilter::default())?.total)
}

pub fn org_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let org = w.billing.engine().store.read(|tx| Ok(tx.org(w.admin.org_id())?)).unwrap().unwrap();
    assert_eq!(org, w.boot.org);
}

pub fn org_insert_update_and_list<H: Harness>() {
    let w = World::new(H::store());
    let mut org = Organization {
        id: OrgId::new(),
        name: "Second Org".into(),
        name_en: None,
        sandbox: false,
        settings: OrgSettings {
            vat_rate: "0.05".parse().unwrap(),
            home_currency: Currency::KWD,
            default_currency: Currency::KWD,
            enabled_currencies: vec![Currency::KWD, Currency::SAR, Currency::JPY],
            ..Default::default()
        },
        clock_offset_us: 0,
        clock_advancing_to: None,
        created_at: ts("2025-12-31T23:59:59.999999Z"),
    };
    w.write(|tx| tx.insert_org(&org));
    assert_eq!(w.read(|tx| tx.org(org.id)), Some(org.clone()));

    org.name = "Second Org, renamed".into();
    org.name_en = Some("Second Org EN".into());
    org.sandbox = true;
    org.settings.vat_rate = "0.125".parse().unwrap();
    org.settings.enabled_currencies = vec![Currency::JPY];
    org.clock_offset_us = 86_400_000_001;
    org.clock_advancing_to = Some(ts("2026-02-03T04:05:06.123456Z"));
    w.write(|tx| tx.update_org(&org));
    assert_eq!(w.read(|tx| tx.org(org.id)), Some(org.clone()), "update_org round trip");
    assert_eq!(
        w.read(|tx| tx.org(w.boot.org.id)),
        Some(w.boot.org.clone()),
        "another organization is untouched"
    );

    let ids: Vec<OrgId> = w.read(|tx| tx.list_orgs()).into_iter().map(|o| o.id).collect();
    assert_eq!(ids, vec![org.id, w.boot.org.id], "list_orgs is oldest first");
    assert!(!w.billing.org().is_empty().unwrap());
}

pub fn missing_rows_are_none<H: Harness>() {
    let w = World::new(H::store());
    w.billing
        .engine()
        .store
        .read(|tx| {
            assert!(tx.org(crate::ids::OrgId::new())?.is_none());
            assert!(tx.consumer(w.admin.branch_id(), crate::ids::ConsumerId::new())?.is_none());
            assert!(tx.product(w.admin.branch_id(), crate::ids::ProductId::new())?.is_none());
            assert!(tx.coupon(w.admin.branch_id(), crate::ids::CouponId::new())?.is_none());
            assert!(tx.api_key_by_key("ak_nope")?.is_none());
            assert!(tx.user(w.admin.org_id(), UserId::new())?.is_none());
            assert!(tx.branch(w.admin.org_id(), BranchId::new())?.is_none());
            assert!(tx.branch_by_name(w.admin.org_id(), "Nowhere")?.is_none());
            assert!(tx.first_org_admin(OrgId::new())?.is_none());
            assert_eq!(tx.count_api_keys_defaulting_to(BranchId::new())?, 0);
            assert!(tx.list_notifications(w.admin.org_id())?.is_empty());
            assert!(tx.list_events(w.admin.org_id())?.is_empty());
            Ok(())
        })
        .unwrap();
}

pub fn user_round_trip_and_first_admin<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let main = w.boot.branch.id;
    let second = w.new_branch("Second");
    let other = w.other_org("Other Org", false);

    let u = User {
        id: UserId::new(),
        org_id: org,
        email: email("Nora.Saleh@Example.COM"),
        first_name: "نورة".into(),
        last_name: "Saleh".into(),
        en_first_name: None,
        en_last_name: Some("Saleh".into()),
        role: Role::BranchUser,
        // Deliberately not in id order: assignments keep the order given.
        branch_ids: vec![second.id, main],
        created_at: ts("2026-01-15T09:00:00.000001Z"),
    };
    w.write(|tx| tx.insert_user(&u));
    assert_eq!(w.read(|tx| tx.user(org, u.id)), Some(u.clone()));
    assert_eq!(w.read(|tx| tx.user(other.org.id, u.id)), None, "a user of another organization is missing");
    assert_eq!(w.read(|tx| tx.user(org, w.boot.user.id)), Some(w.boot.user.clone()));

    assert_eq!(w.read(|tx| tx.first_org_admin(org)), Some(w.boot.user.clone()));
    let later_admin = raw_user(org, Role::OrganizationAdmin, vec![main], ts("2026-02-01T00:00:00Z"));
    let earlier_branch_admin = raw_user(org, Role::BranchAdmin, vec![main], ts("2020-01-01T00:00:00Z"));
    w.write(|tx| {
        tx.insert_user(&later_admin)?;
        tx.insert_user(&earlier_branch_admin)
    });
    assert_eq!(
        w.read(|tx| tx.first_org_admin(org)),
        Some(w.boot.user.clone()),
        "oldest organization_admin, other roles ignored"
    );
    let earliest_admin = raw_user(org, Role::OrganizationAdmin, vec![], ts("2025-06-01T12:00:00.5Z"));
    w.write(|tx| tx.insert_user(&earliest_admin));
    assert_eq!(w.read(|tx| tx.first_org_admin(org)), Some(earliest_admin.clone()));
    assert_eq!(w.read(|tx| tx.first_org_admin(other.org.id)), Some(other.user.clone()), "per organization");
}

/// `api_key_context`: the key, its organization and the requested (else default) live branch of
/// that organization, whatever the backend's query.
pub fn api_key_context_joins_key_org_and_branch<H: Harness>() {
    let w = World::new(H::store());
    let b2 = w.new_branch("Second");
    let key = w.boot.api_key.key.clone();
    let (k, org, branch) = w.read(|tx| tx.api_key_context(&key, None)).expect("the key exists");
    assert_eq!(k.key, key);
    assert_eq!(org, w.boot.org);
    assert_eq!(branch.map(|b| b.id), Some(w.boot.branch.id), "no branch asked: the key's default");
    let (_, _, asked) = w.read(|tx| tx.api_key_context(&key, Some(b2.id))).unwrap();
    assert_eq!(asked.as_ref().map(|b| (b.id, b.name.as_str(), b.user_count)), Some((b2.id, "Second", 0)));
    let (_, _, unknown) = w.read(|tx| tx.api_key_context(&key, Some(crate::ids::BranchId::new()))).unwrap();
    assert!(unknown.is_none(), "a branch that does not exist");
    let other = w.other_org("Other Org", false).branch.id;
    let (_, _, foreign) = w.read(|tx| tx.api_key_context(&key, Some(other))).unwrap();
    assert!(foreign.is_none(), "another organization's branch");
    let mut retired = b2.clone();
    retired.deleted_at = Some(w.now());
    w.write(|tx| tx.update_branch(&retired));
    let (_, _, gone) = w.read(|tx| tx.api_key_context(&key, Some(b2.id))).unwrap();
    assert!(gone.is_none(), "a deleted branch");
    assert!(w.read(|tx| tx.api_key_context("ak_nope", None)).is_none());
}

pub fn api_key_round_trip_and_default_count<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let b2 = w.new_branch("Second");
    let b3 = w.new_branch("Third");
    let pair = KeyPair::generate();
    let live = ApiKey {
        id: ApiKeyId::new(),
        org_id: org,
        user_id: w.boot.user.id,
        name: "ci key".into(),
        key: pair.key.clone(),
        secret_hash: hash_secret(&pair.secret),
        branch_ids: vec![b3.id, b2.id],
        default_branch_id: b3.id,
        is_all_branches: false,
        created_at: ts("2026-01-15T09:00:00.123456Z"),
        revoked_at: None,
    };
    let pair2 = KeyPair::generate();
    let revoked = ApiKey {
        id: ApiKeyId::new(),
        key: pair2.key.clone(),
        secret_hash: hash_secret(&pair2.secret),
        branch_ids: vec![],
        default_branch_id: b2.id,
        is_all_branches: true,
        revoked_at: Some(ts("2026-01-16T00:00:00.000001Z")),
        ..live.clone()
    };
    w.write(|tx| {
        tx.insert_api_key(&live)?;
        tx.insert_api_key(&revoked)
    });
    assert_eq!(w.read(|tx| tx.api_key_by_key(&live.key)), Some(live.clone()));
    assert_eq!(
        w.read(|tx| tx.api_key_by_key(&revoked.key)),
        Some(revoked.clone()),
        "revoked keys are returned too"
    );
    assert_eq!(w.read(|tx| tx.count_api_keys_defaulting_to(b3.id)), 1);
    assert_eq!(w.read(|tx| tx.count_api_keys_defaulting_to(b2.id)), 0, "revoked keys do not count");
    assert_eq!(w.read(|tx| tx.count_api_keys_defaulting_to(w.boot.branch.id)), 1, "the bootstrap key");

    let same_key = ApiKey {
        id: ApiKeyId::new(),
        ..live.clone()
    };
    expect_unique(w.try_write(|tx| tx.insert_api_key(&same_key)));
    assert_eq!(w.read(|tx| tx.api_key_by_key(&live.key)), Some(live.clone()));
    assert_eq!(w.read(|tx| tx.count_api_keys_defaulting_to(b3.id)), 1);
}

pub fn branch_round_trip_and_retirement<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let other = w.other_org("Other Org", false);
    let mut b = Branch {
        id: BranchId::new(),
        org_id: org,
        name: "Riyadh Centre".into(),
        created_at: ts("2026-01-10T08:00:00.654321Z"),
        deleted_at: None,
        user_count: 0,
    };
    w.write(|tx| tx.insert_branch(&b));
    assert_eq!(w.read(|tx| tx.branch(org, b.id)), Some(b.clone()));
    assert_eq!(w.read(|tx| tx.branch(other.org.id, b.id)), None, "a branch of another organization is missing");
    assert_eq!(
        w.read(|tx| tx.branch_by_name(org, &Branch::name_key("  riyadh CENTRE "))).map(|x| x.id),
        Some(b.id),
        "case-insensitive, trimmed"
    );
    assert_eq!(
        w.read(|tx| tx.branch_by_name(org, &Branch::name_key("Riyadh"))),
        None,
        "whole name, not a prefix"
    );
    assert_eq!(w.read(|tx| tx.branch_by_name(other.org.id, &Branch::name_key("Riyadh Centre"))), None);
    let ids: Vec<BranchId> = w.all_branches().into_iter().map(|x| x.id).collect();
    assert_eq!(ids, vec![b.id, w.boot.branch.id], "oldest first");

    b.name = "Jeddah".into();
    w.write(|tx| tx.update_branch(&b));
    assert_eq!(w.read(|tx| tx.branch(org, b.id)), Some(b.clone()));
    assert_eq!(w.read(|tx| tx.branch_by_name(org, &Branch::name_key("Riyadh Centre"))), None);
    assert_eq!(w.read(|tx| tx.branch_by_name(org, &Branch::name_key("jeddah"))).map(|x| x.id), Some(b.id));

    b.deleted_at = Some(ts("2026-01-15T10:00:00.000007Z"));
    w.write(|tx| tx.update_branch(&b));
    assert_eq!(w.read(|tx| tx.branch(org, b.id)), None, "a deleted branch is never returned");
    assert_eq!(w.read(|tx| tx.branch_by_name(org, &Branch::name_key("Jeddah"))), None);
    let ids: Vec<BranchId> = w.all_branches().into_iter().map(|x| x.id).collect();
    assert_eq!(ids, vec![w.boot.branch.id]);
}

pub fn branch_user_count_is_derived<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let main = w.boot.branch.id;
    let b2 = w.new_branch("Second");
    let counts = |w: &World<H::S>| w.all_branches().into_iter().map(|b| (b.id, b.user_count)).collect::<Vec<_>>();
    assert_eq!(counts(&w), vec![(main, 1), (b2.id, 0)]);
    w.user(Role::BranchUser, &[main, b2.id]);
    w.user(Role::BranchAdmin, &[b2.id]);
    assert_eq!(counts(&w), vec![(main, 2), (b2.id, 2)]);
    assert_eq!(
        w.read(|tx| tx.branch(org, b2.id)).map(|b| b.user_count),
        Some(2),
        "branch() fills user_count too"
    );
    assert_eq!(w.billing.branches().get(&w.admin, b2.id).unwrap().user_count, 2);

    let mut b = w.read(|tx| tx.branch(org, b2.id)).unwrap();
    b.user_count = 99;
    b.name = "Second renamed".into();
    w.write(|tx| tx.update_branch(&b));
    let got = w.read(|tx| tx.branch(org, b2.id)).unwrap();
    assert_eq!((got.name.as_str(), got.user_count), ("Second renamed", 2), "user_count is not written");
}

pub fn branch_name_unique_constraint<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let north = Branch::new(org, "North", start());
    w.write(|tx| tx.insert_branch(&north));
    let again = Branch::new(org, "  north ", start());
    assert_eq!(expect_unique(w.try_write(|tx| tx.insert_branch(&again))), "branches_org_name_key");
    assert_eq!(w.read(|tx| tx.branch(org, again.id)), None);
    assert_eq!(w.all_branches().len(), 2);

    let other = w.other_org("Other Org", false);
    w.write(|tx| tx.insert_branch(&Branch::new(other.org.id, "North", start())));

    let mut south = Branch::new(org, "South", start());
    w.write(|tx| tx.insert_branch(&south));
    south.name = "NORTH".into();
    assert_eq!(
        expect_unique(w.try_write(|tx| tx.update_branch(&south))),
        "branches_org_name_key",
        "a rename is checked too"
    );
    assert_eq!(w.read(|tx| tx.branch(org, south.id)).map(|b| b.name), Some("South".to_string()));

    let mut retired = north.clone();
    retired.deleted_at = Some(start());
    w.write(|tx| tx.update_branch(&retired));
    let reborn = Branch::new(org, "north", start());
    w.write(|tx| tx.insert_branch(&reborn));
    assert_eq!(
        w.read(|tx| tx.branch_by_name(org, &Branch::name_key("NORTH"))).map(|b| b.id),
        Some(reborn.id),
        "a deleted branch frees its name"
    );
}

fn full_consumer(org: OrgId, branch: BranchId) -> Consumer {
    Consumer {
        id: ConsumerId::new(),
        org_id: org,
        branch_id: branch,
        name: "Sara Al-Qahtani".into(),
        phone_number: Some(phone("+966501234567")),
        email: Some(email("Sara.Q@Example.COM")),
        external_id: Some("crm-0001".into()),
        iban: Some(Iban::parse("SA0380000000608010167519").unwrap()),
        alias: Some("Sara".into()),
        comment: Some("prefers\nmornings; 'quoted' \"double\"".into()),
        preferred_language: Language::En,
        communication_methods: vec![CommunicationMethod::Sms, CommunicationMethod::Email, CommunicationMethod::WhatsApp],
        consumer_type: ConsumerType::Business,
        address: Some(Address {
            address_line_1: "King Fahd Rd 1".into(),
            address_line_2: None,
            city: "Riyadh".into(),
            postal_code: Some("12211".into()),
            country: "SA".into(),
        }),
        vat_number: Some("300000000000003".into()),
        commercial_registration: Some("1010010000".into()),
        external_metadata: object(json!({
            "plan": "gold",
            "seats": 12,
            "ratio": 0.25,
            "big": 9007199254740993u64,
            "nested": {"a": [1, "two", null, true], "b": {}},
            "unicode": "مرحبا ✓",
        })),
        is_deleted: false,
        created_at: ts("2026-01-15T09:00:00.000001Z"),
        updated_at: Some(ts("2026-01-15T09:30:00.999999Z")),
    }
}

pub fn consumer_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let mut full = full_consumer(org, main);
    let minimal = raw_consumer(org, main, "Minimal");
    w.write(|tx| {
        tx.insert_consumer(&full)?;
        tx.insert_consumer(&minimal)
    });
    let got = w.read(|tx| tx.consumer(main, full.id)).expect("full consumer");
    assert_eq!(got, full);
    assert_eq!(got.to_json(&w.boot.branch), full.to_json(&w.boot.branch));
    assert_eq!(w.read(|tx| tx.consumer(main, minimal.id)), Some(minimal.clone()), "None fields stay None");

    full.name = "Sara Q".into();
    full.phone_number = None;
    full.email = Some(email("other@example.com"));
    full.iban = None;
    full.alias = None;
    full.address = Some(Address {
        address_line_1: "A".into(),
        address_line_2: Some("B".into()),
        city: "C".into(),
        postal_code: None,
        country: "D".into(),
    });
    full.communication_methods = vec![];
    full.consumer_type = ConsumerType::Individual;
    full.preferred_language = Language::Ar;
    full.external_metadata = Map::new();
    full.is_deleted = true;
    full.updated_at = Some(ts("2026-03-01T00:00:00.000002Z"));
    w.write(|tx| tx.update_consumer(&full));
    assert_eq!(
        w.read(|tx| tx.consumer(main, full.id)),
        Some(full.clone()),
        "update round trip (deleted rows are still returned by id)"
    );
    assert_eq!(w.read(|tx| tx.consumer(main, minimal.id)), Some(minimal.clone()), "other rows untouched");
}

pub fn consumer_unique_constraints<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let b2 = w.new_branch("Second");
    let p = phone("+966501234567");

    let mut a = raw_consumer(org, main, "A");
    a.phone_number = Some(p.clone());
    a.email = Some(email("Dup@Example.com"));
    w.write(|tx| tx.insert_consumer(&a));

    let mut same_phone = raw_consumer(org, main, "B");
    same_phone.phone_number = Some(p.clone());
    assert_eq!(expect_unique(w.try_write(|tx| tx.insert_consumer(&same_phone))), "consumers_branch_phone_key");
    let mut same_email = raw_consumer(org, main, "C");
    same_email.email = Some(email("dup@example.COM"));
    assert_eq!(
        expect_unique(w.try_write(|tx| tx.insert_consumer(&same_email))),
        "consumers_branch_email_key",
        "e-mail compared in lower case"
    );
    assert_eq!(w.read(|tx| consumer_count(tx, main)), 1, "refused inserts leave nothing");
    assert_eq!(w.read(|tx| tx.consumer(main, same_phone.id)), None);

    let mut elsewhere = raw_consumer(org, b2.id, "D");
    elsewhere.phone_number = Some(p.clone());
    elsewhere.email = Some(email("dup@example.com"));
    let mut deleted = raw_consumer(org, main, "E");
    deleted.phone_number = Some(p.clone());
    deleted.email = Some(email("DUP@example.com"));
    deleted.is_deleted = true;
    let (n1, n2) = (raw_consumer(org, main, "No contact 1"), raw_consumer(org, main, "No contact 2"));
    w.write(|tx| {
        tx.insert_consumer(&elsewhere)?;
        tx.insert_consumer(&deleted)?;
        tx.insert_consumer(&n1)?;
        tx.insert_consumer(&n2)
    });
    assert_eq!(w.read(|tx| consumer_count(tx, main)), 3);

    let mut g = raw_consumer(org, main, "G");
    g.phone_number = Some(phone("+966501234568"));
    w.write(|tx| tx.insert_consumer(&g));
    let mut g2 = g.clone();
    g2.phone_number = Some(p.clone());
    assert_eq!(
        expect_unique(w.try_write(|tx| tx.update_consumer(&g2))),
        "consumers_branch_phone_key",
        "updates are checked too"
    );
    assert_eq!(w.read(|tx| tx.consumer(main, g.id)), Some(g.clone()));

    let mut a_deleted = a.clone();
    a_deleted.is_deleted = true;
    w.write(|tx| tx.update_consumer(&a_deleted));
    w.write(|tx| tx.insert_consumer(&same_phone));
    w.write(|tx| tx.insert_consumer(&same_email));
    assert_eq!(w.read(|tx| consumer_count(tx, main)), 5, "a soft-deleted consumer frees its phone and e-mail");
}

pub fn consumer_conflict_lookup<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let b2 = w.new_branch("Second");
    let mut a = raw_consumer(org, main, "A");
    a.phone_number = Some(phone("+966501234561"));
    a.email = Some(email("Alpha@Example.COM"));
    let mut b = raw_consumer(org, main, "B");
    b.phone_number = Some(phone("+966501234562"));
    let mut c = raw_consumer(org, main, "C");
    c.phone_number = Some(phone("+966501234563"));
    c.email = Some(email("charlie@example.com"));
    c.is_deleted = true;
    let mut d = raw_consumer(org, b2.id, "D");
    d.phone_number = Some(phone("+966501234564"));
    w.write(|tx| {
        for x in [&a, &b, &c, &d] {
            tx.insert_consumer(x)?;
        }
        Ok(())
    });
    let nobody = ConsumerId::new();
    let found = |ph: Option<&str>, em: Option<&str>, except: ConsumerId| w.read(|tx| tx.consumer_conflict(main, ph, em, except)).map(|x| x.id);
    assert_eq!(found(Some("+966501234561"), None, nobody), Some(a.id), "by phone");
    assert_eq!(found(None, Some("alpha@example.com"), nobody), Some(a.id), "by lower-cased e-mail");
    assert_eq!(found(Some("+966501234561"), Some("alpha@example.com"), a.id), None, "except itself");
    assert_eq!(found(Some("+966501234562"), Some("alpha@example.com"), b.id), Some(a.id), "phone or e-mail");
    assert_eq!(
        found(Some("+966501234563"), Some("charlie@example.com"), nobody),
        None,
        "deleted consumers never conflict"
    );
    assert_eq!(found(Some("+966501234564"), None, nobody), None, "other branches never conflict");
    assert_eq!(found(None, None, nobody), None);
    assert_eq!(found(Some("+966501234569"), Some("zulu@example.com"), nobody), None);
}

pub fn product_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let mut p = raw_product(org, main, "Gold plan");
    p.description = Some("Monthly gold ✓".into());
    p.product_type = ProductType::Recurring;
    p.recurring_interval = Some(RecurringInterval::Month);
    p.recurring_interval_count = 3;
    p.external_metadata = object(json!({"sku": "G-1", "tags": ["a", "b"], "n": 1.5}));
    p.created_at = ts("2026-01-15T09:00:00.000123Z");
    p.updated_at = Some(ts("2026-01-15T09:00:01.5Z"));
    let mut usd = raw_price(p.id, money("9.99", Currency::USD), VatMode::Inclusive, ts("2026-01-15T09:00:00.000001Z"));
    usd.is_active = false;
    usd.updated_at = Some(ts("2026-01-15T09:00:00.000002Z"));
    p.prices = vec![
        usd,
        raw_price(p.id, money("115.00", Currency::SAR), VatMode::Inclusive, ts("2026-01-15T09:00:00.000003Z")),
        raw_price(p.id, money("1.250", Currency::KWD), VatMode::Exclusive, ts("2026-01-15T09:00:00.000004Z")),
        raw_price(p.id, money("500", Currency::JPY), VatMode::Exempt, ts("2026-01-15T09:00:00.000005Z")),
        raw_price(p.id, money("99999999.99", Currency::EUR), VatMode::Exclusive, ts("2026-01-15T09:00:00.000006Z")),
    ];
    let bare = raw_product(org, main, "Bare");
    w.write(|tx| {
        tx.insert_product(&p, Currency::SAR)?;
        tx.insert_product(&bare, Currency::SAR)
    });
    let got = w.read(|tx| tx.product(main, p.id)).expect("product");
    assert_eq!(got, p);
    assert_eq!(
        got.to_json(&w.boot.org.settings),
        p.to_json(&w.boot.org.settings),
        "wire form: KWD 3 digits, JPY 0"
    );
    for (g, want) in got.prices.iter().zip(&p.prices) {
        assert_eq!(g.amount.to_string(), want.amount.to_string());
    }
    assert_eq!(w.read(|tx| tx.product(main, bare.id)), Some(bare.clone()));

    p.name = "Gold plan v2".into();
    p.description = None;
    p.is_active = false;
    p.used_in_finalized_invoice = true;
    p.recurring_interval = Some(RecurringInterval::Year);
    p.external_metadata = Map::new();
    p.prices[1].amount = money("120.50", Currency::SAR);
    p.prices[1].updated_at = Some(ts("2026-02-01T00:00:00.000001Z"));
    p.prices[2].is_active = false;
    p.prices.push(raw_price(
        p.id,
        money("0.001", Currency::BHD),
        VatMode::Inclusive,
        ts("2026-02-01T00:00:00.000002Z"),
    ));
    p.updated_at = Some(ts("2026-02-01T00:00:00.000003Z"));
    w.write(|tx| tx.update_product(&p, Currency::SAR));
    assert_eq!(w.read(|tx| tx.product(main, p.id)), Some(p.clone()), "update round trip, prices upserted");
    assert_eq!(w.read(|tx| tx.product(main, bare.id)), Some(bare.clone()));
}

pub fn coupon_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let pct = raw_coupon(org, main, "Summer", Discount::Percentage("12.5".parse().unwrap()));
    let mut pct2 = raw_coupon(org, main, "Third", Discount::Percentage("33.33".parse().unwrap()));
    pct2.is_active = false;
    pct2.created_at = ts("2026-01-15T09:00:00.000042Z");
    pct2.updated_at = Some(ts("2026-01-15T10:00:00.999999Z"));
    let mut kwd = raw_coupon(org, main, "Dinar off", Discount::Fixed(money("1.250", Currency::KWD)));
    kwd.used_in_finalized_invoice = true;
    let jpy = raw_coupon(org, main, "Yen off", Discount::Fixed(money("500", Currency::JPY)));
    let all = [pct.clone(), pct2.clone(), kwd.clone(), jpy.clone()];
    w.write(|tx| {
        for c in &all {
            tx.insert_coupon(c)?;
        }
        Ok(())
    });
    for c in &all {
        let got = w.read(|tx| tx.coupon(main, c.id)).expect("coupon");
        assert_eq!(got, *c);
        assert_eq!(
            serde_json::to_value(got.detailed()).unwrap(),
            serde_json::to_value(c.detailed()).unwrap(),
            "wire form of {}",
            c.name
        );
    }
    assert_eq!(w.read(|tx| tx.coupon(main, pct.id)).unwrap().discount.display_value(), "12.50");
    assert_eq!(w.read(|tx| tx.coupon(main, kwd.id)).unwrap().discount.display_value(), "1.250");
    assert_eq!(w.read(|tx| tx.coupon(main, jpy.id)).unwrap().discount.display_value(), "500");

    let mut changed = pct.clone();
    changed.name = "Summer!".into();
    changed.discount = Discount::Fixed(money("10.00", Currency::SAR));
    changed.is_active = false;
    changed.used_in_finalized_invoice = true;
    changed.updated_at = Some(ts("2026-01-20T00:00:00.000001Z"));
    changed.redemptions = 7;
    w.write(|tx| tx.update_coupon(&changed));
    let got = w.read(|tx| tx.coupon(main, pct.id)).unwrap();
    assert_eq!(got.redemptions, 0, "redemptions is derived, not written by update_coupon");
    assert_eq!(got, Coupon { redemptions: 0, ..changed });
}

pub fn notification_round_trip_and_order<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let other = w.other_org("Other Org", false);
    let n1 = raw_notification(org, ts("2026-01-15T09:00:00.000002Z"));
    let mut n2 = raw_notification(org, ts("2026-01-15T09:00:00.000001Z"));
    n2.branch_id = Some(w.boot.branch.id);
    n2.channel = Channel::Sms;
    n2.language = Language::En;
    n2.recipient = "+966501234567".into();
    n2.payload = json!({"nested": {"list": [1, 2, 3]}, "text": "مرحبا"});
    n2.sent_at = Some(ts("2026-01-15T09:00:05.123456Z"));
    let n3 = raw_notification(org, ts("2026-01-16T00:00:00Z"));
    let foreign = raw_notification(other.org.id, ts("2026-01-15T08:00:00Z"));
    w.write(|tx| {
        tx.insert_notification(&n1)?;
        tx.insert_notification(&n3)?;
        tx.insert_notification(&foreign)
    });
    w.write(|tx| tx.insert_notification(&n2));
    assert_eq!(w.notifications(), vec![n2, n1, n3], "oldest first, this organization only");
    assert_eq!(w.read(|tx| tx.list_notifications(other.org.id)), vec![foreign]);
}

pub fn events_in_write_order<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let other = w.other_org("Other Org", false);
    let ids: Vec<EventId> = (0..4).map(|_| EventId::new()).collect();
    // Written in the reverse of id order, the last with the oldest timestamp: the outbox keeps
    // write order, not id or time order.
    let first: Vec<Event> = ids[1..]
        .iter()
        .rev()
        .map(|id| raw_event(org, main, *id, ts("2026-01-15T09:00:00.000001Z")))
        .collect();
    let mut last = raw_event(org, main, ids[0], ts("2020-01-01T00:00:00Z"));
    last.event_type = EventType::PaymentSucceeded;
    last.entity_type = EntityType::Payment;
    let foreign = raw_event(other.org.id, other.branch.id, EventId::new(), start());
    w.write(|tx| {
        for e in &first {
            tx.insert_event(e)?;
        }
        tx.insert_event(&foreign)
    });
    w.write(|tx| tx.insert_event(&last));
    let mut want = first.clone();
    want.push(last);
    assert_eq!(w.read(|tx| tx.list_events(org)), want);
    assert_eq!(w.read(|tx| tx.list_events_from(org, 0)), want);
    assert_eq!(w.read(|tx| tx.list_events_from(org, 2)), want[2..].to_vec());
    assert_eq!(w.read(|tx| tx.list_events_from(org, 4)), vec![]);
    assert_eq!(w.read(|tx| tx.list_events_from(org, 9)), vec![]);
    assert_eq!(w.read(|tx| tx.list_events(other.org.id)), vec![foreign.clone()]);
    assert_eq!(w.read(|tx| tx.list_events_from(other.org.id, 0)), vec![foreign]);
}

pub fn duplicate_ids_are_unique_violations<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let branch = Branch::new(org, "Dup", start());
    let user = raw_user(org, Role::BranchUser, vec![main], start());
    let consumer = raw_consumer(org, main, "Dup");
    let mut product = raw_product(org, main, "Dup");
    product
        .prices
        .push(raw_price(product.id, money("1.00", Currency::SAR), VatMode::Inclusive, start()));
    let coupon = raw_coupon(org, main, "Dup", Discount::Percentage(10.into()));
    let notification = raw_notification(org, start());
    let event = raw_event(org, main, EventId::new(), start());
    let invitation = Invitation {
        id: InvitationId::new(),
        organization_id: org,
        email: email("invitee@example.com"),
        role: Role::BranchUser,
        branches: vec![main],
        created_by: w.boot.user.id,
        language: Language::En,
        expire_at: ts("2026-01-22T09:00:00Z"),
        created_at: start(),
        accepted_at: None,
        accepted_by: None,
    };
    let (key, _) = w.insert_key(main, None);
    w.write(|tx| {
        tx.insert_branch(&branch)?;
        tx.insert_user(&user)?;
        tx.insert_consumer(&consumer)?;
        tx.insert_product(&product, Currency::SAR)?;
        tx.insert_coupon(&coupon)?;
        tx.insert_notification(&notification)?;
        tx.insert_event(&event)?;
        tx.insert_invitation(&invitation)
    });
    expect_unique(w.try_write(|tx| tx.insert_org(&w.boot.org)));
    expect_unique(w.try_write(|tx| {
        tx.insert_branch(&Branch {
            name: "Dup id, new name".into(),
            ..branch.clone()
        })
    }));
    expect_unique(w.try_write(|tx| {
        tx.insert_user(&User {
            email: email("fresh@example.com"),
            ..user.clone()
        })
    }));
    expect_unique(w.try_write(|tx| {
        tx.insert_api_key(&ApiKey {
            key: "ak_fresh".into(),
            ..key.clone()
        })
    }));
    expect_unique(w.try_write(|tx| tx.insert_consumer(&consumer)));
    expect_unique(w.try_write(|tx| tx.insert_product(&product, Currency::SAR)));
    expect_unique(w.try_write(|tx| tx.insert_coupon(&coupon)));
    expect_unique(w.try_write(|tx| tx.insert_notification(&notification)));
    expect_unique(w.try_write(|tx| tx.insert_event(&event)));
    expect_unique(w.try_write(|tx| tx.insert_invitation(&invitation)));

    assert_eq!(w.read(|tx| tx.org(org)), Some(w.boot.org.clone()));
    assert_eq!(w.read(|tx| tx.branch(org, branch.id)).map(|b| b.name), Some("Dup".to_string()));
    assert_eq!(w.read(|tx| tx.user(org, user.id)), Some(user.clone()));
    assert_eq!(w.read(|tx| tx.api_key_by_key("ak_fresh")), None);
    assert_eq!(w.read(|tx| tx.consumer(main, consumer.id)), Some(consumer.clone()));
    assert_eq!(w.read(|tx| tx.product(main, product.id)), Some(product.clone()));
    assert_eq!(w.read(|tx| tx.coupon(main, coupon.id)), Some(coupon.clone()));
    assert_eq!(w.notifications(), vec![notification]);
    assert_eq!(w.read(|tx| tx.list_events(org)), vec![event]);
}

pub fn err_rolls_back_everything<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let existing_branch = w.new_branch("Existing");
    let existing = raw_consumer(org, main, "Existing");
    let mut existing_product = raw_product(org, main, "Existing product");
    existing_product
        .prices
        .push(raw_price(existing_product.id, money("10.00", Currency::SAR), VatMode::Inclusive, start()));
    let existing_coupon = raw_coupon(org, main, "Existing coupon", Discount::Percentage(5.into()));
    w.write(|tx| {
        tx.insert_consumer(&existing)?;
        tx.insert_product(&existing_product, Currency::SAR)?;
        tx.insert_coupon(&existing_coupon)
    });

    let branch = Branch::new(org, "Doomed", start());
    let user = raw_user(org, Role::BranchUser, vec![main, branch.id], start());
    let pair = KeyPair::generate();
    let key = ApiKey {
        id: ApiKeyId::new(),
        org_id: org,
        user_id: w.boot.user.id,
        name: "doomed".into(),
        key: pair.key.clone(),
        secret_hash: hash_secret(&pair.secret),
        branch_ids: vec![branch.id],
        default_branch_id: branch.id,
        is_all_branches: false,
        created_at: start(),
        revoked_at: None,
    };
    let consumer = raw_consumer(org, main, "Doomed");
    let mut product = raw_product(org, main, "Doomed");
    product
        .prices
        .push(raw_price(product.id, money("1.000", Currency::KWD), VatMode::Exempt, start()));
    let coupon = raw_coupon(org, main, "Doomed", Discount::Percentage(50.into()));
    let notification = raw_notification(org, start());
    let event = raw_event(org, main, EventId::new(), start());
    let invitation = Invitation {
        id: InvitationId::new(),
        organization_id: org,
        email: email("doomed@example.com"),
        role: Role::BranchUser,
        branches: vec![main],
        created_by: w.boot.user.id,
        language: Language::Ar,
        expire_at: start(),
        created_at: start(),
        accepted_at: None,
        accepted_by: None,
    };
    let refusal = Error::rule(Code::INVALID_STATUS, "the closure changed its mind");
    let r = w.billing.engine().store.write(|tx| {
        tx.insert_branch(&branch)?;
        tx.insert_user(&user)?;
        tx.insert_api_key(&key)?;
        tx.insert_consumer(&consumer)?;
        tx.insert_product(&product, Currency::SAR)?;
        tx.insert_coupon(&coupon)?;
        tx.insert_notification(&notification)?;
        tx.insert_event(&event)?;
        tx.insert_invitation(&invitation)?;
        let mut o = tx.org(org)?.expect("org");
        o.clock_offset_us += 3_600_000_000;
        o.name = "Doomed name".into();
        tx.update_org(&o)?;
        let mut b = existing_branch.clone();
        b.name = "Doomed rename".into();
        tx.update_branch(&b)?;
        let mut c = existing.clone();
        c.name = "Doomed rename".into();
        c.is_deleted = true;
        tx.update_consumer(&c)?;
        let mut p = existing_product.clone();
        p.prices[0].is_active = false;
        p.is_deleted = true;
        tx.update_product(&p, Currency::SAR)?;
        let mut cp = existing_coupon.clone();
        cp.is_deleted = true;
        tx.update_coupon(&cp)?;
        Err::<(), _>(refusal.clone())
    });
    assert_eq!(r, Err(refusal), "write returns the closure's error");

    assert_eq!(w.read(|tx| tx.org(org)), Some(w.boot.org.clone()), "organization update rolled back");
    assert_eq!(w.read(|tx| tx.branch(org, branch.id)), None);
    assert_eq!(w.read(|tx| tx.branch_by_name(org, &Branch::name_key("Doomed"))), None);
    assert_eq!(w.read(|tx| tx.branch(org, existing_branch.id)).map(|b| b.name), Some("Existing".to_string()));
    assert_eq!(w.read(|tx| tx.user(org, user.id)), None);
    assert_eq!(w.read(|tx| tx.api_key_by_key(&key.key)), None);
    assert_eq!(w.read(|tx| tx.count_api_keys_defaulting_to(branch.id)), 0);
    assert_eq!(w.read(|tx| tx.consumer(main, consumer.id)), None);
    assert_eq!(w.read(|tx| tx.consumer(main, existing.id)), Some(existing.clone()));
    assert_eq!(w.read(|tx| tx.product(main, product.id)), None);
    assert_eq!(w.read(|tx| tx.product(main, existing_product.id)), Some(existing_product.clone()));
    assert_eq!(w.read(|tx| tx.coupon(main, coupon.id)), None);
    assert_eq!(w.read(|tx| tx.coupon(main, existing_coupon.id)), Some(existing_coupon.clone()));
    assert_eq!(w.notifications(), vec![]);
    assert_eq!(w.read(|tx| tx.list_events(org)), vec![]);
    assert_eq!(w.read(|tx| consumer_count(tx, main)), 1);
    assert_eq!(w.read(|tx| tx.list_products(main, &all_products(), &ProductFilter::default())).total, 1);
    assert_eq!(w.read(|tx| tx.list_coupons(main, &all_coupons(), &CouponFilter::default())).total, 1);
    assert_eq!(w.all_branches().len(), 2);
    // The invitation's id is free again: the insert was rolled back.
    w.write(|tx| tx.insert_invitation(&invitation));
}

pub fn store_error_mid_transaction_rolls_back<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let mut a = raw_consumer(org, main, "A");
    a.phone_number = Some(phone("+966501234567"));
    w.write(|tx| tx.insert_consumer(&a));
    let fresh = raw_consumer(org, main, "Fresh");
    let mut dup = raw_consumer(org, main, "Dup");
    dup.phone_number = a.phone_number.clone();
    let r = w.billing.engine().store.write(|tx| {
        tx.insert_consumer(&fresh)?;
        tx.insert_consumer(&dup)?;
        Ok(())
    });
    assert_eq!(expect_unique(r), "consumers_branch_phone_key");
    assert_eq!(
        w.read(|tx| tx.consumer(main, fresh.id)),
        None,
        "the statement before the failing one is rolled back too"
    );
    assert_eq!(w.read(|tx| consumer_count(tx, main)), 1);
    // The store is still usable, and the same rows can be written now.
    w.write(|tx| tx.insert_consumer(&fresh));
    assert_eq!(w.read(|tx| consumer_count(tx, main)), 2);
}

pub fn writes_are_visible_inside_their_transaction<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let mut c = raw_consumer(org, main, "Inside");
    let mut p = raw_product(org, main, "Inside");
    p.prices.push(raw_price(p.id, money("3.00", Currency::SAR), VatMode::Inclusive, start()));
    let b = Branch::new(org, "Inside", start());
    let seen = w.write(|tx| {
        tx.insert_consumer(&c)?;
        let after_insert = tx.consumer(main, c.id)?;
        let total = consumer_count(tx, main)?;
        let mut changed = c.clone();
        changed.name = "Inside, renamed".into();
        tx.update_consumer(&changed)?;
        let after_update = tx.consumer(main, c.id)?.map(|x| x.name);
        tx.insert_product(&p, Currency::SAR)?;
        let product = tx.product(main, p.id)?;
        tx.insert_branch(&b)?;
        let by_name = tx.branch_by_name(org, &Branch::name_key("inside"))?.map(|x| x.id);
        Ok((after_insert, total, after_update, product, by_name))
    });
    assert_eq!(seen.0, Some(c.clone()));
    assert_eq!(seen.1, 1);
    assert_eq!(seen.2.as_deref(), Some("Inside, renamed"));
    assert_eq!(seen.3, Some(p.clone()));
    assert_eq!(seen.4, Some(b.id));
    c.name = "Inside, renamed".into();
    assert_eq!(w.read(|tx| tx.consumer(main, c.id)), Some(c.clone()), "committed");
}

pub fn rows_of_other_scopes_are_missing<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let b2 = w.new_branch("Second");
    let other = w.other_org("Other Org", false);
    let c = raw_consumer(org, b2.id, "In B2");
    let mut p = raw_product(org, b2.id, "In B2");
    p.prices.push(raw_price(p.id, money("3.00", Currency::SAR), VatMode::Inclusive, start()));
    let cp = raw_coupon(org, b2.id, "In B2", Discount::Percentage(5.into()));
    let oc = raw_consumer(other.org.id, other.branch.id, "Other org");
    w.write(|tx| {
        tx.insert_consumer(&c)?;
        tx.insert_product(&p, Currency::SAR)?;
        tx.insert_coupon(&cp)?;
        tx.insert_consumer(&oc)
    });
    assert_eq!(w.read(|tx| tx.consumer(main, c.id)), None);
    assert_eq!(w.read(|tx| tx.product(main, p.id)), None);
    assert_eq!(w.read(|tx| tx.coupon(main, cp.id)), None);
    assert_eq!(w.read(|tx| tx.consumer(main, oc.id)), None);
    assert_eq!(w.read(|tx| tx.consumer(b2.id, c.id)), Some(c.clone()));
    assert_eq!(w.read(|tx| tx.product(b2.id, p.id)), Some(p.clone()));
    assert_eq!(w.read(|tx| tx.coupon(b2.id, cp.id)), Some(cp.clone()));
    assert_eq!(w.read(|tx| tx.branch(other.org.id, b2.id)), None);
    assert_eq!(w.read(|tx| tx.branch(org, other.branch.id)), None);
    assert_eq!(w.read(|tx| tx.user(org, other.user.id)), None);
    assert_eq!(w.read(|tx| tx.user(other.org.id, w.boot.user.id)), None);
    assert_eq!(
        w.read(|tx| tx.branch_by_name(org, &Branch::name_key("main"))).map(|b| b.id),
        Some(main),
        "same name in another organization"
    );
    assert_eq!(w.read(|tx| consumer_count(tx, main)), 0);
    assert_eq!(w.read(|tx| tx.list_products(main, &all_products(), &ProductFilter::default())).total, 0);
    assert_eq!(w.read(|tx| tx.list_coupons(main, &all_coupons(), &CouponFilter::default())).total, 0);
    let ids: Vec<BranchId> = w.all_branches().into_iter().map(|b| b.id).collect();
    assert_eq!(ids, vec![main, b2.id]);
}

pub fn extreme_values_round_trip<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let mut early = raw_consumer(org, main, "Early");
    early.created_at = ts("1900-01-01T00:00:00.000001Z");
    early.updated_at = Some(ts("1969-12-31T23:59:59.999999Z"));
    early.external_metadata = object(json!({
        "f": 0.30000000000000004,
        "tiny": 5e-324,
        "huge": 1e300,
        "u": u64::MAX,
        "i": i64::MIN,
        "esc": "a\"b\\c\n\t\u{1}",
        "emoji": "😀",
        "empty": "",
        "list": [],
        "obj": {},
    }));
    let mut late = raw_consumer(org, main, "Late");
    late.created_at = ts("9999-12-31T23:59:59.999999Z");
    let mut p = raw_product(org, main, "Extremes");
    p.recurring_interval_count = 365;
    p.prices = vec![
        raw_price(p.id, money("0.01", Currency::SAR), VatMode::Inclusive, start()),
        raw_price(p.id, money("0.001", Currency::KWD), VatMode::Exclusive, start()),
        raw_price(p.id, money("1", Currency::JPY), VatMode::Exempt, start()),
        raw_price(p.id, money("9223372036854775.80", Currency::USD), VatMode::Inclusive, start()),
    ];
    let c = raw_coupon(org, main, "Hundred", Discount::Percentage(100.into()));
    let c2 = raw_coupon(org, main, "Hundredth", Discount::Percentage("0.01".parse().unwrap()));
    w.write(|tx| {
        tx.insert_consumer(&early)?;
        tx.insert_consumer(&late)?;
        tx.insert_product(&p, Currency::SAR)?;
        tx.insert_coupon(&c)?;
        tx.insert_coupon(&c2)
    });
    assert_eq!(w.read(|tx| tx.consumer(main, early.id)), Some(early.clone()));
    assert_eq!(w.read(|tx| tx.consumer(main, late.id)), Some(late.clone()));
    let got = w.read(|tx| tx.product(main, p.id)).unwrap();
    assert_eq!(got, p);
    assert_eq!(price_strings(&got), vec!["0.01", "0.001", "1", "9223372036854775.80"]);
    for x in [&c, &c2] {
        let got = w.read(|tx| tx.coupon(main, x.id)).unwrap();
        assert_eq!((&got, got.discount.display_value()), (x, x.discount.display_value()));
    }
    let order: Vec<ConsumerId> = w
        .read(|tx| tx.list_consumers(main, &all_consumers(), &ConsumerFilter::default()))
        .items
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(order, vec![late.id, early.id], "created_at desc across the extremes");
}

fn price_strings(p: &Product) -> Vec<String> {
    p.prices.iter().map(|x| x.amount.to_string()).collect()
}

/// `write_each`: each item's writes are kept or rolled back on their own. Of five items, the
/// second fails with the closure's error after writing, the fourth with a unique violation
/// after writing; the others are kept and durable, their results come back in order, a later
/// item sees what an earlier one wrote, and the failed items left nothing (their rows are
/// free to be written again).
pub fn write_each_keeps_each_item_alone<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let mut taken = raw_consumer(org, main, "Taken");
    taken.phone_number = Some(phone("+966501234567"));
    w.write(|tx| tx.insert_consumer(&taken));
    let rows: Vec<Consumer> = (0..5).map(|i| raw_consumer(org, main, &format!("Item {i}"))).collect();
    let refusal = Error::rule(Code::INVALID_STATUS, "item 1 changed its mind");
    let mut runs = 0;
    let results = w.billing.engine().store.write_each(&[0usize, 1, 2, 3, 4], |tx, i| {
        runs += 1;
        let mut c = rows[*i].clone();
        tx.insert_consumer(&c)?;
        match i {
            1 => return Err(refusal.clone()),
            3 => {
                // A unique violation after a kept insert: the whole item goes.
                c.id = ConsumerId::new();
                c.phone_number = taken.phone_number.clone();
                tx.insert_consumer(&c)?;
            }
            // Item 0's row is visible to item 2.
            2 => assert!(tx.consumer(main, rows[0].id)?.is_some(), "an earlier item's write is visible"),
            _ => {}
        }
        Ok(c.name)
    });
    assert!(runs >= 5);
    assert_eq!(results.len(), 5);
    assert_eq!(results[0], Ok("Item 0".to_string()));
    assert_eq!(results[1], Err(refusal));
    assert_eq!(results[2], Ok("Item 2".to_string()));
    assert_eq!(expect_unique(results[3].clone()), "consumers_branch_phone_key");
    assert_eq!(results[4], Ok("Item 4".to_string()));
    for (i, c) in rows.iter().enumerate() {
        let kept = w.read(|tx| tx.consumer(main, c.id));
        assert_eq!(kept.is_some(), [0, 2, 4].contains(&i), "item {i}");
    }
    assert_eq!(w.read(|tx| consumer_count(tx, main)), 4);
    // The failed items' rows can be written now: nothing of theirs was kept.
    w.write(|tx| tx.insert_consumer(&rows[1]));
    w.write(|tx| tx.insert_consumer(&rows[3]));
    // No items, no transaction.
    assert!(w.billing.engine().store.write_each(&[] as &[u8], |_, _| Ok(())).is_empty());
}

/// `write_each`: a store may keep what a batch read of organizations and webhook endpoints
/// (every renewal reads its organization's clock, every event its branch's endpoints), but a
/// read always answers what the batch holds at that moment. Of five items: the first reads
/// both; the second changes the clock and adds an endpoint; the third reads the change; the
/// fourth changes both again and fails (rolled back); the fifth reads the second's values, not
/// the fourth's. Within one item, a write is read back at once.
pub fn write_each_reads_organizations_and_endpoints_as_they_are<H: Harness>() {
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let endpoint = |n: u32| crate::webhook::Endpoint {
        id: uuid::Uuid::now_v7(),
        org_id: org,
        branch_id: main,
        url: format!("https://hooks.example.com/{n}"),
        event_types: None,
        description: None,
        enabled: true,
        secret_key: format!("secret-{n}"),
        created_at: start() + chrono::Duration::seconds(i64::from(n)),
        updated_at: None,
        deleted_at: None,
    };
    let read = |tx: &mut dyn Tx| -> crate::Result<(i64, usize)> {
        let offset = tx.org(org)?.expect("the organization").clock_offset_us;
        Ok((offset, tx.list_webhook_endpoints(main)?.len()))
    };
    let change = |tx: &mut dyn Tx, by: i64, n: u32| -> crate::Result<(i64, usize)> {
        let mut o = tx.org(org)?.expect("the organization");
        o.clock_offset_us += by;
        tx.update_org(&o)?;
        tx.insert_webhook_endpoint(&endpoint(n))?;
        // Read back at once, in the same item.
        read(tx)
    };
    let before = w.read(|tx| Ok(tx.org(org)?.expect("the organization").clock_offset_us));
    let failed = Error::rule(Code::INVALID_STATUS, "item 3 changed its mind");
    let results = w.billing.engine().store.write_each(&[0u32, 1, 2, 3, 4], |tx, i| match i {
        1 => change(tx, 1_000, 1),
        3 => {
            change(tx, 5_000, 3)?;
            Err(failed.clone())
        }
        _ => read(tx),
    });
    assert_eq!(results[0], Ok((before, 0)), "the first read");
    assert_eq!(results[1], Ok((before + 1_000, 1)), "an item reads its own writes");
    assert_eq!(results[2], Ok((before + 1_000, 1)), "a later item reads an earlier one's writes");
    assert_eq!(results[3], Err(failed));
    assert_eq!(results[4], Ok((before + 1_000, 1)), "nothing of the failed item is read");
    let after = w.billing.engine().store.read(|tx| read(tx)).unwrap();
    assert_eq!(after, (before + 1_000, 1), "what was committed");
}

/// What the items of a `write_each` append (events, queue items) is there for everything that
/// follows, as if each were written at once, even where a store sends appends together at the
/// end of the batch (PostgreSQL's first pass): a later item reads them (an event by id, the
/// outbox, a queue item, a claim), an insert-if-absent leaves an existing item as it is, and
/// the outbox keeps write order. A plain insert of an id that exists (committed before, or
/// appended by an earlier item of the batch) fails its item alone, and a failed item keeps
/// nothing, even when the store finds the duplicate only as the batch ends.
pub fn write_each_reads_its_appends_as_they_are<H: Harness>() {
    use crate::error::StoreError;
    use crate::ids::WorkId;
    use crate::work::DueWork;
    let w = World::new(H::store());
    let (org, main) = (w.boot.org.id, w.boot.branch.id);
    let now = w.now();
    let kind = "test.appends";
    let old = DueWork::new(WorkId::new(), org, kind, now + chrono::Duration::days(30), json!({"n": "old"}));
    w.write(|tx| tx.insert_work(&old));
    let e0 = w.read(|tx| tx.list_events(org)).len();
    let ev: Vec<Event> = (0..6).map(|_| raw_event(org, main, EventId::new(), start())).collect();
    let item = |n: u32, ago: i64| DueWork::new(WorkId::new(), org, kind, now - chrono::Duration::seconds(ago), json!({ "n": n }));
    let (a, b, c) = (item(1, 30), item(2, 20), item(3, 10));
    let payload_n = |x: Option<DueWork>| x.and_then(|x| x.payload["n"].as_u64());
    // (outbox length, the queue item's number, how many of ev[0], ev[1] are found by id)
    let seen = |tx: &mut dyn Tx, id: WorkId| -> crate::Result<(usize, Option<u64>, usize)> {
        let n = payload_n(tx.work(id)?);
        Ok((tx.list_events(org)?.len(), n, tx.events_by_ids(&[ev[0].id, ev[1].id])?.len()))
    };

    // Every item succeeds: what each reads is what the items before it appended.
    let results = w.billing.engine().store.write_each(&[0u32, 1, 2, 3], |tx, i| match i {
        0 => {
            tx.insert_event(&ev[0])?;
            tx.queue_work_if_absent(&a)?;
            tx.insert_work(&b)?;
            seen(tx, a.id)
        }
        1 => {
            tx.insert_event(&ev[1])?;
            seen(tx, b.id)
        }
        2 => {
            tx.queue_work_if_absent(&DueWork::new(old.id, org, kind, now, json!({"n": 98})))?;
            tx.queue_work_if_absent(&c)?;
            seen(tx, old.id)
        }
        _ => {
            let lease = now + chrono::Duration::seconds(60);
            let claimed = tx.claim_due_work(Some(org), &[kind], now, lease, 10)?;
            Ok((claimed.len(), payload_n(claimed.first().cloned()), 0))
        }
    });
    assert_eq!(results[0], Ok((e0 + 1, Some(1), 1)), "an item reads its own appends");
    assert_eq!(results[1], Ok((e0 + 2, Some(2), 2)), "a later item reads an earlier one's");
    assert_eq!(
        results[2],
        Ok((e0 + 2, None, 2)),
        "the old item is left as it was (its payload is not a number)"
    );
    assert_eq!(results[3], Ok((3, Some(1), 0)), "the claim takes a, b and c, earliest first");
    assert_eq!(w.read(|tx| tx.list_events(org))[e0..].to_vec(), ev[..2].to_vec(), "in write order");
    let kept = w.read(|tx| tx.work(old.id)).expect("the old item");
    assert_eq!((kept.payload, kept.due_at), (json!({"n": "old"}), old.due_at));
    for x in [&a, &b, &c] {
        assert!(w.read(|tx| tx.work(x.id)).is_some(), "{} committed", x.payload);
    }

    // Duplicates, in batches where no closure fails (a store that sends appends at the end
    // finds them only then): of an item committed before the batch, and of one an earlier
    // item appended.
    let unique = |r: &crate::Result<()>| matches!(r, Err(Error::Store(StoreError::UniqueViolation(_))));
    let results = w.billing.engine().store.write_each(&[0u32, 1], |tx, i| match i {
        0 => {
            tx.insert_event(&ev[2])?;
            Ok(tx.insert_work(&DueWork::new(old.id, org, kind, now, json!({"n": 97})))?)
        }
        _ => Ok(tx.insert_event(&ev[3])?),
    });
    assert!(unique(&results[0]), "a committed id: {:?}", results[0]);
    assert_eq!(results[1], Ok(()));
    let d = item(4, 5);
    let results = w.billing.engine().store.write_each(&[0u32, 1, 2], |tx, i| match i {
        0 => Ok(tx.insert_work(&d)?),
        1 => {
            tx.insert_event(&ev[4])?;
            Ok(tx.insert_work(&DueWork::new(d.id, org, kind, now, json!({"n": 96})))?)
        }
        _ => Ok(()),
    });
    assert_eq!(results[0], Ok(()));
    assert!(unique(&results[1]), "an id appended earlier in the batch: {:?}", results[1]);
    assert_eq!(results[2], Ok(()));
    // A failed item keeps nothing.
    let failed = Error::rule(Code::INVALID_STATUS, "item 0 changed its mind");
    let results = w.billing.engine().store.write_each(&[0u32, 1], |tx, i| match i {
        0 => {
            tx.insert_event(&ev[5])?;
            tx.insert_work(&item(5, 100))?;
            Err(failed.clone())
        }
        _ => Ok(()),
    });
    assert_eq!(results, vec![Err(failed), Ok(())]);
    assert_eq!(
        w.read(|tx| tx.list_events(org))[e0..].to_vec(),
        vec![ev[0].clone(), ev[1].clone(), ev[3].clone()],
        "only the events of the items that succeeded"
    );
    assert_eq!(payload_n(w.read(|tx| tx.work(d.id))), Some(4), "the first insert of d");
    assert_eq!(w.read(|tx| tx.work(old.id)).map(|x| x.payload), Some(json!({"n": "old"})));
    let queued = w.read(|tx| tx.work_due_times(org, &[kind], now));
    assert_eq!(
        queued.next_free,
        Some(d.due_at),
        "the failed item's queue item is not kept (d is the earliest free)"
    );
}

/// [`Store::write_each`] completes, drops and numbers as each item would alone, even where the
/// store sends those writes late in the batch or takes a batch's invoice numbers ahead
/// (PostgreSQL's first pass):
/// - a queue item completed under a lease it no longer holds is refused to that item alone
///   (the others' completions stand), and an item completed or dropped earlier in the batch
///   reads as gone;
/// - invoice numbers stay gapless: the items that take one get consecutive numbers, whatever
///   the items that take none or fail, and the next number after the batch follows the last.
pub fn write_each_completes_drops_and_numbers_as_each_would<H: Harness>() {
    use crate::error::StoreError;
    use crate::ids::WorkId;
    use crate::work::DueWork;
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let now = w.now();
    let kind = "test.completions";
    let items: Vec<DueWork> = (0..5)
        .map(|n| DueWork::new(WorkId::new(), org, kind, now - chrono::Duration::seconds(60 - n), json!({ "n": n })))
        .collect();
    for x in &items {
        w.write(|tx| tx.insert_work(x));
    }
    let lease = now + chrono::Duration::seconds(60);
    let claimed = w.write(|tx| tx.claim_due_work(Some(org), &[kind], now, lease, 10));
    assert_eq!(claimed.len(), 5);
    let held = |id: WorkId| claimed.iter().find(|x| x.id == id).expect("claimed").leased_until;
    let lost = |id: WorkId| Error::Store(StoreError::LeaseLost(id));
    let complete = |tx: &mut dyn Tx, id: WorkId, lease: Option<crate::clock::Timestamp>| -> crate::Result<()> {
        match tx.complete_work(id, lease)? {
            true => Ok(()),
            false => Err(lost(id)),
        }
    };
    // No item fails: each run of the last one (a store may run a batch more than once) reads
    // what the items before it completed and dropped as gone.
    let mut seen = Vec::new();
    let results = w.billing.engine().store.write_each(&[0usize, 1, 2], |tx, k| match k {
        0 => complete(tx, items[0].id, held(items[0].id)),
        1 => {
            tx.drop_work(items[2].id)?;
            // Dropping what is gone is no error.
            tx.drop_work(WorkId::new())?;
            Ok(())
        }
        _ => {
            complete(tx, items[3].id, held(items[3].id))?;
            // The dropped one first (a read of another pending id could send it along).
            seen.push([items[2].id, items[0].id, items[3].id].map(|id| tx.work(id).map(|x| x.is_some())));
            Ok(())
        }
    });
    assert_eq!(results, vec![Ok(()), Ok(()), Ok(())]);
    assert!(
        !seen.is_empty() && seen.iter().all(|s| *s == [Ok(false), Ok(false), Ok(false)]),
        "read back: {seen:?}"
    );
    // Item 0 holds a lease that is no longer the item's (another claim took it since): it alone
    // is refused; the other's completion stands.
    let stale = held(items[1].id).map(|l| l - chrono::Duration::seconds(1));
    let results = w.billing.engine().store.write_each(&[0usize, 1], |tx, k| match k {
        0 => complete(tx, items[1].id, stale),
        _ => complete(tx, items[4].id, held(items[4].id)),
    });
    assert_eq!(results, vec![Err(lost(items[1].id)), Ok(())]);
    let left: Vec<WorkId> = items.iter().filter(|x| w.read(|tx| tx.work(x.id)).is_some()).map(|x| x.id).collect();
    assert_eq!(left, vec![items[1].id], "only the item whose lease was lost is left");
    assert_eq!(
        w.read(|tx| tx.work(items[1].id)).and_then(|x| x.leased_until),
        held(items[1].id),
        "as its claim left it"
    );

    // Numbers: 0 and 2 and 3 take one, 1 takes none.
    let first = w.write(|tx| tx.next_invoice_number(org));
    let take = |tx: &mut dyn Tx, k: &usize| -> crate::Result<Option<i64>> {
        match k {
            1 => Ok(None),
            _ => Ok(Some(tx.next_invoice_number(org)?)),
        }
    };
    let results = w.billing.engine().store.write_each(&[0usize, 1, 2, 3], take);
    assert_eq!(results, vec![Ok(Some(first + 1)), Ok(None), Ok(Some(first + 2)), Ok(Some(first + 3))]);
    assert_eq!(w.write(|tx| tx.next_invoice_number(org)), first + 4, "no number is lost or skipped");
    // An item that fails after taking a number gives it back with its other writes.
    let failed = Error::rule(Code::INVALID_STATUS, "item 1 changed its mind");
    let results = w.billing.engine().store.write_each(&[0usize, 1, 2], |tx, k| match k {
        1 => {
            tx.next_invoice_number(org)?;
            Err(failed.clone())
        }
        _ => Ok(Some(tx.next_invoice_number(org)?)),
    });
    assert_eq!(results, vec![Ok(Some(first + 5)), Err(failed), Ok(Some(first + 6))]);
    assert_eq!(w.write(|tx| tx.next_invoice_number(org)), first + 7);
    // Two organizations in one batch, the second with no invoice yet (no counter): each
    // numbers its own items from where it stands, interleaved.
    let other = w.other_org("Numbers Elsewhere", false).org.id;
    let results = w
        .billing
        .engine()
        .store
        .write_each(&[org, other, other, org, other], |tx, o| Ok(tx.next_invoice_number(*o)?));
    assert_eq!(results, vec![Ok(first + 8), Ok(1), Ok(2), Ok(first + 9), Ok(3)]);
    assert_eq!(w.write(|tx| tx.next_invoice_number(other)), 4);
    assert_eq!(w.write(|tx| tx.next_invoice_number(org)), first + 10);
}
