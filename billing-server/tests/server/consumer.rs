//! /api/v2/consumers: create, read, update, soft delete, list (pagination, sorting, search,
//! filters) and every refusal, each proven to write nothing.

use crate::common::fixtures::*;
use crate::common::TestServer;
use hyper::Method;
use serde_json::{json, Value};

const ALL_FIELDS: [&str; 21] = [
    "id",
    "name",
    "phone_number",
    "email",
    "external_id",
    "consumer",
    "iban",
    "is_deleted",
    "alias",
    "created_at",
    "branch",
    "comment",
    "communication_methods",
    "preferred_language",
    "consumer_type",
    "address",
    "vat_number",
    "commercial_registration",
    "external_metadata",
    "last_invoice_activity",
    "updated_at",
];

fn create_returns_every_field(srv: &TestServer) {
    let before = chrono::Utc::now() - chrono::Duration::seconds(5);
    let c = consumer(srv, full_consumer("Sara Al-Harbi", 1));
    for f in ALL_FIELDS {
        assert!(c.get(f).is_some(), "ConsumerResponse.{f} missing: {c}");
    }
    assert!(uuid::Uuid::parse_str(c["id"].as_str().unwrap()).is_ok());
    assert_eq!(c["name"], "Sara Al-Harbi");
    assert_eq!(c["phone_number"], phone(1));
    assert_eq!(c["email"], "consumer1@example.com");
    assert_eq!(c["external_id"], "ext-1");
    assert_eq!(c["iban"], "SA0380000000608010167501");
    assert_eq!(c["alias"], "alias 1");
    assert_eq!(c["comment"], "a comment");
    assert_eq!(c["preferred_language"], "en", "returned lowercase");
    assert_eq!(c["communication_methods"], json!(["EMAIL", "SMS"]));
    assert_eq!(c["consumer_type"], "BUSINESS");
    assert_eq!(
        c["address"],
        json!({"address_line_1": "1 King Fahd Rd", "address_line_2": "Floor 2", "city": "Riyadh", "postal_code": "12211", "country": "SA"})
    );
    assert_eq!(c["vat_number"], "300000000000003");
    assert_eq!(c["commercial_registration"], "1010101010");
    assert_eq!(c["external_metadata"], json!({"plan": "gold", "n": "1"}));
    assert_eq!(c["is_deleted"], false);
    assert_eq!(c["branch"], json!({"id": srv.branch_id(), "name": "Main"}));
    assert_eq!(c["consumer"]["id"], c["id"]);
    assert_eq!(c["consumer"]["phone_number"], phone(1));
    assert_eq!(c["consumer"]["preferred_language"], "en");
    assert_eq!(c["last_invoice_activity"], Value::Null);
    let created = time_of(&c["created_at"]);
    assert!(created >= before && created <= chrono::Utc::now() + chrono::Duration::seconds(5), "{created}");
    // The same consumer comes back from GET.
    let got = ok(srv.get(&format!("/api/v2/consumers/{}", id_of(&c))));
    assert_eq!(got, c);
}

fn create_with_only_a_name_has_defaults(srv: &TestServer) {
    let c = consumer(srv, json!({"name": "  Just A Name  "}));
    assert_eq!(c["name"], "Just A Name", "names are trimmed");
    for f in [
        "phone_number",
        "email",
        "external_id",
        "iban",
        "alias",
        "comment",
        "address",
        "vat_number",
        "commercial_registration",
        "updated_at",
    ] {
        assert_eq!(c[f], Value::Null, "{f}");
    }
    assert_eq!(c["preferred_language"], "ar", "default language");
    assert_eq!(c["communication_methods"], json!([]));
    assert_eq!(c["consumer_type"], "INDIVIDUAL");
    assert_eq!(c["external_metadata"], json!({}));
    assert_eq!(c["is_deleted"], false);
}

fn preferred_language_any_case(srv: &TestServer) {
    for (i, (given, want)) in [("AR", "ar"), ("ar", "ar"), ("En", "en"), ("en", "en")].into_iter().enumerate() {
        let c = consumer(srv, json!({"name": format!("L{i}"), "preferred_language": given}));
        assert_eq!(c["preferred_language"], want, "{given}");
        assert_eq!(c["consumer"]["preferred_language"], want, "{given}");
    }
    let r = srv.unchanged(|| srv.post("/api/v2/consumers", json!({"name": "x", "preferred_language": "fr"})));
    assert_invalid(&r, json!(["body", "preferred_language"]), None);
}

