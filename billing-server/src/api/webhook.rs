//! Webhook endpoints (`/webhooks`), their delivery log and manual retries. Not in the
//! specification; the shapes follow its conventions (list envelope, 422 details).

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::doc;
use crate::openapi::queries;
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::list::ListResource;
use billing_core::webhook::ops::lane;
use billing_core::webhook::wire::request;
use billing_core::webhook::{parse_delivery_list, parse_page, DeliveryView, EndpointFields, WebhookView};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/webhooks", list, lane::LIST).doc(
        doc("list_webhooks", "Webhooks", "The branch's webhook endpoints")
            .query::<queries::PageQuery>()
            .ok::<ListResource<WebhookView>>(),
    ),
    route(Method::POST, "/webhooks", create, lane::CREATE).doc(
        doc("create_webhook", "Webhooks", "Register an endpoint (its secret_key is returned)")
            .body::<request::WebhookCreate>(
                r#"{"url": "https://shop.example.com/hooks/billing", "event_types": ["PAYMENT_SUCCEEDED", "INVOICE_COMPLETED"], "description": "shop"}"#,
            )
            .ok::<WebhookView>(),
    ),
    route(Method::GET, "/webhooks/{webhook_id}", get, lane::GET).doc(doc("get_webhook", "Webhooks", "One endpoint").ok::<WebhookView>()),
    route(Method::PUT, "/webhooks/{webhook_id}", update, lane::UPDATE).doc(
        doc("update_webhook", "Webhooks", "Change an endpoint's given fields")
            .body::<request::WebhookUpdate>(r#"{"enabled": false}"#)
            .ok::<WebhookView>(),
    ),
    route(Method::DELETE, "/webhooks/{webhook_id}", delete, lane::DELETE)
        .doc(doc("delete_webhook", "Webhooks", "Delete an endpoint (its pending deliveries stop)").ok::<wire::Empty>()),
    route(Method::POST, "/webhooks/{webhook_id}/rotate-secret", rotate_secret, lane::ROTATE_SECRET)
        .doc(doc("rotate_webhook_secret", "Webhooks", "A new secret_key").ok::<WebhookView>()),
    route(Method::GET, "/webhooks/{webhook_id}/deliveries", list_deliveries, lane::LIST_DELIVERIES).doc(
        doc("list_webhook_deliveries", "Webhooks", "An endpoint's delivery log")
            .query::<request::DeliveryListQuery>()
            .ok::<ListResource<DeliveryView>>(),
    ),
    route(Method::GET, "/webhooks/deliveries/{delivery_id}", get_delivery, lane::GET_DELIVERY)
        .doc(doc("get_webhook_delivery", "Webhooks", "One delivery with its event and attempts").ok::<DeliveryView>()),
    route(Method::POST, "/webhooks/deliveries/{delivery_id}/retry", retry_delivery, lane::RETRY_DELIVERY)
        .doc(doc("retry_webhook_delivery", "Webhooks", "Send a delivery again now").ok::<DeliveryView>()),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let f = EndpointFields::parse(r.body()?, true)?;
    Ok(Reply::of(&b.webhooks().create(s, f)?.view_with_secret()))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (page, limit) = parse_page(&r.query)?;
    let p = b.webhooks().list(s, page, limit)?;
    let data: Vec<_> = p.items.iter().map(|e| e.view()).collect();
    Ok(Reply::page(data, p.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.webhooks().get(s, r.id("webhook_id")?)?.view()))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("webhook_id")?;
    let f = EndpointFields::parse(r.body()?, false)?;
    Ok(Reply::of(&b.webhooks().update(s, id, f)?.view()))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.webhooks().delete(s, r.id("webhook_id")?)?;
    Ok(Reply::Empty)
}

fn rotate_secret(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.webhooks().rotate_secret(s, r.id("webhook_id")?)?.view_with_secret()))
}

fn list_deliveries(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("webhook_id")?;
    let (f, page, limit) = parse_delivery_list(&r.query)?;
    let p = b.webhooks().list_deliveries(s, id, &f, page, limit)?;
    let data: Vec<_> = p.items.iter().map(|d| d.view()).collect();
    Ok(Reply::page(data, p.pagination()))
}

fn get_delivery(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.webhooks().get_delivery(s, r.id("delivery_id")?)?.view()))
}

fn retry_delivery(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.webhooks().retry_delivery(s, r.id("delivery_id")?)?.view()))
}
