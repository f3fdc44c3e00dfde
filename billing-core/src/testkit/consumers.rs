//! Consumer cases: create/get/update/delete, uniqueness of phone and e-mail per branch, and
//! the list (paging, sorts, search, filters, branch isolation).

use super::{expect_code, Harness, World};
use crate::auth::Scope;
use crate::consumer::{parse_consumer_list, CommunicationMethod, Consumer, ConsumerFields, ConsumerFilter, ConsumerSort, ConsumerType};
use crate::error::{Code, Result};
use crate::fields::Language;
use crate::ids::ConsumerId;
use crate::list::{Direction, ListQuery, Page, QueryParams};
use crate::store::Store;
use serde_json::{json, Value};

pub fn fields(v: Value) -> ConsumerFields {
    ConsumerFields::parse(&v, true).unwrap_or_else(|e| panic!("bad consumer {v}: {e:?}"))
}

fn update_fields(v: Value) -> ConsumerFields {
    ConsumerFields::parse(&v, false).unwrap_or_else(|e| panic!("bad consumer update {v}: {e:?}"))
}

pub fn create<S: Store>(w: &World<S>, s: &Scope, v: Value) -> Consumer {
    w.billing.consumers().create(s, fields(v)).expect("create consumer")
}

fn try_create<S: Store>(w: &World<S>, s: &Scope, v: Value) -> Result<Consumer> {
    w.billing.consumers().create(s, fields(v))
}

/// Lists with a query string, as the API would receive it.
pub fn list<S: Store>(w: &World<S>, s: &Scope, query: &str) -> Page<Consumer> {
    let (q, f) = parse_consumer_list(&QueryParams::parse(query)).unwrap_or_else(|e| panic!("bad query {query}: {e:?}"));
    w.billing.consumers().list(s, &q, &f).expect("list consumers")
}

fn list_q<S: Store>(w: &World<S>, s: &Scope, q: &ListQuery<ConsumerSort>) -> Page<Consumer> {
    w.billing.consumers().list(s, q, &ConsumerFilter::default()).expect("list consumers")
}

fn names(p: &Page<Consumer>) -> Vec<&str> {
    p.items.iter().map(|c| c.name.as_str()).collect()
}

fn ids(p: &Page<Consumer>) -> Vec<ConsumerId> {
    p.items.iter().map(|c| c.id).collect()
}

fn total<S: Store>(w: &World<S>, s: &Scope) -> u64 {
    list(w, s, "limit=100").total
}

pub fn create_and_get<H: Harness>() {
    let w = World::new(H::store());
    let f = ConsumerFields::parse(
        &json!({"name": "Sara", "phone_number": "+966501234567", "email": "sara@example.com", "external_metadata": {"plan": "gold"}}),
        true,
    )
    .unwrap();
    let c = w.billing.consumers().create(&w.admin, f).unwrap();
    let got = w.billing.consumers().get(&w.admin, c.id).unwrap();
    assert_eq!(got, c);

    let full = create(
        &w,
        &w.admin,
        json!({
            "name": "  Omar Khalid  ",
            "phone_number": "+966551112222",
            "email": "Omar@Example.org",
            "external_id": "erp-5",
            "iban": "SA4420000001234567891234",
            "alias": "Abu Khalid",
            "comment": "calls after 5",
            "preferred_language": "EN",
            "communication_methods": ["WHATSAPP", "EMAIL"],
            "consumer_type": "BUSINESS",
            "address": {"address_line_1": "Olaya St", "city": "Riyadh", "country": "SA"},
            "vat_number": "300000000000003",
            "commercial_registration": "1010101010",
            "external_metadata": {"plan": "gold", "seats": 3, "tags": ["a"]}
        }),
    );
    assert_eq!(full.name, "Omar Khalid");
    assert_eq!(full.email.as_ref().map(|e| e.as_str()), Some("Omar@Example.org"), "e-mail kept as given");
    assert_eq!(full.preferred_language, Language::En);
    assert_eq!(full.communication_methods, vec![CommunicationMethod::WhatsApp, CommunicationMethod::Email]);
    assert_eq!(full.consumer_type, ConsumerType::Business);
    assert_eq!(full.branch_id, w.boot.branch.id);
    assert_eq!(full.org_id, w.boot.org.id);
    assert_eq!(full.created_at, w.now());
    assert_eq!(full.updated_at, None);
    assert!(!full.is_deleted);
    let got = w.billing.consumers().get(&w.admin, full.id).unwrap();
    assert_eq!(got, full);
    assert_eq!(got.to_json(&w.boot.branch), full.to_json(&w.boot.branch));
    assert_eq!(list(&w, &w.admin, "").total, 2);
    expect_code(w.billing.consumers().get(&w.admin, ConsumerId::new()), Code::NOT_FOUND);
}

