//! The route table: a path under `/api/v2` and a method resolve to a [`Route`]; a known path
//! with another method is a 405, anything else a 404.

use hyper::Method;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Me,
    Invite,
    ListBranches,
    CreateBranch,
    GetBranch(String),
    UpdateBranch(String),
    DeleteBranch(String),
    ListConsumers,
    CreateConsumer,
    GetConsumer(String),
    UpdateConsumer(String),
    DeleteConsumer(String),
    ListProducts,
    CreateProduct,
    GetProduct(String),
    UpdateProduct(String),
    DeleteProduct(String),
    AddPrice(String),
    UpdatePrice(String, String),
    DeletePrice(String, String),
    ListCoupons,
    CreateCoupon,
    GetCoupon(String),
    UpdateCoupon(String),
    DeleteCoupon(String),
    SandboxClock,
    AdvanceSandboxClock,
    ListWebhooks,
    CreateWebhook,
    GetWebhook(String),
    UpdateWebhook(String),
    DeleteWebhook(String),
    RotateWebhookSecret(String),
    ListWebhookDeliveries(String),
    GetWebhookDelivery(String),
    RetryWebhookDelivery(String),
    ListInvoices,
    CreateInvoice,
    GetInvoice(String),
    UpdateInvoiceInPlace(String),
    VoidInvoice(String),
    SendInvoice(String),
    ListPayments,
    GetPayment(String),
    MarkPaymentPaid(String),
    RefundPayment(String),
    AutoChargePayment(String),
}

impl Route {
    /// Whether the operation makes outgoing HTTP calls (webhook deliveries): it then runs on a
    /// blocking thread, never on the SQLite write executor.
    pub fn sends_http(&self) -> bool {
        matches!(
            self,
            Route::AdvanceSandboxClock | Route::RetryWebhookDelivery(_) | Route::RefundPayment(_) | Route::AutoChargePayment(_)
        )
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Resolution {
    Found(Route),
    MethodNotAllowed,
    NotFound,
}

pub fn resolve(method: &Method, path: &str) -> Resolution {
    use Resolution::*;
    use Route::*;
    let Some(rest) = path.strip_prefix("/api/v2/") else {
        return NotFound;
    };
    let segs: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let m = method.clone();
    let pick = |options: Vec<(Method, Route)>| match options.into_iter().find(|(om, _)| *om == m) {
        Some((_, r)) => Found(r),
        None => MethodNotAllowed,
    };
    let s = |x: &str| x.to_string();
    match segs.as_slice() {
        ["me"] => pick(vec![(Method::GET, Me)]),
        ["organization", "invite"] => pick(vec![(Method::POST, Invite)]),
        ["branch"] => pick(vec![(Method::GET, ListBranches), (Method::POST, CreateBranch)]),
        ["branch", id] => pick(vec![
            (Method::GET, GetBranch(s(id))),
            (Method::PUT, UpdateBranch(s(id))),
            (Method::DELETE, DeleteBranch(s(id))),
        ]),
        ["consumers"] => pick(vec![(Method::GET, ListConsumers), (Method::POST, CreateConsumer)]),
        ["consumers", id] => pick(vec![
            (Method::GET, GetConsumer(s(id))),
            (Method::PUT, UpdateConsumer(s(id))),
            (Method::DELETE, DeleteConsumer(s(id))),
        ]),
        ["products"] => pick(vec![(Method::GET, ListProducts), (Method::POST, CreateProduct)]),
        ["products", id] => pick(vec![
            (Method::GET, GetProduct(s(id))),
            (Method::PUT, UpdateProduct(s(id))),
            (Method::DELETE, DeleteProduct(s(id))),
        ]),
        ["products", id, "prices"] => pick(vec![(Method::POST, AddPrice(s(id)))]),
        ["products", id, "prices", price] => pick(vec![
            (Method::PUT, UpdatePrice(s(id), s(price))),
            (Method::DELETE, DeletePrice(s(id), s(price))),
        ]),
        ["coupons"] => pick(vec![(Method::GET, ListCoupons), (Method::POST, CreateCoupon)]),
        ["coupons", id] => pick(vec![
            (Method::GET, GetCoupon(s(id))),
            (Method::PUT, UpdateCoupon(s(id))),
            (Method::DELETE, DeleteCoupon(s(id))),
        ]),
        ["sandbox", "clock"] => pick(vec![(Method::GET, SandboxClock)]),
        ["sandbox", "clock", "advance"] => pick(vec![(Method::POST, AdvanceSandboxClock)]),
        ["webhooks"] => pick(vec![(Method::GET, ListWebhooks), (Method::POST, CreateWebhook)]),
        ["webhooks", "deliveries", id] => pick(vec![(Method::GET, GetWebhookDelivery(s(id)))]),
        ["webhooks", "deliveries", id, "retry"] => pick(vec![(Method::POST, RetryWebhookDelivery(s(id)))]),
        ["webhooks", id] => pick(vec![
            (Method::GET, GetWebhook(s(id))),
            (Method::PUT, UpdateWebhook(s(id))),
            (Method::DELETE, DeleteWebhook(s(id))),
        ]),
        ["webhooks", id, "rotate-secret"] => pick(vec![(Method::POST, RotateWebhookSecret(s(id)))]),
        ["webhooks", id, "deliveries"] => pick(vec![(Method::GET, ListWebhookDeliveries(s(id)))]),
        ["invoices"] => pick(vec![(Method::GET, ListInvoices), (Method::POST, CreateInvoice)]),
        ["invoices", id] => pick(vec![(Method::GET, GetInvoice(s(id)))]),
        ["invoices", id, "inplace"] => pick(vec![(Method::PATCH, UpdateInvoiceInPlace(s(id)))]),
        ["invoices", id, "void"] => pick(vec![(Method::POST, VoidInvoice(s(id)))]),
        ["invoices", id, "send"] => pick(vec![(Method::POST, SendInvoice(s(id)))]),
        ["payments"] => pick(vec![(Method::GET, ListPayments)]),
        ["payments", "auto-charge-on-demand", id] => pick(vec![(Method::POST, AutoChargePayment(s(id)))]),
        ["payments", id] => pick(vec![(Method::GET, GetPayment(s(id)))]),
        ["payments", id, "mark-paid"] => pick(vec![(Method::POST, MarkPaymentPaid(s(id)))]),
        ["payments", id, "refund"] => pick(vec![(Method::POST, RefundPayment(s(id)))]),
        _ => NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_paths_and_methods() {
        assert_eq!(resolve(&Method::GET, "/api/v2/me"), Resolution::Found(Route::Me));
        assert_eq!(
            resolve(&Method::GET, "/api/v2/consumers/abc"),
            Resolution::Found(Route::GetConsumer("abc".into()))
        );
        assert_eq!(resolve(&Method::PATCH, "/api/v2/consumers/abc"), Resolution::MethodNotAllowed);
        assert_eq!(resolve(&Method::GET, "/api/v2/nothing"), Resolution::NotFound);
        assert_eq!(resolve(&Method::GET, "/api/v1/me"), Resolution::NotFound);
        assert_eq!(
            resolve(&Method::DELETE, "/api/v2/products/p/prices/x"),
            Resolution::Found(Route::DeletePrice("p".into(), "x".into()))
        );
    }
}
