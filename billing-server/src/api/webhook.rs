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
use billing_core::webhook::ops::lane;
use billing_core::webhook::{parse_delivery_list, parse_page, EndpointFields};
use billing_core::Billing;
use hyper::Method;
use serde_json::Value;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/webhooks", list, lane::LIST).doc(
        doc("list_webhooks", "Webhooks", "The branch's webhook endpoints")
            .query::<queries::PageQuery>()
            .ok::<wire::ListResourceWebhook>(),
    ),
    route(Method::POST, "/webhooks", create, lane::CREATE).doc(
        doc("create_webhook", "Webhooks", "Register an endpoint (its secret_key is returned)")
            .body::<wire::WebhookCreate>(
                r#"{"url": "https://shop.example.com/hooks/billing", "event_types": ["PAYMENT_SUCCEEDED", "INVOICE_COMPLETED"], "description": "shop"}"#,
            )
            .ok::<wire::Webhook>(),
    ),
    route(Method::GET, "/webhooks/{webhook_id}", get, lane::GET).doc(doc("get_webhook", "Webhooks", "One endpoint").ok::<wire::Webhook>()),
    route(Method::PUT, "/webhooks/{webhook_id}", update, lane::UPDATE).doc(
        doc("update_webhook", "Webhooks", "Change an endpoint's given fields")
            .body::<wire::WebhookUpdate>(r#"{"enabled": false}"#)
            .ok::<wire::Webhook>(),
    ),
    route(Method::DELETE, "/webhooks/{webhook_id}", delete, lane::DELETE)
        .doc(doc("delete_webhook", "Webhooks", "Delete an endpoint (its pending deliveries stop)").ok::<wire::Empty>()),
    route(Method::POST, "/webhooks/{webhook_id}/rotate-secret", rotate_secret, lane::ROTATE_SECRET)
        .doc(doc("rotate_webhook_secret", "Webhooks", "A new secret_key").ok::<wire::Webhook>()),
    route(Method::GET, "/webhooks/{webhook_id}/deliveries", list_deliveries, lane::LIST_DELIVERIES).doc(
        doc("list_webhook_deliveries", "Webhooks", "An endpoint's delivery log")
            .query::<queries::DeliveryListQuery>()
            .ok::<wire::ListResourceWebhookDelivery>(),
    ),
    route(Method::GET, "/webhooks/deliveries/{delivery_id}", get_delivery, lane::GET_DELIVERY)
        .doc(doc("get_webhook_delivery", "Webhooks", "One delivery with its event and attempts").ok::<wire::WebhookDelivery>()),
    route(Method::POST, "/webhooks/deliveries/{delivery_id}/retry", retry_delivery, lane::RETRY_DELIVERY)
        .doc(doc("retry_webhook_delivery", "Webhooks", "Send a delivery again now").ok::<wire::WebhookDelivery>()),
];

fn create(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let f = EndpointFields::parse(r.body()?, true)?;
    Ok(Reply::Json(b.create_webhook_endpoint(s, f)?.to_json(true)))
}

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (page, limit) = parse_page(&r.query)?;
    let p = b.list_webhook_endpoints(s, page, limit)?;
    let data: Vec<Value> = p.items.iter().map(|e| e.to_json(false)).collect();
    Ok(Reply::page(data, p.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.get_webhook_endpoint(s, r.id("webhook_id")?)?.to_json(false)))
}

fn update(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("webhook_id")?;
    let f = EndpointFields::parse(r.body()?, false)?;
    Ok(Reply::Json(b.update_webhook_endpoint(s, id, f)?.to_json(false)))
}

fn delete(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    b.delete_webhook_endpoint(s, r.id("webhook_id")?)?;
    Ok(Reply::Empty)
}

fn rotate_secret(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.rotate_webhook_secret(s, r.id("webhook_id")?)?.to_json(true)))
}

fn list_deliveries(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let id = r.id("webhook_id")?;
    let (f, page, limit) = parse_delivery_list(&r.query)?;
    let p = b.list_webhook_deliveries(s, id, &f, page, limit)?;
    let pagination = p.pagination();
    Ok(Reply::page(p.items, pagination))
}

fn get_delivery(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.get_webhook_delivery(s, r.id("delivery_id")?)?))
}

fn retry_delivery(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.retry_webhook_delivery(s, r.id("delivery_id")?)?))
}