pub fn create_applies_defaults<H: Harness>() {
    let w = World::new(H::store());
    let c = create(&w, &w.admin, json!({"name": "Bare", "email": null}));
    assert_eq!(c.preferred_language, Language::Ar);
    assert_eq!(c.consumer_type, ConsumerType::Individual);
    assert!(c.communication_methods.is_empty());
    assert!(c.external_metadata.is_empty());
    assert_eq!(
        (c.phone_number.clone(), c.email.clone(), c.external_id.clone(), c.iban.clone(), c.alias.clone()),
        (None, None, None, None, None)
    );
    assert_eq!(
        (c.comment.clone(), c.address.clone(), c.vat_number.clone(), c.commercial_registration.clone()),
        (None, None, None, None)
    );
    assert_eq!(w.billing.consumers().get(&w.admin, c.id).unwrap(), c);
}

pub fn update_changes_only_given_fields<H: Harness>() {
    let w = World::new(H::store());
    let c = create(
        &w,
        &w.admin,
        json!({"name": "Sara", "phone_number": "+966501234567", "email": "sara@example.com", "alias": "S", "external_metadata": {"a": "1"}}),
    );
    w.tick(10);
    let u = w
        .billing
        .consumers()
        .update(
            &w.admin,
            c.id,
            update_fields(json!({"name": "Sara Q", "alias": "SQ", "preferred_language": "en", "external_metadata": {"b": "2"}, "email": null})),
        )
        .unwrap();
    assert_eq!(u.name, "Sara Q");
    assert_eq!(u.alias.as_deref(), Some("SQ"));
    assert_eq!(u.preferred_language, Language::En);
    assert_eq!(u.external_metadata, super::tx::object(json!({"b": "2"})), "metadata is replaced as a whole");
    assert_eq!(u.phone_number, c.phone_number, "not given: unchanged");
    assert_eq!(u.email, c.email, "null: unchanged");
    assert_eq!(u.created_at, c.created_at);
    assert_eq!(u.updated_at, Some(w.now()));
    assert_eq!(w.billing.consumers().get(&w.admin, c.id).unwrap(), u);
    expect_code(
        w.billing.consumers().update(&w.admin, ConsumerId::new(), update_fields(json!({"name": "x"}))),
        Code::NOT_FOUND,
    );
}

pub fn duplicate_phone_refused<H: Harness>() {
    let w = World::new(H::store());
    let a = create(&w, &w.admin, json!({"name": "A", "phone_number": "+966501234567"}));
    let e = expect_code(
        try_create(&w, &w.admin, json!({"name": "B", "phone_number": "+966501234567", "email": "b@example.com"})),
        Code::DUPLICATE_CONSUMER,
    );
    assert!(e.to_string().contains("+966501234567"), "names the phone: {e}");
    assert_eq!(ids(&list(&w, &w.admin, "")), vec![a.id], "nothing written");
    assert!(w
        .read(|tx| tx.consumer_conflict(w.boot.branch.id, None, Some("b@example.com"), ConsumerId::new()))
        .is_none());
    create(&w, &w.admin, json!({"name": "B", "phone_number": "+966501234568"}));
    assert_eq!(total(&w, &w.admin), 2);
}

