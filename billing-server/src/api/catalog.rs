//! Products, their prices, and coupons.

use super::{path_id, Input, Op, Reply};
use crate::router::Route;
use billing_core::coupon::{parse_coupon_list, CouponFields};
use billing_core::product::{parse_price_body, parse_price_update, parse_product_list, ProductFields};
use serde_json::json;

pub fn build(route: Route, input: Input) -> Op {
    match route {
        Route::CreateProduct => Box::new(move |b, s| {
            let f = ProductFields::parse(&input.body?, true, s.org.settings.default_currency)?;
            Ok(Reply::Json(b.create_product(s, f)?.to_json(&s.org.settings)))
        }),
        Route::ListProducts => Box::new(move |b, s| {
            let (q, f) = parse_product_list(&input.query)?;
            let page = b.list_products(s, &q, &f)?;
            Ok(Reply::Json(
                json!({"data": page.items.iter().map(|p| p.to_json(&s.org.settings)).collect::<Vec<_>>(), "pagination": page.pagination()}),
            ))
        }),
        Route::GetProduct(id) => Box::new(move |b, s| Ok(Reply::Json(b.get_product(s, path_id("product_id", &id)?)?.to_json(&s.org.settings)))),
        Route::UpdateProduct(id) => Box::new(move |b, s| {
            let id = path_id("product_id", &id)?;
            let f = ProductFields::parse(&input.body?, false, s.org.settings.default_currency)?;
            Ok(Reply::Json(b.update_product(s, id, f)?.to_json(&s.org.settings)))
        }),
        Route::DeleteProduct(id) => Box::new(move |b, s| {
            b.delete_product(s, path_id("product_id", &id)?)?;
            Ok(Reply::Empty)
        }),
        Route::AddPrice(id) => Box::new(move |b, s| {
            let id = path_id("product_id", &id)?;
            let price = parse_price_body(&input.body?)?;
            let (p, price_id) = b.add_product_price(s, id, price)?;
            let price = p.prices.iter().find(|x| x.id == price_id).expect("just added");
            Ok(Reply::Json(price.to_json(s.org.settings.vat_rate)))
        }),
        Route::UpdatePrice(id, price_id) => Box::new(move |b, s| {
            let (id, price_id) = (path_id("product_id", &id)?, path_id("price_id", &price_id)?);
            let u = parse_price_update(&input.body?)?;
            let p = b.update_product_price(s, id, price_id, u)?;
            let price = p.prices.iter().find(|x| x.id == price_id).expect("updated");
            Ok(Reply::Json(price.to_json(s.org.settings.vat_rate)))
        }),
        Route::DeletePrice(id, price_id) => Box::new(move |b, s| {
            b.delete_product_price(s, path_id("product_id", &id)?, path_id("price_id", &price_id)?)?;
            Ok(Reply::Empty)
        }),
        Route::CreateCoupon => Box::new(move |b, s| Ok(Reply::Json(b.create_coupon(s, CouponFields::parse(&input.body?, true)?)?.to_json()))),
        Route::ListCoupons => Box::new(move |b, s| {
            let (q, f) = parse_coupon_list(&input.query)?;
            let page = b.list_coupons(s, &q, &f)?;
            Ok(Reply::Json(
                json!({"data": page.items.iter().map(|c| c.to_detailed_json()).collect::<Vec<_>>(), "pagination": page.pagination()}),
            ))
        }),
        Route::GetCoupon(id) => Box::new(move |b, s| Ok(Reply::Json(b.get_coupon(s, path_id("coupon_id", &id)?)?.to_detailed_json()))),
        Route::UpdateCoupon(id) => Box::new(move |b, s| {
            let id = path_id("coupon_id", &id)?;
            Ok(Reply::Json(b.update_coupon(s, id, CouponFields::parse(&input.body?, false)?)?.to_json()))
        }),
        Route::DeleteCoupon(id) => Box::new(move |b, s| {
            b.delete_coupon(s, path_id("coupon_id", &id)?)?;
            Ok(Reply::Empty)
        }),
        other => unreachable!("not a catalog route: {other:?}"),
    }
}
