//! Webhook endpoints (`/webhooks`), their delivery log and manual retries. Not in the
//! specification; the shapes follow its conventions (list envelope, 422 details).

use super::{path_id, Input, ListBody, Op, Reply};
use crate::router::Route;
use billing_core::webhook::{parse_delivery_list, parse_page, EndpointFields};
use serde_json::Value;

pub fn build(route: Route, input: Input) -> Op {
    match route {
        Route::CreateWebhook => Box::new(move |b, s| {
            let f = EndpointFields::parse(&input.body?, true)?;
            Ok(Reply::Json(b.create_webhook_endpoint(s, f)?.to_json(true)))
        }),
        Route::ListWebhooks => Box::new(move |b, s| {
            let (page, limit) = parse_page(&input.query)?;
            let p = b.list_webhook_endpoints(s, page, limit)?;
            let pagination = p.pagination();
            let data: Vec<Value> = p.items.iter().map(|e| e.to_json(false)).collect();
            Ok(Reply::of(&ListBody { data, pagination }))
        }),
        Route::GetWebhook(id) => Box::new(move |b, s| Ok(Reply::Json(b.get_webhook_endpoint(s, path_id("webhook_id", &id)?)?.to_json(false)))),
        Route::UpdateWebhook(id) => Box::new(move |b, s| {
            let id = path_id("webhook_id", &id)?;
            let f = EndpointFields::parse(&input.body?, false)?;
            Ok(Reply::Json(b.update_webhook_endpoint(s, id, f)?.to_json(false)))
        }),
        Route::DeleteWebhook(id) => Box::new(move |b, s| {
            b.delete_webhook_endpoint(s, path_id("webhook_id", &id)?)?;
            Ok(Reply::Empty)
        }),
        Route::RotateWebhookSecret(id) => Box::new(move |b, s| Ok(Reply::Json(b.rotate_webhook_secret(s, path_id("webhook_id", &id)?)?.to_json(true)))),
        Route::ListWebhookDeliveries(id) => Box::new(move |b, s| {
            let id = path_id("webhook_id", &id)?;
            let (f, page, limit) = parse_delivery_list(&input.query)?;
            let p = b.list_webhook_deliveries(s, id, &f, page, limit)?;
            let pagination = p.pagination();
            Ok(Reply::of(&ListBody { data: p.items, pagination }))
        }),
        Route::GetWebhookDelivery(id) => Box::new(move |b, s| Ok(Reply::Json(b.get_webhook_delivery(s, path_id("delivery_id", &id)?)?))),
        Route::RetryWebhookDelivery(id) => Box::new(move |b, s| Ok(Reply::Json(b.retry_webhook_delivery(s, path_id("delivery_id", &id)?)?))),
        other => unreachable!("not a webhook route: {other:?}"),
    }
}