pub fn duplicate_email_refused_case_insensitively<H: Harness>() {
    let w = World::new(H::store());
    create(&w, &w.admin, json!({"name": "A", "email": "Sara@Example.com"}));
    let e = expect_code(
        try_create(&w, &w.admin, json!({"name": "B", "email": "sara@EXAMPLE.com"})),
        Code::DUPLICATE_CONSUMER,
    );
    assert!(e.to_string().contains("sara@EXAMPLE.com"), "names the e-mail: {e}");
    expect_code(
        try_create(&w, &w.admin, json!({"name": "C", "email": "Sara@Example.com", "phone_number": "+966501234567"})),
        Code::DUPLICATE_CONSUMER,
    );
    assert_eq!(total(&w, &w.admin), 1);
    create(&w, &w.admin, json!({"name": "D", "email": "sara2@example.com"}));
    assert_eq!(total(&w, &w.admin), 2);
}

pub fn duplicates_allowed_in_another_branch<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let sb = w.in_branch(b.id);
    let a = create(&w, &w.admin, json!({"name": "A", "phone_number": "+966501234567", "email": "a@example.com"}));
    let a2 = create(&w, &sb, json!({"name": "A2", "phone_number": "+966501234567", "email": "A@example.com"}));
    assert_eq!(a2.branch_id, b.id);
    assert_eq!(ids(&list(&w, &w.admin, "")), vec![a.id]);
    assert_eq!(ids(&list(&w, &sb, "")), vec![a2.id]);
    expect_code(try_create(&w, &sb, json!({"name": "A3", "email": "a@EXAMPLE.com"})), Code::DUPLICATE_CONSUMER);
}

pub fn duplicates_allowed_after_soft_delete<H: Harness>() {
    let w = World::new(H::store());
    let a = create(&w, &w.admin, json!({"name": "A", "phone_number": "+966501234567", "email": "a@example.com"}));
    w.billing.consumers().delete(&w.admin, a.id).unwrap();
    let b = create(&w, &w.admin, json!({"name": "B", "phone_number": "+966501234567", "email": "A@Example.com"}));
    assert_eq!(ids(&list(&w, &w.admin, "")), vec![b.id]);
    assert!(w.billing.consumers().get(&w.admin, a.id).unwrap().is_deleted);
    expect_code(
        try_create(&w, &w.admin, json!({"name": "C", "phone_number": "+966501234567"})),
        Code::DUPLICATE_CONSUMER,
    );
}

pub fn update_onto_another_consumers_contact_refused<H: Harness>() {
    let w = World::new(H::store());
    let a = create(&w, &w.admin, json!({"name": "A", "phone_number": "+966501234561", "email": "a@example.com"}));
    let b = create(&w, &w.admin, json!({"name": "B", "phone_number": "+966501234562", "email": "b@example.com"}));
    w.tick(5);
    expect_code(
        w.billing
            .consumers()
            .update(&w.admin, b.id, update_fields(json!({"phone_number": "+966501234561", "name": "B2"}))),
        Code::DUPLICATE_CONSUMER,
    );
    expect_code(
        w.billing.consumers().update(&w.admin, b.id, update_fields(json!({"email": "A@EXAMPLE.COM"}))),
        Code::DUPLICATE_CONSUMER,
    );
    assert_eq!(w.billing.consumers().get(&w.admin, b.id).unwrap(), b, "refused updates change nothing");
    let same = w
        .billing
        .consumers()
        .update(
            &w.admin,
            b.id,
            update_fields(json!({"phone_number": "+966501234562", "email": "B@example.com"})),
        )
        .unwrap();
    assert_eq!(
        same.email.as_ref().map(|e| e.as_str()),
        Some("B@example.com"),
        "its own phone and e-mail are no conflict"
    );
    w.billing
        .consumers()
        .update(&w.admin, a.id, update_fields(json!({"phone_number": "+966501234563"})))
        .unwrap();
    let moved = w
        .billing
        .consumers()
        .update(&w.admin, b.id, update_fields(json!({"phone_number": "+966501234561"})))
        .unwrap();
    assert_eq!(
        moved.phone_number.as_ref().map(|p| p.as_str()),
        Some("+966501234561"),
        "a freed phone can be taken"
    );
}

