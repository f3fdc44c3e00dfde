//! Route handlers. Each turns the request's raw parts into typed input (via billing-core's
//! parsers) and calls one billing-core operation; there is no business logic here.

mod account;
mod catalog;
mod consumers;
mod invoices;
mod payments;
mod webhooks;

use crate::backend::Backend;
use crate::http::Incoming2;
use crate::router::Route;
use billing_core::auth::Scope;
use billing_core::error::{Error, FieldError, Result};
use billing_core::Billing;
use serde_json::Value;
use std::str::FromStr;

pub enum Reply {
    Json(Value),
    /// A body already serialized (hot paths serialize their response structs directly).
    Bytes(Vec<u8>),
    /// The spec's "empty success body".
    Empty,
}

impl Reply {
    /// Serializes a response struct without building a `Value` tree first.
    pub fn of<T: serde::Serialize>(body: &T) -> Reply {
        Reply::Bytes(serde_json::to_vec(body).expect("response types serialize"))
    }
}

/// The list envelope.
#[derive(serde::Serialize)]
pub struct ListBody<T: serde::Serialize> {
    pub data: Vec<T>,
    pub pagination: billing_core::list::Pagination,
}

/// An operation ready to run once the caller is authenticated.
pub type Op = Box<dyn FnOnce(&Billing<Backend>, &Scope) -> Result<Reply> + Send>;

/// The request data a handler may read, owned so the operation can move to a blocking thread.
pub struct Input {
    pub body: Result<Value>,
    pub query: billing_core::list::QueryParams,
    pub language: Option<String>,
}

impl Input {
    pub fn from(req: &Incoming2) -> Self {
        Input {
            body: req.json(),
            query: req.query.clone(),
            language: req.header("language").map(str::to_string),
        }
    }
}

/// A path parameter that must be a UUID; anything else is a 422 at `["path", name]`.
pub fn path_id<T: FromStr>(name: &str, raw: &str) -> Result<T> {
    T::from_str(raw).map_err(|_| {
        Error::invalid(FieldError::new(
            "uuid_parsing",
            vec!["path".into(), name.into()],
            "Input should be a valid UUID",
        ))
    })
}

pub fn build(route: Route, input: Input) -> Op {
    use Route::*;
    match route {
        Me | Invite | SandboxClock | AdvanceSandboxClock | ListBranches | CreateBranch | GetBranch(_) | UpdateBranch(_) | DeleteBranch(_) => {
            account::build(route, input)
        }
        ListConsumers | CreateConsumer | GetConsumer(_) | UpdateConsumer(_) | DeleteConsumer(_) => consumers::build(route, input),
        ListInvoices | CreateInvoice | GetInvoice(_) | UpdateInvoiceInPlace(_) | VoidInvoice(_) | SendInvoice(_) => invoices::build(route, input),
        ListPayments | GetPayment(_) | MarkPaymentPaid(_) | RefundPayment(_) | AutoChargePayment(_) => payments::build(route, input),
        ListWebhooks
        | CreateWebhook
        | GetWebhook(_)
        | UpdateWebhook(_)
        | DeleteWebhook(_)
        | RotateWebhookSecret(_)
        | ListWebhookDeliveries(_)
        | GetWebhookDelivery(_)
        | RetryWebhookDelivery(_) => webhooks::build(route, input),
        _ => catalog::build(route, input),
    }
}