fn create_refuses_bad_input(srv: &TestServer) {
    let cases: Vec<(Value, Value, &str)> = vec![
        (
            json!({"name": "x", "phone_number": "0501234567"}),
            json!(["body", "phone_number"]),
            "value_error",
        ),
        (json!({"name": "x", "phone_number": "+96650"}), json!(["body", "phone_number"]), "value_error"),
        (
            json!({"name": "x", "phone_number": "966501234567"}),
            json!(["body", "phone_number"]),
            "value_error",
        ),
        (json!({"name": "x", "email": "not-an-email"}), json!(["body", "email"]), "value_error"),
        (json!({"name": "x", "email": "a@"}), json!(["body", "email"]), "value_error"),
        (json!({"name": "x", "iban": "S".repeat(35)}), json!(["body", "iban"]), "string_too_long"),
        (json!({"phone_number": phone(9)}), json!(["body", "name"]), "missing"),
        (json!({"name": null}), json!(["body", "name"]), "missing"),
        (json!({"name": "   "}), json!(["body", "name"]), "string_too_short"),
        (json!({"name": 5}), json!(["body", "name"]), "string_type"),
        (json!({"name": "x", "email": 7}), json!(["body", "email"]), "string_type"),
        (
            json!({"name": "x", "phone_number": 966501234567u64}),
            json!(["body", "phone_number"]),
            "string_type",
        ),
        (
            json!({"name": "x", "communication_methods": "EMAIL"}),
            json!(["body", "communication_methods"]),
            "list_type",
        ),
        (
            json!({"name": "x", "communication_methods": ["EMAIL", "FAX"]}),
            json!(["body", "communication_methods", 1]),
            "enum",
        ),
        (json!({"name": "x", "consumer_type": "PERSON"}), json!(["body", "consumer_type"]), "enum"),
        (
            json!({"name": "x", "external_metadata": "plan=gold"}),
            json!(["body", "external_metadata"]),
            "dict_type",
        ),
        (
            json!({"name": "x", "address": {"address_line_1": "a", "country": "SA"}}),
            json!(["body", "address", "city"]),
            "missing",
        ),
        (json!({"name": "x", "address": "Riyadh"}), json!(["body", "address"]), "model_attributes_type"),
        (json!(["name"]), json!(["body"]), "model_attributes_type"),
    ];
    for (body, loc, kind) in cases {
        let r = srv.unchanged(|| srv.post("/api/v2/consumers", body.clone()));
        assert_invalid(&r, loc, Some(kind));
    }
    // Every problem of one request is reported at once.
    let r = srv.unchanged(|| srv.post("/api/v2/consumers", json!({"phone_number": "123", "email": "nope"})));
    let locs = r.locs();
    for want in [json!(["body", "name"]), json!(["body", "phone_number"]), json!(["body", "email"])] {
        assert!(locs.contains(&want), "{want} in {locs:?}");
    }
    // An empty body is a missing body.
    let r = srv.unchanged(|| srv.raw(Method::POST, "/api/v2/consumers", &[("x-api-key", &srv.key)], None));
    assert_eq!(r.status, 422, "{}", r.text);
    // A 34-character IBAN is fine.
    let c = consumer(srv, json!({"name": "x", "iban": "S".repeat(34)}));
    assert_eq!(c["iban"], "S".repeat(34));
}

fn duplicate_phone_or_email_is_refused(srv: &TestServer) {
    let a = simple_consumer(srv, "A", 1);
    let r = srv.unchanged(|| srv.post("/api/v2/consumers", json!({"name": "B", "phone_number": phone(1)})));
    assert_error(&r, 422, "DUPLICATE_CONSUMER");
    let r = srv.unchanged(|| srv.post("/api/v2/consumers", json!({"name": "B", "email": "c1@example.com"})));
    assert_error(&r, 422, "DUPLICATE_CONSUMER");
    let r = srv.unchanged(|| srv.post("/api/v2/consumers", json!({"name": "B", "email": "C1@Example.COM"})));
    assert_error(&r, 422, "DUPLICATE_CONSUMER");
    let r = srv.unchanged(|| srv.post("/api/v2/consumers", json!({"name": "B", "phone_number": phone(2), "email": "c1@example.com"})));
    assert_error(&r, 422, "DUPLICATE_CONSUMER");

    // Update onto another consumer's phone or e-mail.
    let b = simple_consumer(srv, "B", 2);
    let r = srv.unchanged(|| srv.put(&format!("/api/v2/consumers/{b}"), json!({"phone_number": phone(1)})));
    assert_error(&r, 422, "DUPLICATE_CONSUMER");
    let r = srv.unchanged(|| srv.put(&format!("/api/v2/consumers/{b}"), json!({"email": "C1@example.com"})));
    assert_error(&r, 422, "DUPLICATE_CONSUMER");
    // Keeping one's own phone and e-mail is not a conflict.
    let r = ok(srv.put(
        &format!("/api/v2/consumers/{a}"),
        json!({"phone_number": phone(1), "email": "c1@example.com", "alias": "same"}),
    ));
    assert_eq!(r["alias"], "same");
    // The refused update left B as it was.
    let got = ok(srv.get(&format!("/api/v2/consumers/{b}")));
    assert_eq!((got["phone_number"].clone(), got["email"].clone()), (json!(phone(2)), json!("c2@example.com")));
}

