//! Customer notifications and their attempts: `GET /notifications`, `GET /notifications/{id}`.
//! Not in the specification; the shapes follow its conventions (list envelope, 422 details).

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::doc;
use crate::router::{route, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::list::ListResource;
use billing_core::notification::ops::lane;
use billing_core::notification::wire::request;
use billing_core::notification::{parse_notification_list, NotificationView};
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/notifications", list, lane::LIST).doc(
        doc("list_notifications", "Notifications", "The branch's customer notifications")
            .query::<request::NotificationListQuery>()
            .ok::<ListResource<NotificationView>>(),
    ),
    route(Method::GET, "/notifications/{notification_id}", get, lane::GET)
        .doc(doc("get_notification", "Notifications", "One notification with its attempts").ok::<NotificationView>()),
];

fn list(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let (f, q) = parse_notification_list(&r.query)?;
    let page = b.notifications().list(s, &f, &q)?;
    let data: Vec<_> = page.items.iter().map(|n| n.view()).collect();
    Ok(Reply::page(data, page.pagination()))
}

fn get(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    Ok(Reply::of(&b.notifications().get(s, r.id("notification_id")?)?.view()))
}
