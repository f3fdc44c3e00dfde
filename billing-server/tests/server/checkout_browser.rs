//! The hosted checkout in a real browser (headless Chromium driven over WebDriver by
//! chromedriver; `.ci/run` installs Debian's `chromium` and `chromium-driver`): a link paid by
//! card from the Arabic page and from the English page (after a form error), one paid in 3
//! installments, the page at a 375 px phone width, and a page embedding `/embed.js` whose iframe
//! keeps within its height bounds and whose redirect leaves the iframe; an invoice paid in 2
//! installments from its pay page (Arabic, English, phone width) and another one declined there;
//! a link of a monthly product paid by card, which starts a subscription.
//! Every payment is verified through the API. Screenshots go to `target/screenshots/`.
//!
//! Without chromium the test fails when `CI` is set, and prints a loud SKIPPED otherwise.

use crate::checkout_pages::{link, short};
use crate::common::fixtures::*;
use crate::common::invoice_fixtures::{create_invoice, invoice_body, invoice_path, quiet_consumer};
use crate::common::webdriver::{find_browser, Browser};
use crate::common::TestServer;
use crate::payment_links::{create_link, link_body};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::PathBuf;

fn screenshots() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("screenshots")
}

/// Fills the form: the payer's details when `phone` is given, and the card.
fn fill(b: &Browser, phone: Option<&str>, number: &str) {
    if let Some(p) = phone {
        b.type_into("#customer-name", "Sara Al-Harbi");
        b.type_into("#customer-phone_number", p);
    }
    b.type_into("#method-number", number);
    b.type_into("#method-name", "Sara Al-Harbi");
    b.type_into("#method-expiry_month", "12");
    b.type_into("#method-expiry_year", "2030");
    b.type_into("#method-cvc", "123");
}

/// Waits for the hosted result page; returns its URL.
fn result_url(b: &Browser) -> String {
    let v = b.wait_for(
        "the result page",
        60,
        "return location.pathname.endsWith('/result') && document.readyState === 'complete' && location.href",
    );
    v.as_str().unwrap().to_string()
}

fn param(url: &str, k: &str) -> Option<String> {
    let q = url.split_once('?').map(|x| x.1).unwrap_or("");
    billing_core::list::QueryParams::parse(q).get(k).map(str::to_string)
}

/// The invoice the redirect names, fetched through the API.
fn invoice_of(srv: &TestServer, url: &str) -> Value {
    assert_eq!(param(url, "status").as_deref(), Some("paid"), "{url}");
    ok(srv.get(&invoice_path(&param(url, "invoice_id").expect("invoice_id in the redirect"))))
}

/// A screenshot of the whole page: the window is made as tall as the page for it.
fn full_shot(b: &Browser, width: u32, name: &str) {
    let h = b.js("return document.documentElement.scrollHeight", json!([])).as_u64().unwrap() as u32;
    b.set_window(width, h + 140);
    b.screenshot(&screenshots().join(name));
    b.set_window(width, 1000);
}

fn text(b: &Browser) -> String {
    b.js("return document.body.innerText", json!([])).as_str().unwrap_or_default().to_string()
}

/// Serves `html` to every request on a port of its own (another origin than the server's).
fn host_page(html: String) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{html}",
                html.len()
            );
            let _ = s.write_all(resp.as_bytes());
        }
    });
    format!("http://{addr}/shop")
}