fn get_unknown_or_malformed_id(srv: &TestServer) {
    let r = srv.get(&format!("/api/v2/consumers/{}", random_id()));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.get("/api/v2/consumers/not-a-uuid");
    assert_invalid(&r, json!(["path", "consumer_id"]), Some("uuid_parsing"));
    let r = srv.unchanged(|| srv.put("/api/v2/consumers/123", json!({"name": "x"})));
    assert_invalid(&r, json!(["path", "consumer_id"]), None);
    let r = srv.unchanged(|| srv.delete("/api/v2/consumers/123"));
    assert_invalid(&r, json!(["path", "consumer_id"]), None);
    let r = srv.unchanged(|| srv.put(&format!("/api/v2/consumers/{}", random_id()), json!({"name": "x"})));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.delete(&format!("/api/v2/consumers/{}", random_id())));
    assert_error(&r, 404, "NOT_FOUND");
}

fn update_is_partial_and_null_means_not_given(srv: &TestServer) {
    let c = consumer(srv, full_consumer("Original", 1));
    let id = id_of(&c);
    let path = format!("/api/v2/consumers/{id}");

    let u = ok(srv.put(&path, json!({"alias": "New alias"})));
    assert_eq!(u["alias"], "New alias");
    for f in [
        "name",
        "phone_number",
        "email",
        "external_id",
        "iban",
        "comment",
        "preferred_language",
        "communication_methods",
        "consumer_type",
        "address",
        "external_metadata",
        "created_at",
        "id",
    ] {
        assert_eq!(u[f], c[f], "{f} unchanged by a partial update");
    }
    assert!(u["updated_at"].is_string(), "updated_at set: {u}");

    // Explicit nulls are "not given".
    let u2 = ok(srv.put(
        &path,
        json!({"name": null, "email": null, "phone_number": null, "iban": null, "address": null, "external_metadata": null, "communication_methods": null}),
    ));
    for f in [
        "name",
        "phone_number",
        "email",
        "iban",
        "address",
        "external_metadata",
        "communication_methods",
        "alias",
    ] {
        assert_eq!(u2[f], u[f], "{f} kept when sent as null");
    }

    // Every field can change.
    let u3 = ok(srv.put(
        &path,
        json!({
            "name": "Renamed",
            "phone_number": "+14155552671",
            "email": "new@example.org",
            "external_id": "ext-new",
            "iban": "GB82WEST12345698765432",
            "comment": "changed",
            "preferred_language": "AR",
            "communication_methods": ["WHATSAPP"],
            "consumer_type": "INDIVIDUAL",
            "address": {"address_line_1": "2 Olaya St", "city": "Jeddah", "country": "SA"},
            "vat_number": "311111111111113",
            "commercial_registration": "2020202020",
            "external_metadata": {"plan": "silver"},
        }),
    ));
    assert_eq!(u3["name"], "Renamed");
    assert_eq!(u3["phone_number"], "+14155552671");
    assert_eq!(u3["email"], "new@example.org");
    assert_eq!(u3["external_id"], "ext-new");
    assert_eq!(u3["iban"], "GB82WEST12345698765432");
    assert_eq!(u3["comment"], "changed");
    assert_eq!(u3["preferred_language"], "ar");
    assert_eq!(u3["communication_methods"], json!(["WHATSAPP"]));
    assert_eq!(u3["consumer_type"], "INDIVIDUAL");
    assert_eq!(
        u3["address"],
        json!({"address_line_1": "2 Olaya St", "address_line_2": null, "city": "Jeddah", "postal_code": null, "country": "SA"})
    );
    assert_eq!(u3["vat_number"], "311111111111113");
    assert_eq!(u3["commercial_registration"], "2020202020");
    assert_eq!(u3["external_metadata"], json!({"plan": "silver"}));
    assert_eq!(u3["created_at"], c["created_at"]);
    assert_eq!(ok(srv.get(&path)), u3, "GET shows the update");

    // The old phone and e-mail are free again.
    consumer(srv, json!({"name": "Reuser", "phone_number": phone(1), "email": "consumer1@example.com"}));

    // An empty update changes nothing but is accepted.
    let u4 = ok(srv.put(&path, json!({})));
    assert_eq!(u4["name"], "Renamed");
}

