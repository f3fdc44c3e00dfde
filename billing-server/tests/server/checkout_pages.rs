//! The hosted checkout pages (GET /pay/{short_id}, /pay/{short_id}/result, /pay/assets/…,
//! /embed.js), no credentials: Arabic and English, what is shown and asked, the security headers
//! (CSP, nosniff, framing only when embedded), escaping of stored values, the pages of links that
//! take no payment, the 404 page and the result page.

use crate::common::fixtures::*;
use crate::common::{Resp, TestServer};
use crate::payment_links::{create_link, link_body, link_path};
use hyper::Method;
use serde_json::{json, Value};

/// A GET with no credentials at all.
pub fn page(srv: &TestServer, path: &str) -> Resp {
    srv.raw(Method::GET, path, &[], None)
}

pub fn short(l: &Value) -> &str {
    l["short_id"].as_str().unwrap()
}

/// A link of two products (one with a 10 % coupon on the link) at `price` each.
pub fn link(srv: &TestServer, name: &str, extra: Value) -> Value {
    let a = id_of(&one_off_product(srv, "Gym pass", "200.00"));
    let b = id_of(&one_off_product(srv, "Towel", "100.00"));
    let ten = id_of(&percent_coupon(srv, "TEN", "10"));
    let mut body = link_body(&[(&a, 2), (&b, 1)]);
    body["name"] = json!(name);
    body["description"] = json!("A year of gym");
    body["coupons"] = json!([ten]);
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    create_link(srv, body)
}

fn header<'a>(r: &'a Resp, name: &str) -> &'a str {
    r.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

