//! Invoice requests: InvoiceCreate, InvoiceInPlaceUpdate and the list parameters.

use super::{
    InvoiceCreate, InvoiceFilter, InvoiceInPlaceUpdate, InvoiceListRequest, InvoiceSort, InvoiceStatus, ItemRequest, PaymentMatch, PaymentMethods, MAX_ITEMS,
};
use crate::clock::parse_datetime;
use crate::error::{LocPart, Problems, Result};
use crate::ids::{ConsumerId, CouponId, ProductId};
use crate::list::{Query, QueryParams};
use crate::money::Currency;
use crate::payment::PaymentStatus;
use crate::wire::{uuid_item, Body};
use serde_json::Value;

fn parse_item(v: &Value, loc: Vec<LocPart>, problems: &mut Problems) -> Option<ItemRequest> {
    let mut b = Body::at(v, loc);
    let product_id = b.req_uuid::<ProductId>("product_id");
    let quantity = match b.req_int("quantity") {
        Some(q) if !(1..=1_000_000).contains(&q) => {
            b.fail("greater_than", "quantity", "Input should be an integer between 1 and 1000000");
            None
        }
        q => q.map(|q| q as u32),
    };
    let coupons = b.opt_list("coupons", uuid_item::<CouponId>).unwrap_or_default();
    let ok = b.problems.is_empty();
    problems.0.extend(b.problems.0);
    match (ok, product_id, quantity) {
        (true, Some(product_id), Some(quantity)) => Some(ItemRequest { product_id, quantity, coupons }),
        _ => None,
    }
}

fn parse_payment_methods(b: &mut Body<'_>) -> Option<PaymentMethods> {
    let raw = b.raw("payment_methods")?;
    let mut p = Body::at(raw, b.loc("payment_methods"));
    let m = PaymentMethods {
        mada: p.opt_bool("mada").unwrap_or(false),
        visa: p.opt_bool("visa").unwrap_or(false),
        mastercard: p.opt_bool("mastercard").unwrap_or(false),
        amex: p.opt_bool("amex").unwrap_or(false),
        bank_transfer: p.opt_bool("bank_transfer").unwrap_or(false),
        installment: p.opt_bool("installment").unwrap_or(false),
        qurrah: p.opt_bool("qurrah").unwrap_or(false),
    };
    let ok = p.problems.is_empty();
    b.problems.0.extend(p.problems.0);
    ok.then_some(m)
}

fn dedup<T: PartialEq + Copy>(v: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

impl InvoiceCreate {
    pub fn parse(v: &Value, default_currency: Currency) -> Result<Self> {
        let mut b = Body::new(v);
        let notify_consumer = b.opt_bool("notify_consumer").unwrap_or(true);
        let description = b.opt_free_text("description", crate::wire::MAX_DESCRIPTION);
        let items = b.req_list("items", parse_item);
        if let Some(items) = &items {
            if items.is_empty() {
                b.fail("too_short", "items", "List should have at least 1 item after validation, not 0");
            } else if items.len() > MAX_ITEMS {
                b.fail("too_long", "items", format!("List should have at most {MAX_ITEMS} items"));
            }
        }
        let payment_methods = parse_payment_methods(&mut b).unwrap_or_default();
        let coupons = b.opt_list("coupons", uuid_item::<CouponId>).unwrap_or_default();
        let consumer_id = b.req_uuid::<ConsumerId>("organization_consumer_id");
        let scheduled_on = b.opt_parsed("scheduled_on", |s| parse_datetime(s).ok_or("invalid date-time"));
        let exclude = b.opt_bool("exclude_coupons_if_installments").unwrap_or(false);
        let currency = b.opt_currency("currency").unwrap_or(default_currency);
        b.finish()?;
        Ok(InvoiceCreate {
            notify_consumer,
            description,
            items: items
                .expect("checked")
                .into_iter()
                .map(|mut i| {
                    i.coupons = dedup(i.coupons);
                    i
                })
                .collect(),
            payment_methods,
            coupons: dedup(coupons),
            consumer_id: consumer_id.expect("checked"),
            scheduled_on,
            exclude_coupons_if_installments: exclude,
            currency,
        })
    }
}

impl InvoiceInPlaceUpdate {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let u = InvoiceInPlaceUpdate {
            scheduled_on: b.opt_parsed("scheduled_on", |s| parse_datetime(s).ok_or("invalid date-time")),
            description: b.opt_free_text("description", crate::wire::MAX_DESCRIPTION),
        };
        b.finish()?;
        Ok(u)
    }
}