pub fn soft_delete_keeps_get_and_leaves_lists<H: Harness>() {
    let w = World::new(H::store());
    let a = create(&w, &w.admin, json!({"name": "Alpha", "external_id": "ext-a", "external_metadata": {"k": "v"}}));
    let b = create(&w, &w.admin, json!({"name": "Bravo"}));
    w.tick(30);
    w.billing.consumers().delete(&w.admin, a.id).unwrap();
    let got = w.billing.consumers().get(&w.admin, a.id).unwrap();
    assert!(got.is_deleted);
    assert_eq!(got.updated_at, Some(w.now()));
    assert_eq!(
        Consumer {
            is_deleted: false,
            updated_at: None,
            ..got
        },
        a,
        "everything else kept"
    );
    let page = list(&w, &w.admin, "");
    assert_eq!((ids(&page), page.total), (vec![b.id], 1));
    assert_eq!(list(&w, &w.admin, "search_term=alpha").total, 0);
    assert_eq!(list(&w, &w.admin, "external_id=ext-a").total, 0);
    assert_eq!(list(&w, &w.admin, "external_metadata.k=v").total, 0);
    expect_code(
        w.billing.consumers().update(&w.admin, a.id, update_fields(json!({"name": "Back"}))),
        Code::NOT_FOUND,
    );
    expect_code(w.billing.consumers().delete(&w.admin, a.id), Code::NOT_FOUND);
    expect_code(w.billing.consumers().delete(&w.admin, ConsumerId::new()), Code::NOT_FOUND);
    assert_eq!(w.billing.consumers().get(&w.admin, a.id).unwrap().name, "Alpha");
}

pub fn list_paging<H: Harness>() {
    let w = World::new(H::store());
    let mut made = vec![];
    for i in 0..23 {
        w.tick(1);
        made.push(create(&w, &w.admin, json!({"name": format!("C{i:02}")})));
    }
    let newest_first: Vec<ConsumerId> = made.iter().rev().map(|c| c.id).collect();
    let p1 = list(&w, &w.admin, "");
    assert_eq!((p1.page, p1.limit, p1.total), (1, 10, 23), "defaults: page 1, limit 10, created_at desc");
    assert_eq!(ids(&p1), newest_first[..10].to_vec());
    let p2 = list(&w, &w.admin, "page=2&limit=10");
    assert_eq!(ids(&p2), newest_first[10..20].to_vec());
    let p3 = list(&w, &w.admin, "page=3&limit=10");
    assert_eq!((ids(&p3), p3.total, p3.page), (newest_first[20..].to_vec(), 23, 3));
    let pg = p3.pagination();
    assert_eq!((pg.total_count, pg.max_page, pg.has_next_page, pg.has_previous_page), (3, 3, false, true));
    let far = list(&w, &w.admin, "page=4294967295&limit=100");
    assert_eq!(
        (far.items.len(), far.total, far.page),
        (0, 23, u32::MAX),
        "a page far past the end is empty, not an error"
    );
    let p4 = list(&w, &w.admin, "page=4&limit=10");
    assert!(p4.items.is_empty());
    assert_eq!(p4.total, 23, "the total counts across pages, even past the end");
    let all = list(&w, &w.admin, "limit=500");
    assert_eq!((all.limit, all.items.len()), (100, 23));
    assert_eq!(ids(&all), newest_first);
    let sized = list(&w, &w.admin, "size=5&page=2&sort_direction=asc");
    assert_eq!(names(&sized), vec!["C05", "C06", "C07", "C08", "C09"]);
}