#[test]
fn checkout_in_a_real_browser() {
    let Some((chromium, chromedriver)) = find_browser() else {
        if std::env::var_os("CI").is_some() {
            panic!("chromium and chromedriver are required in CI (.ci/run installs the chromium and chromium-driver packages)");
        }
        eprintln!("\n======== SKIPPED checkout_browser: chromium / chromedriver not found (apt-get install chromium chromium-driver) ========\n");
        return;
    };
    let shots = screenshots();
    let srv = TestServer::sqlite_at_own_address();
    let b = Browser::start(&chromium, &chromedriver, 1280, 1000);

    // Arabic (the default), paid in full by a sandbox success card.
    let l = link(&srv, "Gym membership", json!({}));
    b.goto(&format!("{}/pay/{}", srv.base, short(&l)));
    assert_eq!(
        b.js("return [document.documentElement.lang, document.documentElement.dir]", json!([])),
        json!(["ar", "rtl"])
    );
    assert!(text(&b).contains("ملخص الطلب"));
    full_shot(&b, 1280, "checkout-ar.png");
    // A card name of one word: the field error in Arabic, no payment.
    fill(&b, Some(&phone(301)), "4111111111111111");
    b.type_into("#method-name", "Sara");
    b.click("#pay-button");
    let err = b.wait_for("the field error", 20, "return document.getElementById('err-method-name').textContent");
    assert_eq!(err, json!("اكتب الاسم كما هو على البطاقة (كلمتان على الأقل)."));
    full_shot(&b, 1280, "checkout-ar-error.png");
    b.type_into("#method-name", "Sara Al-Harbi");
    b.click("#pay-button");
    let url = result_url(&b);
    assert!(text(&b).contains("تم الدفع بنجاح"), "{}", text(&b));
    b.screenshot(&shots.join("result-ar.png"));
    let inv = invoice_of(&srv, &url);
    assert_eq!((inv["status"].as_str(), inv["total_amount"].as_str()), (Some("COMPLETED"), Some("450.00")));
    assert_eq!(inv["payment_link_id"], l["id"]);

    // English: a bad card number is a form error at the field (no payment), then paid.
    let invoices_before = ids(&srv.get("/api/v2/invoices")).len();
    b.goto(&format!("{}/pay/{}?language=en", srv.base, short(&l)));
    assert_eq!(
        b.js("return [document.documentElement.lang, document.documentElement.dir]", json!([])),
        json!(["en", "ltr"])
    );
    full_shot(&b, 1280, "checkout-en.png");
    fill(&b, Some(&phone(302)), "4111111111111112");
    b.click("#pay-button");
    b.wait_for("the field error", 20, "return document.getElementById('err-method-number').textContent");
    assert_eq!(
        b.js("return document.getElementById('method-number').getAttribute('aria-invalid')", json!([])),
        json!("true")
    );
    assert!(b.url().contains(&format!("/pay/{}", short(&l))) && !b.url().contains("/result"));
    b.screenshot(&shots.join("checkout-en-error.png"));
    assert_eq!(ids(&srv.get("/api/v2/invoices")).len(), invoices_before, "a form error pays nothing");
    b.type_into("#method-number", "5421 0801 0100 0000");
    b.click("#pay-button");
    let url = result_url(&b);
    assert!(text(&b).contains("Payment successful"), "{}", text(&b));
    b.screenshot(&shots.join("result-en.png"));
    assert_eq!(invoice_of(&srv, &url)["status"], "COMPLETED");

    // Three installments through the form.
    let p = id_of(&one_off_product(&srv, "Laptop", "400.00"));
    let l3 = create_link(&srv, link_body(&[(&p, 1)]));
    b.goto(&format!("{}/pay/{}?language=en", srv.base, short(&l3)));
    assert!(text(&b).contains("133.33 + 133.33 + 133.34 SAR"), "{}", text(&b));
    fill(&b, Some(&phone(303)), "4201320111111010");
    b.click("#installments-3");
    b.screenshot(&shots.join("checkout-en-installments.png"));
    // Submitted from the keyboard: Enter in the security code field.
    b.type_into("#method-cvc", "123\u{E007}");
    let url = result_url(&b);
    let inv = invoice_of(&srv, &url);
    let parts: Vec<(&str, &str)> = inv["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["amount"].as_str().unwrap(), p["current_status"].as_str().unwrap()))
        .collect();
    assert_eq!(parts, [("133.33", "SUCCEEDED"), ("133.33", "PENDING"), ("133.34", "PENDING")]);
    assert_eq!((inv["status"].as_str(), inv["type"].as_str()), (Some("ACCEPTED"), Some("INSTALLMENTS")));

    // A quantity the payer chooses: the page reloads priced with it, and the invoice bills it.
    let p = id_of(&one_off_product(&srv, "Ticket", "100.00"));
    let mut lb = link_body(&[(&p, 1)]);
    lb["items"][0]["allow_custom_quantity"] = json!(true);
    lb["items"][0]["max_quantity"] = json!(5);
    let lq = create_link(&srv, lb);
    let item = lq["items"][0]["id"].as_str().unwrap().to_string();
    b.goto(&format!("{}/pay/{}?language=en", srv.base, short(&lq)));
    b.type_into(&format!("#qty-{item}"), "3\u{E004}");
    b.wait_for(
        "the page priced with 3",
        30,
        "return document.readyState === 'complete' && location.search.indexOf('quantity.') >= 0 && document.getElementById('pay-button').textContent.indexOf('300.00') >= 0",
    );
    full_shot(&b, 1280, "checkout-en-quantity.png");
    fill(&b, Some(&phone(307)), "4111111111111111");
    b.click("#pay-button");
    let url = result_url(&b);
    let inv = invoice_of(&srv, &url);
    assert_eq!((inv["total_amount"].as_str(), inv["items"][0]["quantity"].as_u64()), (Some("300.00"), Some(3)));

    // The mobile wallet (250 SAR is in the sandbox's paid range): installments are by card only.
    let p = id_of(&one_off_product(&srv, "Headphones", "250.00"));
    let lw = create_link(&srv, link_body(&[(&p, 1)]));
    b.goto(&format!("{}/pay/{}?language=en", srv.base, short(&lw)));
    b.type_into("#customer-name", "Sara Al-Harbi");
    b.type_into("#customer-phone_number", &phone(305));
    b.click("#method-type-wallet");
    assert_eq!(b.js("return document.getElementById('installments-2').disabled", json!([])), json!(true));
    assert_eq!(b.js("return document.getElementById('card-fields').hidden", json!([])), json!(true));
    b.type_into("#method-phone_number", "+966501234567");
    b.screenshot(&shots.join("checkout-en-wallet.png"));
    b.click("#pay-button");
    let url = result_url(&b);
    assert_eq!(invoice_of(&srv, &url)["status"], "COMPLETED");

    // A subscription: a link of a monthly product, paid by card from the Arabic page (no wallet,
    // no installments, the renewal said), verified through the API.
    let monthly = id_of(&recurring_product(&srv, "Monthly gym", "150.00"));
    let ls = create_link(&srv, link_body(&[(&monthly, 1)]));
    b.goto(&format!("{}/pay/{}", srv.base, short(&ls)));
    assert_eq!(b.js("return document.getElementById('method-type-wallet')", json!([])), Value::Null);
    assert!(text(&b).contains("شهريًا") && text(&b).contains("حتى تلغيه"), "{}", text(&b));
    full_shot(&b, 1280, "checkout-ar-subscription.png");
    b.goto(&format!("{}/pay/{}?language=en", srv.base, short(&ls)));
    assert!(text(&b).contains("every month"), "{}", text(&b));
    fill(&b, Some(&phone(308)), "4111111111111111");
    full_shot(&b, 375, "checkout-phone-en-subscription.png");
    b.click("#pay-button");
    let url = result_url(&b);
    let inv = invoice_of(&srv, &url);
    assert_eq!(inv["status"], "COMPLETED");
    let sid = inv["subscription_id"].as_str().expect("a subscription's invoice");
    let sub = ok(srv.get(&format!("/api/v2/subscriptions/{sid}")));
    assert_eq!((sub["status"].as_str(), sub["amount"].as_str()), (Some("ACTIVE"), Some("150.00")));

    // A declined card: the failure page, and nothing is created.
    let invoices_before = ids(&srv.get("/api/v2/invoices")).len();
    b.goto(&format!("{}/pay/{}?language=en", srv.base, short(&lw)));
    fill(&b, Some(&phone(306)), "4123120001090000");
    b.click("#pay-button");
    let url = result_url(&b);
    assert_eq!(param(&url, "status").as_deref(), Some("failed"));
    assert!(text(&b).contains("Payment failed") && text(&b).contains("INSUFFICIENT FUNDS"), "{}", text(&b));
    b.screenshot(&shots.join("result-failed-en.png"));
    assert_eq!(ids(&srv.get("/api/v2/invoices")).len(), invoices_before);

    // An invoice's pay page: paid in 2 installments from the English page, then shown paid in
    // part; another one declined from the Arabic page.
    let c = quiet_consumer(&srv, "Sara Al-Harbi");
    let gym = id_of(&one_off_product(&srv, "Gym pass", "200.00"));
    let towel = id_of(&one_off_product(&srv, "Towel", "100.00"));
    let ten = id_of(&percent_coupon(&srv, "TEN", "10"));
    let mut body = invoice_body(&c, &[(&gym, 2), (&towel, 1)], &[&ten]);
    body["description"] = json!("March membership");
    let inv = create_invoice(&srv, body);
    let page = format!("{}/pay/invoices/{}", srv.base, inv["id"].as_str().unwrap());
    b.goto(&page);
    assert!(text(&b).contains("فاتورة رقم"), "{}", text(&b));
    full_shot(&b, 1280, "invoice-ar.png");
    b.goto(&format!("{page}?language=en"));
    assert!(text(&b).contains("225.00 + 225.00 SAR"), "{}", text(&b));
    assert_eq!(b.js("return document.getElementById('customer-name')", json!([])), Value::Null);
    fill(&b, None, "4111111111111111");
    b.click("#installments-2");
    full_shot(&b, 1280, "invoice-en.png");
    b.click("#pay-button");
    let url = result_url(&b);
    assert!(url.starts_with(&format!("{page}/result?")), "{url}");
    assert!(text(&b).contains("Payment successful"), "{}", text(&b));
    b.screenshot(&shots.join("invoice-result-en.png"));
    let now = ok(srv.get(&invoice_path(inv["id"].as_str().unwrap())));
    let parts: Vec<(&str, &str)> = now["payments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["amount"].as_str().unwrap(), p["current_status"].as_str().unwrap()))
        .collect();
    assert_eq!(parts, [("225.00", "SUCCEEDED"), ("225.00", "PENDING")]);
    assert_eq!(now["status"], "ACCEPTED");
    b.goto(&format!("{page}?language=en"));
    assert!(text(&b).contains("Paid so far") && text(&b).contains("To pay now"), "{}", text(&b));
    full_shot(&b, 1280, "invoice-en-paid-in-part.png");
    for lang in ["ar", "en"] {
        b.set_window(375, 812);
        b.goto(&format!("{page}?language={lang}"));
        let w = b.js("return [window.innerWidth, document.documentElement.scrollWidth]", json!([]));
        assert!(w[1].as_u64().unwrap() <= w[0].as_u64().unwrap(), "wider than the screen: {w}");
        full_shot(&b, 375, &format!("invoice-phone-{lang}.png"));
    }
    b.set_window(1280, 1000);
    let other = create_invoice(&srv, invoice_body(&c, &[(&towel, 1)], &[]));
    let other_page = format!("{}/pay/invoices/{}", srv.base, other["id"].as_str().unwrap());
    b.goto(&other_page);
    b.click("details.decline summary");
    b.type_into("#decline-reason", "لم أطلب هذا");
    full_shot(&b, 1280, "invoice-decline-ar.png");
    b.click("#decline-button");
    b.wait_for(
        "the declined page",
        30,
        "return !document.getElementById('decline-form') && document.body.innerText.indexOf('تم رفض هذه الفاتورة') >= 0",
    );
    b.screenshot(&shots.join("invoice-declined-ar.png"));
    assert_eq!(ok(srv.get(&invoice_path(other["id"].as_str().unwrap())))["status"], "REJECTED");

    // A 375 px wide phone: nothing wider than the screen.
    for lang in ["ar", "en"] {
        b.set_window(375, 812);
        b.goto(&format!("{}/pay/{}?language={lang}", srv.base, short(&l3)));
        let w = b.js("return [window.innerWidth, document.documentElement.scrollWidth]", json!([]));
        assert!(w[0].as_u64().unwrap() <= 400, "{w}");
        assert!(w[1].as_u64().unwrap() <= w[0].as_u64().unwrap(), "wider than the screen: {w}");
        full_shot(&b, 375, &format!("checkout-phone-{lang}.png"));
    }
    b.set_window(1280, 1000);

    // Embedded in another origin's page: the iframe keeps within its bounds; paying navigates
    // the top page (the redirect leaves the iframe).
    let le = link(&srv, "Embedded link", json!({}));
    let shop = host_page(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Shop</title></head><body style=\"margin:0;font-family:sans-serif\">\
<h1 style=\"padding:8px\">My shop</h1><div id=\"checkout\" style=\"max-width:640px;margin:0 auto\"></div>\
<script src=\"{base}/embed.js\"></script>\
<script>window.checkout = BillingCheckout.mount({{paymentLink: \"{short}\", container: \"#checkout\", language: \"en\"}});</script>\
</body></html>",
        base = srv.base,
        short = short(&le)
    ));
    b.goto(&shop);
    let src = b.js("return window.checkout.getIframe().src", json!([]));
    assert_eq!(src, json!(format!("{}/pay/{}?embed=true&language=en", srv.base, short(&le))));
    // Its height follows the page's report (above the 280 px floor) and stays under the ceiling.
    let h = b.wait_for(
        "the iframe's height report",
        20,
        "var f = window.checkout.getIframe(); var h = f.getBoundingClientRect().height; return h > 280 && h",
    );
    let h = h.as_f64().unwrap();
    let vh = b.js("return window.innerHeight", json!([])).as_f64().unwrap();
    let ceiling = 920f64.min(280f64.max(800f64.min(0.7 * vh)));
    assert!((280.0..=ceiling + 0.5).contains(&h), "iframe height {h} outside [280, {ceiling}]");
    b.screenshot(&shots.join("embed-en.png"));
    b.frame(Some("#checkout iframe"));
    fill(&b, Some(&phone(304)), "4111111111111111");
    b.click("#pay-button");
    b.frame(None);
    let url = result_url(&b);
    assert!(url.starts_with(&format!("{}/pay/{}/result?", srv.base, short(&le))), "{url}");
    assert_eq!(invoice_of(&srv, &url)["status"], "COMPLETED");
    // destroy() removes the iframe.
    b.goto(&shop);
    b.wait_for("the iframe", 10, "return document.querySelector('#checkout iframe') !== null");
    b.js("window.checkout.destroy()", json!([]));
    assert_eq!(b.js("return document.querySelector('#checkout iframe')", json!([])), Value::Null);
}