fn update_refuses_bad_input(srv: &TestServer) {
    let id = simple_consumer(srv, "A", 1);
    let path = format!("/api/v2/consumers/{id}");
    let cases: Vec<(Value, Value, &str)> = vec![
        (json!({"phone_number": "0501234567"}), json!(["body", "phone_number"]), "value_error"),
        (json!({"email": "bad@"}), json!(["body", "email"]), "value_error"),
        (json!({"iban": "X".repeat(35)}), json!(["body", "iban"]), "string_too_long"),
        (json!({"name": ""}), json!(["body", "name"]), "string_too_short"),
        (json!({"name": 1}), json!(["body", "name"]), "string_type"),
        (
            json!({"communication_methods": ["PIGEON"]}),
            json!(["body", "communication_methods", 0]),
            "enum",
        ),
        (json!({"preferred_language": "de"}), json!(["body", "preferred_language"]), "value_error"),
        (json!("name"), json!(["body"]), "model_attributes_type"),
    ];
    for (body, loc, kind) in cases {
        let r = srv.unchanged(|| srv.put(&path, body.clone()));
        assert_invalid(&r, loc, Some(kind));
    }
}

fn delete_is_soft(srv: &TestServer) {
    let id = simple_consumer(srv, "Gone", 1);
    let keep = simple_consumer(srv, "Kept", 2);
    let path = format!("/api/v2/consumers/{id}");
    let r = srv.delete(&path);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({}), "empty success body");

    let got = ok(srv.get(&path));
    assert_eq!(got["is_deleted"], true);
    assert_eq!(got["name"], "Gone");
    assert_eq!(ids(&srv.get("/api/v2/consumers")), vec![keep.clone()], "the list leaves deleted consumers out");
    assert_eq!(ids(&srv.get(&format!("/api/v2/consumers?search_term={}", enc("Gone")))), Vec::<String>::new());

    // Its phone and e-mail are free again.
    let again = simple_consumer(srv, "Gone Again", 1);
    assert_ne!(again, id);

    // A deleted consumer can be neither updated nor deleted again.
    let r = srv.unchanged(|| srv.put(&path, json!({"name": "Back"})));
    assert_error(&r, 404, "NOT_FOUND");
    let r = srv.unchanged(|| srv.delete(&path));
    assert_error(&r, 404, "NOT_FOUND");
    assert_eq!(ok(srv.get(&path)), got, "the refused calls did not touch the deleted consumer");
}

/// Three consumers whose orderings differ per field.
fn three(srv: &TestServer) -> (String, String, String) {
    let mk = |name: &str, email: &str, n: u32, ext: &str, alias: &str, iban: &str, meta: Value| {
        id_of(&consumer(
            srv,
            json!({"name": name, "email": email, "phone_number": phone(n), "external_id": ext, "alias": alias, "iban": iban, "external_metadata": meta}),
        ))
    };
    let a = mk(
        "Alpha Person",
        "zed@example.com",
        3,
        "ext-2",
        "Shorty",
        "SA0380000000608010167519",
        json!({"plan": "gold", "tier": "1"}),
    );
    let b = mk(
        "Bravo Person",
        "mike@example.com",
        1,
        "ext-3",
        "Bee",
        "DE89370400440532013000",
        json!({"plan": "Gold", "tier": "1"}),
    );
    let c = mk(
        "Charlie Person",
        "adam@example.com",
        2,
        "ext-1",
        "Cee",
        "GB29NWBK60161331926819",
        json!({"plan": "gold", "tier": "2", "region": "east"}),
    );
    (a, b, c)
}