pub fn parse_invoice_list(params: &QueryParams) -> Result<InvoiceListRequest> {
    let mut q = Query::new(params);
    let list = q.list(InvoiceSort::CreatedAt, InvoiceSort::parse, &InvoiceSort::expected());
    let include_payments = q.bool("include_payments").unwrap_or(false);
    let statuses = q.enums("statuses", InvoiceStatus::parse, &InvoiceStatus::expected());
    let payment_statuses = q.enums("payment_statuses", PaymentStatus::parse, &PaymentStatus::expected());
    let currencies = q.currencies("currencies");
    let mut has_payments = vec![];
    if !payment_statuses.is_empty() {
        has_payments.push(PaymentMatch {
            statuses: payment_statuses,
            methods: vec![],
        });
    }
    if q.bool("payments_not_settled").unwrap_or(false) {
        has_payments.push(PaymentMatch::not_settled());
    }
    let filter = InvoiceFilter {
        statuses,
        has_payments,
        payment_link_id: q.uuid("payment_link_id"),
        from_date: q.datetime("from_date"),
        to_date: q.datetime("to_date"),
        due_date_from: q.datetime("due_date_from"),
        due_date_to: q.datetime("due_date_to"),
        from_price: q.decimal("from_price"),
        to_price: q.decimal("to_price"),
        consumer_id: q.uuid("organization_consumer_id"),
        subscription_id: q.uuid("subscription_id"),
        currencies,
    };
    q.finish()?;
    Ok(InvoiceListRequest {
        query: list,
        filter,
        include_payments,
    })
}

/// What the requests look like, for `/openapi.json` (the readers above are the truth; the
/// server's tests check that each reads exactly these fields).
pub mod request {
    use super::super::view_parts::InvoicePaymentMethodDto;
    use super::{InvoiceSort, InvoiceStatus, PaymentStatus};
    use crate::money::Currency;
    use crate::schema::{Amount, DateTime, Id, Integer};
    use schemars::JsonSchema;

    /// InvoiceCreate: a new invoice for a consumer of the request's branch.
    #[derive(JsonSchema)]
    pub struct InvoiceCreate {
        /// Send the invoice to the consumer now (default `true`): it becomes SENT when the
        /// consumer has an e-mail or a phone.
        pub notify_consumer: Option<bool>,
        /// The merchant's description of the invoice.
        #[schemars(length(max = 2000))]
        pub description: Option<String>,
        /// The lines: 1 to 100 products with their quantities.
        pub items: Vec<InvoiceItemCreateDto>,
        /// The methods the payer may pay with. Default: the organization's payment methods.
        pub payment_methods: Option<InvoicePaymentMethodDto>,
        /// Coupon ids applied to the whole invoice, in order (duplicates count once).
        pub coupons: Option<Vec<String>>,
        /// The consumer the invoice bills (a live consumer of the branch).
        pub organization_consumer_id: Id,
        /// When the invoice is due. Default: now.
        pub scheduled_on: Option<DateTime>,
        /// Drop the coupons when the payer chooses installments (default `false`).
        pub exclude_coupons_if_installments: Option<bool>,
        /// The invoice's currency (default: the organization's default currency); every product
        /// needs a price in it.
        pub currency: Option<Currency>,
    }

    /// InvoiceItemCreateDto: one line of a new invoice.
    #[derive(JsonSchema)]
    pub struct InvoiceItemCreateDto {
        /// The product sold (a product of the branch with a price in the invoice's currency).
        pub product_id: Id,
        /// How many: 1 to 1,000,000.
        pub quantity: Integer,
        /// Coupon ids applied to this line, in order.
        pub coupons: Option<Vec<String>>,
    }

    /// InvoiceInPlaceUpdate: the fields to change (left out: kept).
    #[derive(JsonSchema)]
    pub struct InvoiceInPlaceUpdate {
        /// The new due date (a single payment's date follows it).
        pub scheduled_on: Option<DateTime>,
        /// The new description.
        #[schemars(length(max = 2000))]
        pub description: Option<String>,
    }

    crate::list_query! {
        /// Invoices.
        InvoiceListQuery(InvoiceSort) {
            /// Answer each invoice's payments (default `false`: `payments` is `null`).
            include_payments: bool,
            /// Invoices in these statuses (repeated or comma-separated).
            statuses: Vec<InvoiceStatus>,
            /// Invoices having payments in these statuses.
            payment_statuses: Vec<PaymentStatus>,
            /// Comma-separated currency codes.
            currencies: Vec<Currency>,
            /// Only invoices with a SUCCEEDED card or wallet payment.
            payments_not_settled: bool,
            /// Invoices paid through this payment link.
            payment_link_id: Id,
            /// Created at or after (inclusive).
            from_date: DateTime,
            /// Created at or before (inclusive).
            to_date: DateTime,
            /// Due at or after (inclusive).
            due_date_from: DateTime,
            /// Due at or before (inclusive).
            due_date_to: DateTime,
            /// `total_amount` at least this.
            from_price: Amount,
            /// `total_amount` at most this.
            to_price: Amount,
            /// Invoices of this consumer.
            organization_consumer_id: Id,
            /// Invoices of this subscription.
            subscription_id: Id,
        }
    }
}
