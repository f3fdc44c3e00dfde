//! Customer notifications and their attempts: `GET /notifications`, `GET /notifications/{id}`.
//! Not in the specification; the shapes follow its conventions (list envelope, 422 details).

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::doc;
use crate::openapi::queries;
use crate::openapi::shapes as wire;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::notification::ops::{lane, parse_notification_list};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/notifications", list, lane::LIST).doc(
        doc("list_notifications", "Notifications", "The branch's customer notifications")
            .query::<queries::NotificationListQuery>()
            .ok::<wire::ListResourceNotificationView>(),
    ),
    route(Method::GET, "/notifications/{notification_id}", get, lane::GET)
        .doc(doc("get_notification", "Notifications", "One notification with its attempts").ok::<wire::NotificationView>()),
];

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (f, q) = parse_notification_list(&r.query)?;
    let p = b.list_notifications(s, &f, &q)?;
    let pagination = p.pagination();
    Ok(Reply::page(p.items, pagination))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::Json(b.get_notification(s, r.id("notification_id")?)?))
}