fn list_sorts_by_each_field(srv: &TestServer) {
    let (a, b, c) = three(srv);
    let list = |q: &str| ids(&srv.get(&format!("/api/v2/consumers?{q}")));
    assert_eq!(list(""), vec![c.clone(), b.clone(), a.clone()], "default: created_at desc");
    assert_eq!(list("sort_field=created_at&sort_direction=asc"), vec![a.clone(), b.clone(), c.clone()]);
    assert_eq!(list("sort_field=created_at&sort_direction=desc"), vec![c.clone(), b.clone(), a.clone()]);
    assert_eq!(list("sort_field=name&sort_direction=asc"), vec![a.clone(), b.clone(), c.clone()]);
    assert_eq!(list("sort_field=name&sort_direction=desc"), vec![c.clone(), b.clone(), a.clone()]);
    assert_eq!(list("sort_field=name"), vec![c.clone(), b.clone(), a.clone()], "direction defaults to desc");
    assert_eq!(list("sort_field=email&sort_direction=asc"), vec![c.clone(), b.clone(), a.clone()]);
    assert_eq!(list("sort_field=email&sort_direction=desc"), vec![a.clone(), b.clone(), c.clone()]);
    assert_eq!(list("sort_field=phone_number&sort_direction=asc"), vec![b.clone(), c.clone(), a.clone()]);
    assert_eq!(list("sort_field=phone_number&sort_direction=desc"), vec![a.clone(), c.clone(), b.clone()]);
    assert_eq!(list("sort_field=external_id&sort_direction=asc"), vec![c.clone(), a.clone(), b.clone()]);
    assert_eq!(list("sort_field=external_id&sort_direction=desc"), vec![b.clone(), a.clone(), c.clone()]);
    assert_eq!(
        list("sort_field=name&sort_direction=ASC"),
        vec![a.clone(), b.clone(), c.clone()],
        "direction in any case"
    );

    for q in ["sort_field=iban", "sort_field=Name", "sort_field="] {
        let r = srv.get(&format!("/api/v2/consumers?{q}"));
        assert_invalid(&r, json!(["query", "sort_field"]), Some("enum"));
    }
    for q in ["sort_direction=up", "sort_direction="] {
        let r = srv.get(&format!("/api/v2/consumers?{q}"));
        assert_invalid(&r, json!(["query", "sort_direction"]), Some("enum"));
    }
}

