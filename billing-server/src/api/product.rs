//! Products and their prices: `/products`, `/products/{product_id}`,
//! `/products/{product_id}/prices[/{price_id}]`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::{doc, tool};
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::list::ListResource;
use billing_core::product::ops::lane;
use billing_core::product::wire::request;
use billing_core::product::{parse_price_body, parse_price_update, parse_product_list, PriceView, ProductFields, ProductView};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/products", list, lane::LIST).doc(
        doc("list_products", "Products", "List products")
            .query::<request::ProductListQuery>()
            .ok::<ListResource<ProductView>>()
            .tools(&[tool("list_products", "List products, with filters.")]),
    ),
    route(Method::POST, "/products", create, lane::CREATE).doc(
        doc("create_product", "Products", "Create a product")
            .body::<request::ProductCreate>(
                r#"{"name": "Gym membership", "description": "One month", "type": "ONE_OFF", "prices": [{"currency": "SAR", "amount": "115.00"}]}"#,
            )
            .ok::<ProductView>()
            .tools(&[tool("create_product", "Create a product with its prices.")]),
    ),
    route(Method::GET, "/products/{product_id}", get, lane::GET).doc(
        doc("get_product", "Products", "One product")
            .ok::<ProductView>()
            .tools(&[tool("get_product", "One product.")]),
    ),
    route(Method::PUT, "/products/{product_id}", update, lane::UPDATE).doc(
        doc("update_product", "Products", "Change a product's given fields")
            .body::<request::ProductUpdate>(r#"{"name": "Gym membership (monthly)", "is_active": true}"#)
            .ok::<ProductView>()
            .tools(&[tool("update_product", "Change a product's given fields.")]),
    ),
    route(Method::DELETE, "/products/{product_id}", delete, lane::DELETE).doc(
        doc("archive_product", "Products", "Delete (archive) a product")
            .ok::<wire::Empty>()
            .tools(&[tool("archive_product", "Archive (delete) a product.")]),
    ),
    route(Method::POST, "/products/{product_id}/prices", add_price, lane::ADD_PRICE).doc(
        doc("add_product_price", "Products", "Add a price in a currency")
            .body::<request::ProductPriceCreate>(r#"{"currency": "USD", "amount": "30.00"}"#)
            .ok::<PriceView>(),
    ),
    route(Method::PUT, "/products/{product_id}/prices/{price_id}", update_price, lane::UPDATE_PRICE).doc(
        doc("update_product_price", "Products", "Change a price")
            .body::<request::ProductPriceUpdate>(r#"{"amount": "32.50"}"#)
            .ok::<PriceView>(),
    ),
    route(Method::DELETE, "/products/{product_id}/prices/{price_id}", delete_price, lane::DELETE_PRICE)
        .doc(doc("delete_product_price", "Products", "Retire a price").ok::<wire::Empty>()),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let f = ProductFields::parse(r.body()?, true, s.org.settings.default_currency)?;
    Ok(Reply::of(&b.products().create(s, f)?.view(&s.org.settings)))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (q, f) = parse_product_list(&r.query)?;
    let page = b.products().list(s, &q, &f)?;
    let data: Vec<_> = page.items.iter().map(|p| p.view(&s.org.settings)).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.products().get(s, r.id("product_id")?)?.view(&s.org.settings)))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("product_id")?;
    let f = ProductFields::parse(r.body()?, false, s.org.settings.default_currency)?;
    Ok(Reply::of(&b.products().update(s, id, f)?.view(&s.org.settings)))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.products().delete(s, r.id("product_id")?)?;
    Ok(Reply::Empty)
}

fn add_price(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("product_id")?;
    let price = parse_price_body(r.body()?)?;
    let (p, price_id) = b.products().add_price(s, id, price)?;
    let price = p.prices.iter().find(|x| x.id == price_id).expect("just added");
    Ok(Reply::of(&price.view(s.org.settings.vat_rate)))
}

fn update_price(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (id, price_id) = (r.id("product_id")?, r.id("price_id")?);
    let u = parse_price_update(r.body()?)?;
    let p = b.products().update_price(s, id, price_id, u)?;
    let price = p.prices.iter().find(|x| x.id == price_id).expect("updated");
    Ok(Reply::of(&price.view(s.org.settings.vat_rate)))
}

fn delete_price(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.products().delete_price(s, r.id("product_id")?, r.id("price_id")?)?;
    Ok(Reply::Empty)
}