pub fn list_sorts_with_id_tie_break<H: Harness>() {
    let w = World::new(H::store());
    let rows = [
        ("Bravo", "delta@example.com", "+966501234504", "eb", 0),
        ("Alpha", "alpha@example.com", "+966501234506", "ea", 0),
        ("Charlie", "echo@example.com", "+966501234501", "eb", 1),
        ("Alpha", "charlie@example.com", "+966501234503", "ec", 1),
        ("Bravo", "bravo@example.com", "+966501234505", "ea", 1),
        ("Delta", "foxtrot@example.com", "+966501234502", "ed", 2),
    ];
    let mut made = vec![];
    let mut at = 0;
    for (name, email, phone, ext, t) in rows {
        if t != at {
            w.tick(1);
            at = t;
        }
        made.push(create(
            &w,
            &w.admin,
            json!({"name": name, "email": email, "phone_number": phone, "external_id": ext}),
        ));
    }
    for sort in ConsumerSort::ALL {
        let key = |c: &Consumer| -> String {
            match sort {
                ConsumerSort::Name => c.name.clone(),
                ConsumerSort::CreatedAt => format!("{:020}", c.created_at.timestamp_micros()),
                ConsumerSort::Email => c.email.as_ref().unwrap().as_str().to_string(),
                ConsumerSort::PhoneNumber => c.phone_number.as_ref().unwrap().as_str().to_string(),
                ConsumerSort::ExternalId => c.external_id.clone().unwrap(),
            }
        };
        let mut asc: Vec<&Consumer> = made.iter().collect();
        asc.sort_by(|a, b| key(a).cmp(&key(b)).then(a.id.cmp(&b.id)));
        let asc: Vec<ConsumerId> = asc.into_iter().map(|c| c.id).collect();
        let mut desc = asc.clone();
        desc.reverse();
        for (dir, want) in [("asc", &asc), ("desc", &desc)] {
            let got = list(&w, &w.admin, &format!("sort_field={}&sort_direction={dir}&limit=100", sort.as_str()));
            assert_eq!(
                &ids(&got),
                want,
                "sort_field={} sort_direction={dir} (ties broken by id in the same direction)",
                sort.as_str()
            );
            // Paging through ties neither repeats nor skips rows.
            let mut paged = vec![];
            for page in 1..=3 {
                paged.extend(ids(&list(
                    &w,
                    &w.admin,
                    &format!("sort_field={}&sort_direction={dir}&limit=2&page={page}", sort.as_str()),
                )));
            }
            assert_eq!(&paged, want, "paged sort_field={} sort_direction={dir}", sort.as_str());
        }
    }
    let mut q = ListQuery::new(ConsumerSort::Name);
    q.direction = Direction::Asc;
    q.limit = 1;
    assert_eq!(list_q(&w, &w.admin, &q).items[0].name, "Alpha");
}

pub fn list_search<H: Harness>() {
    let w = World::new(H::store());
    let sara = create(
        &w,
        &w.admin,
        json!({
            "name": "Sara Ahmed", "email": "sara.ahmed@example.com", "phone_number": "+966501234567", "alias": "Sasa",
            "external_id": "CRM-77", "iban": "SA0380000000608010167519", "comment": "vip note", "vat_number": "300000000000003",
            "commercial_registration": "1010101010", "address": {"address_line_1": "Tahlia", "city": "Jeddah", "country": "SA"},
            "external_metadata": {"segment": "loyal"}
        }),
    );
    w.tick(1);
    let omar = create(
        &w,
        &w.admin,
        json!({"name": "Omar Khalid", "email": "omar@example.org", "phone_number": "+966551112222", "alias": "Abu Khalid", "external_id": "ERP-5", "iban": "SA4420000001234567891234"}),
    );
    let cases: &[(&str, Vec<ConsumerId>)] = &[
        ("sara", vec![sara.id]),
        ("AHMED", vec![sara.id]),
        ("khalid", vec![omar.id]),
        ("example.org", vec![omar.id]),
        ("EXAMPLE.COM", vec![sara.id]),
        ("50123", vec![sara.id]),
        ("+9665", vec![omar.id, sara.id]),
        ("sasa", vec![sara.id]),
        ("crm-7", vec![sara.id]),
        ("erp", vec![omar.id]),
        ("SA0380000000608010167519", vec![sara.id]),
        ("SA03800000006080", vec![]),
        ("vip", vec![]),
        ("300000000000003", vec![]),
        ("jeddah", vec![]),
        ("loyal", vec![]),
        ("nobody", vec![]),
    ];
    for (term, want) in cases {
        let mut q = ListQuery::new(ConsumerSort::CreatedAt);
        q.search = Some(term.to_string());
        let got = list_q(&w, &w.admin, &q);
        assert_eq!(&ids(&got), want, "search_term={term}");
        assert_eq!(got.total, want.len() as u64, "total for search_term={term}");
    }
    let sorted = list(&w, &w.admin, "search_term=example&sort_field=name&sort_direction=asc");
    assert_eq!(names(&sorted), vec!["Omar Khalid", "Sara Ahmed"]);
    let paged = list(&w, &w.admin, "search_term=example&limit=1&page=2&sort_field=name&sort_direction=asc");
    assert_eq!((names(&paged), paged.total), (vec!["Sara Ahmed"], 2));
}