fn list_search_term(srv: &TestServer) {
    let (a, b, c) = three(srv);
    let search = |t: &str| {
        let mut v = ids(&srv.get(&format!("/api/v2/consumers?sort_field=name&sort_direction=asc&search_term={}", enc(t))));
        v.sort();
        v
    };
    let set = |v: &[&String]| {
        let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(search("alpha"), set(&[&a]), "name, case-insensitive");
    assert_eq!(search("PERSON"), set(&[&a, &b, &c]), "partial name");
    assert_eq!(search("MIKE@EXAMPLE"), set(&[&b]), "partial e-mail, case-insensitive");
    assert_eq!(search("zed@example.com"), set(&[&a]), "exact e-mail");
    assert_eq!(search(&phone(2)), set(&[&c]), "exact phone");
    assert_eq!(search("0000001"), set(&[&b]), "partial phone");
    assert_eq!(search("+96650"), set(&[&a, &b, &c]), "phone prefix with +");
    assert_eq!(search("shor"), set(&[&a]), "alias");
    assert_eq!(search("BEE"), set(&[&b]), "alias, case-insensitive");
    assert_eq!(search("ext-1"), set(&[&c]), "external id");
    assert_eq!(search("EXT-"), set(&[&a, &b, &c]), "partial external id, case-insensitive");
    assert_eq!(search("SA0380000000608010167519"), set(&[&a]), "exact IBAN");
    assert_eq!(search("DE89370400440532013000"), set(&[&b]), "exact IBAN");
    assert_eq!(search("DE8937040044"), set(&[]), "IBAN matches only exactly");
    assert_eq!(search("nobody"), set(&[]));
    assert_eq!(search("%"), set(&[]), "LIKE wildcards are literal");
    assert_eq!(search("_"), set(&[]), "LIKE wildcards are literal");
    assert_eq!(search(""), set(&[&a, &b, &c]), "empty search is no search");
}

fn list_filters_by_external_id_and_metadata(srv: &TestServer) {
    let (a, b, c) = three(srv);
    let list = |q: &str| ids(&srv.get(&format!("/api/v2/consumers?sort_field=name&sort_direction=asc&{q}")));
    assert_eq!(list("external_id=ext-2"), vec![a.clone()]);
    assert_eq!(list("external_id=ext"), Vec::<String>::new(), "exact, not partial");
    assert_eq!(list("external_id=EXT-2"), Vec::<String>::new(), "exact, case-sensitive");
    assert_eq!(list("external_metadata.plan=gold"), vec![a.clone(), c.clone()], "exact and case-sensitive");
    assert_eq!(list("external_metadata.plan=Gold"), vec![b.clone()]);
    assert_eq!(list("external_metadata.plan=gol"), Vec::<String>::new(), "not partial");
    assert_eq!(list("external_metadata.tier=1"), vec![a.clone(), b.clone()]);
    assert_eq!(
        list("external_metadata.plan=gold&external_metadata.tier=1"),
        vec![a.clone()],
        "several keys: AND"
    );
    assert_eq!(list("external_metadata.plan=gold&external_metadata.tier=2"), vec![c.clone()]);
    assert_eq!(list("external_metadata.plan=Gold&external_metadata.tier=2"), Vec::<String>::new());
    assert_eq!(list("external_metadata.region=east"), vec![c.clone()]);
    assert_eq!(list("external_metadata.missing=x"), Vec::<String>::new());
    assert_eq!(
        list("external_metadata.plan=gold&search_term=charlie"),
        vec![c.clone()],
        "filters and search combine"
    );

    // Pagination reflects the filtered results.
    let r = srv.get("/api/v2/consumers?external_metadata.plan=gold&limit=1");
    assert_eq!(
        r.body["pagination"],
        json!({"total_count": 1, "max_page": 2, "current_page": 1, "limit": 1, "has_next_page": true, "has_previous_page": false})
    );
    let r = srv.get("/api/v2/consumers?external_metadata.plan=gold&limit=1&page=2");
    assert_eq!(
        r.body["pagination"],
        json!({"total_count": 1, "max_page": 2, "current_page": 2, "limit": 1, "has_next_page": false, "has_previous_page": true})
    );
    let r = srv.get("/api/v2/consumers?external_id=nothing");
    assert_eq!(r.body["data"], json!([]));
    assert_eq!(
        r.body["pagination"],
        json!({"total_count": 0, "max_page": 1, "current_page": 1, "limit": 10, "has_next_page": false, "has_previous_page": false})
    );
}

fn list_pagination(srv: &TestServer) {
    let mut all = Vec::new();
    for n in 0..12 {
        all.push(simple_consumer(srv, &format!("Person {n:02}"), n));
    }
    let page = |q: &str| srv.get(&format!("/api/v2/consumers?sort_field=created_at&sort_direction=asc&{q}"));

    let r = page("");
    assert_eq!(ids(&r), all[..10].to_vec(), "default limit is 10");
    assert_eq!(
        r.body["pagination"],
        json!({"total_count": 10, "max_page": 2, "current_page": 1, "limit": 10, "has_next_page": true, "has_previous_page": false})
    );

    let r = page("limit=5&page=1");
    assert_eq!(ids(&r), all[..5].to_vec());
    assert_eq!(
        r.body["pagination"],
        json!({"total_count": 5, "max_page": 3, "current_page": 1, "limit": 5, "has_next_page": true, "has_previous_page": false})
    );
    let r = page("limit=5&page=2");
    assert_eq!(ids(&r), all[5..10].to_vec());
    assert_eq!(
        r.body["pagination"],
        json!({"total_count": 5, "max_page": 3, "current_page": 2, "limit": 5, "has_next_page": true, "has_previous_page": true})
    );
    let r = page("limit=5&page=3");
    assert_eq!(ids(&r), all[10..].to_vec());
    assert_eq!(
        r.body["pagination"],
        json!({"total_count": 2, "max_page": 3, "current_page": 3, "limit": 5, "has_next_page": false, "has_previous_page": true}),
        "total_count counts the page"
    );
    let r = page("limit=5&page=4");
    assert_eq!(ids(&r), Vec::<String>::new());
    assert_eq!(r.body["pagination"]["total_count"], 0);
    assert_eq!(r.body["pagination"]["max_page"], 3);
    assert_eq!(r.body["pagination"]["has_next_page"], false);

    // `size` is an alias of `limit`; `limit` wins when both are given.
    let r = page("size=4");
    assert_eq!(ids(&r), all[..4].to_vec());
    assert_eq!(r.body["pagination"]["limit"], 4);
    assert_eq!(r.body["pagination"]["max_page"], 3);
    let r = page("size=4&limit=6");
    assert_eq!(r.body["pagination"]["limit"], 6);

    // The limit is capped at 100 and echoed capped.
    let r = page("limit=500");
    assert_eq!(ids(&r), all);
    assert_eq!(
        r.body["pagination"],
        json!({"total_count": 12, "max_page": 1, "current_page": 1, "limit": 100, "has_next_page": false, "has_previous_page": false})
    );
    let r = page("size=101");
    assert_eq!(r.body["pagination"]["limit"], 100);
    let r = page("limit=100");
    assert_eq!(r.body["pagination"]["limit"], 100);

    for (q, loc) in [
        ("limit=0", "limit"),
        ("limit=-1", "limit"),
        ("limit=abc", "limit"),
        ("limit=2.5", "limit"),
        ("limit=", "limit"),
        ("size=0", "size"),
        ("page=0", "page"),
        ("page=-2", "page"),
        ("page=x", "page"),
        ("page=1.5", "page"),
    ] {
        let r = page(q);
        assert_invalid(&r, json!(["query", loc]), None);
    }
    // Several bad parameters are all reported.
    let r = page("page=0&limit=0");
    assert_eq!(r.locs(), vec![json!(["query", "page"]), json!(["query", "limit"])]);
}

fn list_shows_only_the_branch_and_the_envelope_shape(srv: &TestServer) {
    let id = simple_consumer(srv, "Mine", 1);
    let r = srv.get("/api/v2/consumers");
    assert_eq!(r.status, 200);
    assert!(r.body["data"].is_array() && r.body["pagination"].is_object(), "{}", r.text);
    let item = &r.body["data"][0];
    for f in ALL_FIELDS {
        assert!(item.get(f).is_some(), "list item {f}");
    }
    assert_eq!(item["id"], json!(id));
    assert_eq!(ok(srv.get(&format!("/api/v2/consumers/{id}"))), *item, "list items are full ConsumerResponses");
}

fn unknown_query_parameters_are_ignored(srv: &TestServer) {
    let id = simple_consumer(srv, "A", 1);
    assert_eq!(ids(&srv.get("/api/v2/consumers?whatever=1&foo")), vec![id]);
}

fn search_follows_updates_and_deletes(srv: &TestServer) {
    let id = id_of(&consumer(srv, json!({"name": "Khalid Rahman", "email": "khalid@example.com", "alias": "KR"})));
    let other = simple_consumer(srv, "Someone Else", 2);
    let search = |t: &str| ids(&srv.get(&format!("/api/v2/consumers?search_term={}", enc(t))));
    assert_eq!(search("khalid"), vec![id.clone()]);
    ok(srv.put(
        &format!("/api/v2/consumers/{id}"),
        json!({"name": "Faisal Rahman", "email": "faisal@example.com", "alias": "FR"}),
    ));
    assert_eq!(search("faisal"), vec![id.clone()], "the new name and e-mail are searchable");
    assert_eq!(search("khalid"), Vec::<String>::new(), "the old name and e-mail are not");
    assert_eq!(search("FR"), vec![id.clone()], "short terms too");
    assert_eq!(search("KR"), Vec::<String>::new());
    ok(srv.delete(&format!("/api/v2/consumers/{id}")));
    assert_eq!(search("faisal"), Vec::<String>::new(), "deleted consumers are not found");
    assert_eq!(search("else"), vec![other]);
}

fn search_is_case_insensitive_beyond_ascii(srv: &TestServer) {
    let id = id_of(&consumer(srv, json!({"name": "École Émile", "alias": "Ñu"})));
    simple_consumer(srv, "Plain Ascii", 1);
    for term in ["école", "ÉCOLE", "émile", "Émi", "éc", "ÉC", "ñu", "ÑU", "ñ"] {
        assert_eq!(
            ids(&srv.get(&format!("/api/v2/consumers?search_term={}", enc(term)))),
            vec![id.clone()],
            "search_term={term}"
        );
    }
}

fn metadata_filter_on_non_string_values(srv: &TestServer) {
    let id = id_of(&consumer(
        srv,
        json!({"name": "Meta", "external_metadata": {"vip": true, "count": 5, "ratio": 1.5, "a.b": "dotted", "say \"hi\"": "quoted"}}),
    ));
    simple_consumer(srv, "Other", 1);
    for q in [
        "external_metadata.count=5",
        "external_metadata.ratio=1.5",
        "external_metadata.a.b=dotted",
        &format!("external_metadata.{}=quoted", enc("say \"hi\"")),
        "external_metadata.vip=true",
    ] {
        let r = srv.get(&format!("/api/v2/consumers?{q}"));
        assert_eq!(ids(&r), vec![id.clone()], "{q}");
    }
    assert_eq!(ids(&srv.get("/api/v2/consumers?external_metadata.vip=false")), Vec::<String>::new());
    assert_eq!(
        ids(&srv.get("/api/v2/consumers?external_metadata.vip=1")),
        Vec::<String>::new(),
        "true is not 1"
    );
    assert_eq!(ids(&srv.get("/api/v2/consumers?external_metadata.count=6")), Vec::<String>::new());
}

fn text_length_limits(srv: &TestServer) {
    let c = consumer(srv, json!({"name": "n".repeat(255), "alias": "a".repeat(255), "external_id": "e".repeat(255)}));
    assert_eq!(c["name"].as_str().unwrap().len(), 255);
    for f in ["name", "alias", "external_id", "vat_number", "commercial_registration"] {
        let mut body = json!({"name": "ok"});
        body[f] = json!("x".repeat(256));
        let r = srv.unchanged(|| srv.post("/api/v2/consumers", body.clone()));
        assert_invalid(&r, json!(["body", f]), Some("string_too_long"));
    }
}

fn concurrent_duplicates_are_refused_cleanly(srv: &TestServer) {
    let requests = (0..8)
        .map(|i| {
            (
                Method::POST,
                "/api/v2/consumers".to_string(),
                Some(json!({"name": format!("Racer {i}"), "phone_number": phone(77)})),
            )
        })
        .collect();
    let results = concurrently(srv, requests);
    let created: Vec<_> = results.iter().filter(|(s, _)| *s == 200).collect();
    assert_eq!(created.len(), 1, "exactly one wins: {results:?}");
    for (status, body) in results.iter().filter(|(s, _)| *s != 200) {
        assert_eq!((*status, body["error"]["code"].as_str()), (422, Some("DUPLICATE_CONSUMER")), "{body}");
    }
    let r = srv.get(&format!("/api/v2/consumers?search_term={}", enc(&phone(77))));
    assert_eq!(ids(&r), vec![id_of(&created[0].1)]);

    let requests = (0..8)
        .map(|i| {
            (
                Method::POST,
                "/api/v2/consumers".to_string(),
                Some(json!({"name": format!("Mailer {i}"), "email": if i % 2 == 0 { "same@example.com" } else { "SAME@Example.com" }})),
            )
        })
        .collect();
    let results = concurrently(srv, requests);
    assert_eq!(results.iter().filter(|(s, _)| *s == 200).count(), 1, "{results:?}");
    assert!(
        results.iter().all(|(s, b)| *s == 200 || b["error"]["code"] == "DUPLICATE_CONSUMER"),
        "{results:?}"
    );
}

fn pagination_is_stable_when_sort_keys_tie(srv: &TestServer) {
    let mut all = Vec::new();
    for n in 0..15 {
        all.push(simple_consumer(srv, "Same Name", n));
    }
    all.sort();
    for dir in ["asc", "desc"] {
        let mut seen = Vec::new();
        for page in 1..=4 {
            seen.extend(ids(
                &srv.get(&format!("/api/v2/consumers?sort_field=name&sort_direction={dir}&limit=4&page={page}"))
            ));
        }
        assert_eq!(seen.len(), 15, "{dir}: {seen:?}");
        seen.sort();
        assert_eq!(seen, all, "{dir}: every consumer exactly once across pages");
    }
}

http_tests!(
    create_returns_every_field,
    create_with_only_a_name_has_defaults,
    preferred_language_any_case,
    create_refuses_bad_input,
    duplicate_phone_or_email_is_refused,
    get_unknown_or_malformed_id,
    update_is_partial_and_null_means_not_given,
    update_refuses_bad_input,
    delete_is_soft,
    list_sorts_by_each_field,
    list_search_term,
    list_filters_by_external_id_and_metadata,
    list_pagination,
    list_shows_only_the_branch_and_the_envelope_shape,
    unknown_query_parameters_are_ignored,
    search_follows_updates_and_deletes,
    search_is_case_insensitive_beyond_ascii,
    metadata_filter_on_non_string_values,
    text_length_limits,
    concurrent_duplicates_are_refused_cleanly,
    pagination_is_stable_when_sort_keys_tie,
);

// Paths that reach the store differently on PostgreSQL (see `postgres_smoke!`).
postgres_smoke!(
    create_returns_every_field,
    update_is_partial_and_null_means_not_given,
    delete_is_soft,
    list_search_term,
    list_filters_by_external_id_and_metadata,
    search_is_case_insensitive_beyond_ascii,
    concurrent_duplicates_are_refused_cleanly,
);