fn assert_page_headers(r: &Resp, framed: bool) {
    assert_eq!(header(r, "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(r, "x-content-type-options"), "nosniff");
    let csp = header(r, "content-security-policy");
    for part in [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(part), "{part} missing from {csp}");
    }
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{csp}");
    if framed {
        assert!(csp.contains("frame-ancestors *"), "{csp}");
        assert_eq!(header(r, "x-frame-options"), "");
    } else {
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert_eq!(header(r, "x-frame-options"), "DENY");
    }
    assert_eq!(header(r, "cache-control"), "no-store");
}

/// No inline script: every `<script` has a `src` on this server, and no event-handler attributes.
fn assert_no_inline_script(html: &str) {
    for (i, _) in html.match_indices("<script") {
        let tag = &html[i..i + html[i..].find('>').unwrap()];
        assert!(tag.contains("src=\"/pay/assets/"), "inline or foreign script: {tag}");
    }
    assert!(!html.contains(" onclick=") && !html.contains(" onload=") && !html.contains("javascript:"));
    assert!(!html.contains("http://") && !html.contains("https://"), "nothing is loaded from elsewhere");
}

fn arabic_and_english(srv: &TestServer) {
    let l = link(srv, "Gym membership", json!({}));
    for path in [format!("/pay/{}", short(&l)), format!("/pay/{}?language=ar", short(&l))] {
        let r = page(srv, &path);
        assert_eq!(r.status, 200, "{}", r.text);
        assert_page_headers(&r, false);
        assert!(r.text.contains("<html lang=\"ar\" dir=\"rtl\">"), "{}", r.text);
        for s in [
            "ملخص الطلب",
            "الإجمالي",
            "رقم البطاقة",
            "ضريبة القيمة المضافة",
            "ادفع",
            "data-msg=\"رقم البطاقة غير صحيح.\"",
        ] {
            assert!(r.text.contains(s), "{s} missing");
        }
    }
    let r = page(srv, &format!("/pay/{}?language=en", short(&l)));
    assert_eq!(r.status, 200);
    assert_page_headers(&r, false);
    assert_no_inline_script(&r.text);
    let t = &r.text;
    assert!(t.contains("<html lang=\"en\" dir=\"ltr\">"));
    // The link's name, description, items (name, quantity, amount), coupon, VAT and total.
    for s in [
        "<h1>Gym membership</h1>",
        "A year of gym",
        "<td>Gym pass</td><td class=\"num\">2</td><td class=\"num\"><bdi>400.00 SAR</bdi></td>",
        "<td>Towel</td><td class=\"num\">1</td><td class=\"num\"><bdi>100.00 SAR</bdi></td>",
        "Subtotal</dt><dd><bdi>500.00 SAR</bdi>",
        "Discount (TEN)</dt><dd><bdi>−50.00 SAR</bdi>",
        "VAT (included)</dt><dd><bdi>58.70 SAR</bdi>",
        "Total</dt><dd><bdi>450.00 SAR</bdi>",
        "Pay <bdi>450.00 SAR</bdi>",
    ] {
        assert!(t.contains(s), "{s} missing from {t}");
    }
    // The card form and the wallet, with a label for every input.
    for id in [
        "method-number",
        "method-name",
        "method-expiry_month",
        "method-expiry_year",
        "method-cvc",
        "method-phone_number",
    ] {
        assert!(t.contains(&format!("<label for=\"{id}\">")), "no label for {id}");
        assert!(t.contains(&format!("<input id=\"{id}\"")), "no input {id}");
    }
    // Installments: 450 SAR allows 2, 3 and 4 parts (100 SAR minimum), each part shown.
    for s in [
        "value=\"2\"",
        "225.00 + 225.00 SAR",
        "150.00 + 150.00 + 150.00 SAR",
        "112.50 + 112.50 + 112.50 + 112.50 SAR",
    ] {
        assert!(t.contains(s), "{s} missing");
    }
    assert!(t.contains("action=\"/pay/") && t.contains("/attempts\""));
    assert!(!t.contains(&srv.key) && !t.contains("x-api-key"), "no credential in the page");
    // Embedded: framing allowed.
    let r = page(srv, &format!("/pay/{}?language=en&embed=true", short(&l)));
    assert_page_headers(&r, true);
    assert!(r.text.contains("data-embed=\"true\""));
}

fn installment_options_follow_the_rules(srv: &TestServer) {
    // 350 SAR: 4 × 87.50 is below the minimum, so 2 and 3 only.
    let p = id_of(&one_off_product(srv, "Thing", "350.00"));
    let l = create_link(srv, link_body(&[(&p, 1)]));
    let t = page(srv, &format!("/pay/{}?language=en", short(&l))).text;
    assert!(t.contains("id=\"installments-2\"") && t.contains("id=\"installments-3\""));
    assert!(!t.contains("id=\"installments-4\""));
    // A link that does not allow installments offers none.
    let mut b = link_body(&[(&p, 1)]);
    b["payment_methods"] = json!({"visa": true, "mastercard": true, "amex": false, "bank_transfer": false, "installment": false});
    let l = create_link(srv, b);
    let t = page(srv, &format!("/pay/{}?language=en", short(&l))).text;
    assert!(!t.contains("name=\"installments\""), "{t}");
    // Too small for any plan.
    let p = id_of(&one_off_product(srv, "Small", "150.00"));
    let l = create_link(srv, link_body(&[(&p, 1)]));
    assert!(!page(srv, &format!("/pay/{}", short(&l))).text.contains("name=\"installments\""));
}

fn contact_fields_only_without_a_consumer(srv: &TestServer) {
    let l = link(srv, "No consumer", json!({}));
    let t = page(srv, &format!("/pay/{}?language=en", short(&l))).text;
    assert!(t.contains("<label for=\"customer-name\">") && t.contains("<input id=\"customer-phone_number\""));
    assert!(!t.contains("customer-email"), "PHONE links ask for a phone");
    let l = link(srv, "By e-mail", json!({"contact_information_type": "EMAIL"}));
    let t = page(srv, &format!("/pay/{}?language=en", short(&l))).text;
    assert!(t.contains("<input id=\"customer-email\"") && !t.contains("customer-phone_number"));
    let c = simple_consumer(srv, "Sara Al-Harbi", 41);
    let l = link(srv, "With consumer", json!({"organization_consumer_id": c}));
    let t = page(srv, &format!("/pay/{}?language=en", short(&l))).text;
    assert!(!t.contains("customer-name") && !t.contains("customer-phone_number") && !t.contains("customer-email"));
    assert!(t.contains("<input id=\"method-number\""), "the card form is still there");
}

fn stored_values_are_escaped(srv: &TestServer) {
    let evil = "<script>alert(1)</script>\"'&";
    let l = link(srv, evil, json!({"description": "<img src=x onerror=alert(2)>"}));
    for lang in ["ar", "en"] {
        let r = page(srv, &format!("/pay/{}?language={lang}", short(&l)));
        assert_eq!(r.status, 200);
        assert!(!r.text.contains("<script>alert"), "{}", r.text);
        assert!(!r.text.contains("<img"), "{}", r.text);
        assert!(r.text.contains("&#60;script&#62;alert(1)&#60;/script&#62;&#34;&#39;&#38;"));
        assert!(r.text.contains("&#60;img src=x onerror=alert(2)&#62;"));
        assert_no_inline_script(&r.text);
    }
    // Query values shown on the result page are escaped too.
    let r = page(
        srv,
        &format!(
            "/pay/{}/result?status=failed&message=%3Cb%3Ex%3C%2Fb%3E&id=%22%3E%3Cscript%3E&language=en",
            short(&l)
        ),
    );
    assert_eq!(r.status, 200);
    assert!(!r.text.contains("<b>x</b>") && !r.text.contains("\"><script>"), "{}", r.text);
    assert!(r.text.contains("&#60;b&#62;x&#60;/b&#62;"));
}

fn links_that_take_no_payment(srv: &TestServer) {
    let l = link(srv, "Closed link", json!({}));
    let status = format!("{}/status", link_path(&id_of(&l)));
    ok(srv.call(
        Method::PATCH,
        &status,
        Some(json!({"status": "INACTIVE", "deactivate_message": "Sold out <for now>"})),
    ));
    let r = page(srv, &format!("/pay/{}?language=en", short(&l)));
    assert_eq!(r.status, 200);
    assert_page_headers(&r, false);
    let t = &r.text;
    assert!(t.contains("This payment link is not active.") && t.contains("No payment will be taken."), "{t}");
    assert!(t.contains("Sold out &#60;for now&#62;"));
    assert!(!t.contains("<form"), "no form, no payment");
    let r = page(srv, &format!("/pay/{}", short(&l)));
    assert!(r.text.contains("dir=\"rtl\"") && r.text.contains("رابط الدفع هذا غير نشط."));
    assert!(!r.text.contains("<form"));
    // Expired.
    let soon = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let e = link(srv, "Expiring", json!({"valid_until": soon}));
    assert!(page(srv, &format!("/pay/{}", short(&e))).text.contains("<form"));
    ok(srv.post("/api/v2/sandbox/clock/advance", json!({"seconds": 7200})));
    let t = page(srv, &format!("/pay/{}?language=en", short(&e))).text;
    assert!(t.contains("This payment link has expired.") && !t.contains("<form"), "{t}");
    // Completed: its one payment taken.
    let p = id_of(&one_off_product(srv, "Once", "100.00"));
    let mut b = link_body(&[(&p, 1)]);
    b["max_number_of_payments"] = json!(1);
    let c = create_link(srv, b);
    let body = json!({"customer": {"name": "Sara Al-Harbi", "phone_number": phone(62)},
        "method": {"type": "card", "number": "4111111111111111", "name": "Sara Al-Harbi", "expiry_month": 12, "expiry_year": 2030, "cvc": "123"}});
    let r = srv.raw(
        Method::POST,
        &format!("/pay/{}/attempts", short(&c)),
        &[("content-type", "application/json")],
        Some(serde_json::to_vec(&body).unwrap()),
    );
    assert_eq!(ok(r)["status"], "paid");
    let t = page(srv, &format!("/pay/{}?language=en", short(&c))).text;
    assert!(t.contains("This payment link is completed") && !t.contains("<form"), "{t}");
    assert!(page(srv, &format!("/pay/{}", short(&c))).text.contains("اكتمل رابط الدفع هذا"));
    // Recurring products: a subscription, paid by card only, saying how often it renews; one
    // with a trial period cannot be started here yet.
    let r = id_of(&recurring_product(srv, "Monthly", "100.00"));
    let l = create_link(srv, link_body(&[(&r, 1)]));
    let t = page(srv, &format!("/pay/{}?language=en", short(&l))).text;
    assert!(t.contains("<form") && t.contains("every month") && t.contains("until you cancel it"), "{t}");
    assert!(
        !t.contains("method-type-wallet") && !t.contains("wallet-fields") && !t.contains("installments-2"),
        "{t}"
    );
    let t = page(srv, &format!("/pay/{}", short(&l))).text;
    assert!(t.contains("شهريًا") && t.contains("حتى تلغيه"), "{t}");
    let mut b = link_body(&[(&r, 1)]);
    b["trial_period_days"] = json!(14);
    let trial = create_link(srv, b);
    let t = page(srv, &format!("/pay/{}?language=en", short(&trial))).text;
    assert!(t.contains("trial period") && !t.contains("<form"), "{t}");
}

fn unknown_links_are_404_pages(srv: &TestServer) {
    for (path, text) in [
        ("/pay/NoSuchLinkAtAll1234567?language=en", "Payment link not found"),
        ("/pay/NoSuchLinkAtAll1234567", "رابط الدفع غير موجود"),
        ("/pay/%3Cscript%3E?language=en", "Payment link not found"),
        ("/pay/NoSuchLinkAtAll1234567/result?status=paid&language=en", "Payment link not found"),
    ] {
        let r = page(srv, path);
        assert_eq!(r.status, 404, "{path}");
        assert_page_headers(&r, false);
        assert!(r.text.contains(text), "{path}: {}", r.text);
        assert!(!r.text.contains("<script>") && !r.text.contains("<form"));
    }
}

fn result_pages(srv: &TestServer) {
    let l = link(srv, "Result link", json!({"confirmation_message": "See you at the gym"}));
    let base = format!("/pay/{}/result", short(&l));
    let r = page(srv, &format!("{base}?id=ref-1&status=paid&message=APPROVED&language=en"));
    assert_eq!(r.status, 200);
    assert_page_headers(&r, false);
    assert!(r.text.contains("Payment successful") && r.text.contains("See you at the gym") && r.text.contains("ref-1"));
    let r = page(srv, &format!("{base}?status=paid"));
    assert!(r.text.contains("dir=\"rtl\"") && r.text.contains("تم الدفع بنجاح"));
    let r = page(srv, &format!("{base}?status=failed&message=DECLINED&language=en"));
    assert!(r.text.contains("Payment failed") && r.text.contains("DECLINED") && r.text.contains("Try again"));
    assert!(!r.text.contains("See you at the gym"));
    let r = page(srv, &format!("{base}?status=failed_internal_error&language=ar"));
    assert!(r.text.contains("لم يتم الدفع") && r.text.contains("تواصل مع الدعم"));
    // The attempts endpoint sends a payer of a link without redirect URLs here.
    let p = id_of(&one_off_product(srv, "Thing", "100.00"));
    let l = create_link(srv, link_body(&[(&p, 1)]));
    let body = json!({"customer": {"name": "Sara Al-Harbi", "phone_number": phone(61)},
        "method": {"type": "card", "number": "4111111111111111", "name": "Sara Al-Harbi", "expiry_month": 12, "expiry_year": 2030, "cvc": "123"},
        "language": "en"});
    let r = ok(srv.raw(
        Method::POST,
        &format!("/pay/{}/attempts", short(&l)),
        &[("content-type", "application/json")],
        Some(serde_json::to_vec(&body).unwrap()),
    ));
    let url = r["redirect_url"].as_str().unwrap();
    let path = url.strip_prefix("http://127.0.0.1").unwrap();
    assert!(path.starts_with(&format!("/pay/{}/result?", short(&l))), "{url}");
    let r = page(srv, path);
    assert_eq!(r.status, 200);
    assert!(r.text.contains("Payment successful") && r.text.contains("lang=\"en\""), "{}", r.text);
}

fn assets_are_served_by_the_binary(srv: &TestServer) {
    for (path, kind) in [
        ("/pay/assets/checkout.js", "text/javascript; charset=utf-8"),
        ("/pay/assets/checkout.css", "text/css; charset=utf-8"),
    ] {
        let r = page(srv, path);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(header(&r, "content-type"), kind);
        assert_eq!(header(&r, "x-content-type-options"), "nosniff");
        assert!(
            !r.text.contains("http://") && !r.text.contains("https://"),
            "{path} loads nothing from elsewhere"
        );
    }
    assert_eq!(page(srv, "/pay/assets/nothing.js").status, 404);
    let r = page(srv, "/embed.js");
    assert_eq!(r.status, 200);
    assert_eq!(header(&r, "content-type"), "text/javascript; charset=utf-8");
    for s in ["window.BillingCheckout", "mount", "getIframe", "destroy", "embed", "e.origin !== origin"] {
        assert!(r.text.contains(s), "{s} missing from /embed.js");
    }
}

http_tests!(
    arabic_and_english,
    installment_options_follow_the_rules,
    contact_fields_only_without_a_consumer,
    stored_values_are_escaped,
    links_that_take_no_payment,
    unknown_links_are_404_pages,
    result_pages,
    assets_are_served_by_the_binary,
);