pub fn search_is_a_literal_substring<H: Harness>() {
    let w = World::new(H::store());
    for name in ["100% Cotton", "100 Cotton", "a_b", "axb", r"back\slash", "O'Brien"] {
        create(&w, &w.admin, json!({ "name": name }));
        w.tick(1);
    }
    for (term, want) in [
        ("%", vec!["100% Cotton"]),
        ("0%", vec!["100% Cotton"]),
        ("_", vec!["a_b"]),
        ("a_b", vec!["a_b"]),
        (r"\", vec![r"back\slash"]),
        ("'", vec!["O'Brien"]),
    ] {
        let mut q = ListQuery::new(ConsumerSort::Name);
        q.direction = Direction::Asc;
        q.search = Some(term.to_string());
        let got = list_q(&w, &w.admin, &q);
        assert_eq!(names(&got), want, "search_term={term} is matched literally");
    }
}

pub fn list_filters<H: Harness>() {
    let w = World::new(H::store());
    let mk = |name: &str, ext: Option<&str>, meta: Value| {
        w.tick(1);
        let mut v = json!({"name": name, "external_metadata": meta});
        if let Some(e) = ext {
            v["external_id"] = json!(e);
        }
        create(&w, &w.admin, v).id
    };
    let m1 = mk("m1", Some("crm-1"), json!({"plan": "gold", "region": "north"}));
    let m2 = mk("m2", Some("CRM-1"), json!({"plan": "Gold"}));
    let m3 = mk("m3", Some("crm-10"), json!({"plan": "gold", "region": "south"}));
    let m4 = mk("m4", None, json!({"tier": "gold"}));
    let m5 = mk("m5", Some("crm-1x"), json!({"note": "a b&c"}));
    let _m6 = mk("m6", None, json!({}));
    let cases: &[(&str, Vec<ConsumerId>)] = &[
        ("external_id=crm-1", vec![m1]),
        ("external_id=CRM-1", vec![m2]),
        ("external_id=crm", vec![]),
        ("external_metadata.plan=gold", vec![m1, m3]),
        ("external_metadata.plan=Gold", vec![m2]),
        ("external_metadata.Plan=gold", vec![]),
        ("external_metadata.plan=gol", vec![]),
        ("external_metadata.plan=gold&external_metadata.region=north", vec![m1]),
        ("external_metadata.region=north&external_metadata.plan=gold", vec![m1]),
        ("external_metadata.plan=gold&external_metadata.tier=gold", vec![]),
        ("external_metadata.tier=gold", vec![m4]),
        ("external_metadata.note=a%20b%26c", vec![m5]),
        ("external_id=crm-1&external_metadata.plan=gold", vec![m1]),
        ("external_id=crm-10&external_metadata.plan=gold", vec![m3]),
        ("external_metadata.plan=gold&search_term=M3", vec![m3]),
    ];
    for (query, want) in cases {
        let got = list(&w, &w.admin, &format!("{query}&sort_direction=asc"));
        assert_eq!(&ids(&got), want, "{query}");
        assert_eq!(got.total, want.len() as u64, "total for {query}");
    }
    let paged = list(&w, &w.admin, "external_metadata.plan=gold&limit=1&sort_direction=asc");
    assert_eq!((ids(&paged), paged.total), (vec![m1], 2), "the total counts filtered rows");
}

pub fn metadata_filter_keys_are_literal<H: Harness>() {
    let w = World::new(H::store());
    let dotted = create(
        &w,
        &w.admin,
        json!({"name": "dotted", "external_metadata": {"a.b": "x", "it's": "ok", "say \"hi\"": "q", "[0]": "i", "$": "d", "ключ": "значение", "back\\slash": "b", "end\\": "e"}}),
    )
    .id;
    w.tick(1);
    let nested = create(&w, &w.admin, json!({"name": "nested", "external_metadata": {"a": {"b": "x"}}})).id;
    assert_eq!(
        ids(&list(&w, &w.admin, "external_metadata.a.b=x")),
        vec![dotted],
        "the key is 'a.b', not a path"
    );
    assert_eq!(ids(&list(&w, &w.admin, "external_metadata.it's=ok")), vec![dotted]);
    assert!(list(&w, &w.admin, "external_metadata.a=x").items.is_empty());
    for query in [
        "external_metadata.say%20%22hi%22=q",
        "external_metadata.%5B0%5D=i",
        "external_metadata.$=d",
        "external_metadata.%D0%BA%D0%BB%D1%8E%D1%87=%D0%B7%D0%BD%D0%B0%D1%87%D0%B5%D0%BD%D0%B8%D0%B5",
        "external_metadata.back%5Cslash=b",
        "external_metadata.end%5C=e",
    ] {
        assert_eq!(ids(&list(&w, &w.admin, query)), vec![dotted], "{query}");
    }
    let _ = nested;
}

pub fn branch_isolation<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let sb = w.in_branch(b.id);
    let theirs = create(
        &w,
        &sb,
        json!({"name": "Theirs", "phone_number": "+966501234567", "external_id": "x-1", "external_metadata": {"k": "v"}}),
    );
    let main = &w.admin;
    expect_code(w.billing.consumers().get(main, theirs.id), Code::NOT_FOUND);
    expect_code(
        w.billing.consumers().update(main, theirs.id, update_fields(json!({"name": "Mine"}))),
        Code::NOT_FOUND,
    );
    expect_code(w.billing.consumers().delete(main, theirs.id), Code::NOT_FOUND);
    for q in ["", "search_term=theirs", "external_id=x-1", "external_metadata.k=v", "search_term=501234"] {
        let p = list(&w, main, q);
        assert!(p.items.is_empty() && p.total == 0, "branch B's consumer leaked into branch A's list with '{q}'");
    }
    assert_eq!(w.billing.consumers().get(&sb, theirs.id).unwrap(), theirs, "untouched");
    assert_eq!(ids(&list(&w, &sb, "search_term=theirs")), vec![theirs.id]);
    let mine = create(&w, main, json!({"name": "Mine", "phone_number": "+966501234567"}));
    assert_eq!(ids(&list(&w, main, "")), vec![mine.id]);
    expect_code(w.billing.consumers().get(&sb, mine.id), Code::NOT_FOUND);
}

pub fn search_folds_non_ascii_case<H: Harness>() {
    let w = World::new(H::store());
    let emile = create(&w, &w.admin, json!({"name": "ÉMILE Zola", "alias": "Ça va"})).id;
    w.tick(1);
    let other = create(&w, &w.admin, json!({"name": "Emil Plain"})).id;
    // Both short terms (fewer than three characters) and long ones, in either case.
    for (term, want) in [
        ("émile", vec![emile]),
        ("Émile", vec![emile]),
        ("é", vec![emile]),
        ("ÇA", vec![emile]),
        ("ça", vec![emile]),
        ("emil", vec![other]),
    ] {
        let mut q = ListQuery::new(ConsumerSort::CreatedAt);
        q.search = Some(term.to_string());
        assert_eq!(ids(&list_q(&w, &w.admin, &q)), want, "search_term={term} (case-insensitive beyond ASCII)");
    }
}

pub fn metadata_filter_matches_scalars_by_json_text<H: Harness>() {
    let w = World::new(H::store());
    let typed = create(
        &w,
        &w.admin,
        json!({"name": "typed", "external_metadata": {"vip": true, "seats": 5, "ratio": 0.5, "off": false}}),
    )
    .id;
    w.tick(1);
    let texts = create(
        &w,
        &w.admin,
        json!({"name": "texts", "external_metadata": {"vip": "yes", "seats": "05", "ratio": "0.50", "off": "0"}}),
    )
    .id;
    let cases: &[(&str, Vec<ConsumerId>)] = &[
        ("external_metadata.vip=true", vec![typed]),
        ("external_metadata.vip=1", vec![]),
        ("external_metadata.off=false", vec![typed]),
        ("external_metadata.off=0", vec![texts]),
        ("external_metadata.seats=5", vec![typed]),
        ("external_metadata.seats=05", vec![texts]),
        ("external_metadata.ratio=0.5", vec![typed]),
        ("external_metadata.vip=yes", vec![texts]),
    ];
    for (query, want) in cases {
        assert_eq!(
            &ids(&list(&w, &w.admin, &format!("{query}&sort_direction=asc"))),
            want,
            "{query}: a JSON scalar matches its JSON text"
        );
    }
}

pub fn accepted_text_round_trips<H: Harness>() {
    let w = World::new(H::store());
    let samples = [
        "مرحبا بالعالم",
        "emoji 😀 and ZWJ 👩‍👩‍👧",
        "e\u{301}cole (combining)",
        "tab\tnew\nline\r",
        "nul \u{0} inside",
        "quote ' double \" backslash \\ percent % underscore _",
    ];
    let long = "ب".repeat(255);
    for (i, text) in samples.iter().copied().chain(std::iter::once(long.as_str())).enumerate() {
        let body = json!({"name": text, "alias": text, "comment": text, "external_id": text, "external_metadata": {"note": text, text: "key"}});
        // A value the request parser accepts must be stored and read back exactly; a value the
        // service cannot keep must be refused by the parser (422), never fail in the store.
        let Ok(f) = ConsumerFields::parse(&body, true) else { continue };
        let c = w
            .billing
            .consumers()
            .create(&w.admin, f)
            .unwrap_or_else(|e| panic!("sample {i} ({text:?}) was accepted by the parser but not stored: {e:?}"));
        let got = w.billing.consumers().get(&w.admin, c.id).unwrap();
        assert_eq!(got, c, "sample {i} ({text:?}) round trip");
    }
}

pub fn list_sorts_place_missing_values_first_ascending<H: Harness>() {
    let w = World::new(H::store());
    let with = create(
        &w,
        &w.admin,
        json!({"name": "With", "email": "with@example.com", "phone_number": "+966501234567", "external_id": "x"}),
    )
    .id;
    let without_a = create(&w, &w.admin, json!({"name": "Without A"})).id;
    let without_b = create(&w, &w.admin, json!({"name": "Without B"})).id;
    let (lo, hi) = if without_a < without_b {
        (without_a, without_b)
    } else {
        (without_b, without_a)
    };
    for field in ["email", "phone_number", "external_id"] {
        assert_eq!(
            ids(&list(&w, &w.admin, &format!("sort_field={field}&sort_direction=asc"))),
            vec![lo, hi, with],
            "{field} asc: missing values first"
        );
        assert_eq!(
            ids(&list(&w, &w.admin, &format!("sort_field={field}&sort_direction=desc"))),
            vec![with, hi, lo],
            "{field} desc: missing values last"
        );
    }
}

pub fn list_sorts_are_byte_order<H: Harness>() {
    let w = World::new(H::store());
    let given = ["alpha", "Bravo", "Zulu", "Émile", "_under", "10", "9", "a b", "ab", "Ab"];
    for n in given {
        create(&w, &w.admin, json!({ "name": n }));
    }
    let mut want: Vec<&str> = given.to_vec();
    want.sort();
    assert_eq!(
        names(&list(&w, &w.admin, "sort_field=name&sort_direction=asc&limit=100")),
        want,
        "names sort by their bytes (as Rust compares strings)"
    );
    want.reverse();
    assert_eq!(names(&list(&w, &w.admin, "sort_field=name&sort_direction=desc&limit=100")), want);
}
