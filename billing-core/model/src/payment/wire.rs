//! Payment requests (mark-paid, refund, list parameters): their readers, and their
//! documentation.

use super::{MarkPaid, PaymentFilter, PaymentMethod, PaymentSort, PaymentStatus, RefundReason, RefundRequest};
use crate::error::Result;
use crate::ids::InvoiceId;
use crate::list::{ListQuery, Query, QueryParams};
use crate::wire::Body;
use serde_json::Value;

impl MarkPaid {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let method = b.req_enum("payment_method", PaymentMethod::parse, &PaymentMethod::expected());
        let note = b.opt_free_text("note", crate::wire::MAX_NOTE);
        b.finish()?;
        Ok(MarkPaid {
            method: method.expect("checked"),
            note,
        })
    }
}

impl RefundRequest {
    pub fn parse(v: &Value) -> Result<Self> {
        let mut b = Body::new(v);
        let reason = b.req_enum("refund_reason", RefundReason::parse, &RefundReason::expected());
        let note = b.opt_free_text("refund_note", crate::wire::MAX_NOTE);
        let allow_multiple = b.opt_bool("allow_refund_multiple_related_payments").unwrap_or(false);
        b.finish()?;
        Ok(RefundRequest {
            reason: reason.expect("checked"),
            note,
            allow_multiple,
        })
    }
}

pub fn parse_payment_list(params: &QueryParams) -> Result<(ListQuery<PaymentSort>, PaymentFilter)> {
    let mut q = Query::new(params);
    let list = q.list(PaymentSort::CreatedAt, PaymentSort::parse, &PaymentSort::expected());
    let statuses = q.enums("statuses", PaymentStatus::parse, &PaymentStatus::expected());
    let invoice_ids = q.uuids::<InvoiceId>("invoice_id");
    let filter = PaymentFilter {
        invoice_ids,
        statuses,
        from_date: q.datetime("from_date"),
        to_date: q.datetime("to_date"),
    };
    q.finish()?;
    Ok((list, filter))
}

/// What the requests look like, for `/openapi.json` (the readers above are the truth; the
/// server's tests check that each reads exactly these fields).
pub mod request {
    use super::{PaymentMethod, PaymentSort, PaymentStatus, RefundReason};
    use crate::schema::{DateTime, Id};
    use schemars::JsonSchema;

    /// PaymentMarkPaidRequest: a payment made outside the gateway.
    #[derive(JsonSchema)]
    pub struct PaymentMarkPaidRequest {
        /// How it was paid: a manual method (`CASH`, `BANK_TRANSFER`, `CARD`, `QURRAH`).
        pub payment_method: PaymentMethod,
        /// A note kept with the payment (up to 1000 characters).
        pub note: Option<String>,
    }

    /// PaymentRefundRequest: a full refund of a paid payment.
    #[derive(JsonSchema)]
    pub struct PaymentRefundRequest {
        /// Why the payment is refunded.
        pub refund_reason: RefundReason,
        /// A note kept with the refund (up to 1000 characters).
        pub refund_note: Option<String>,
        /// Refund the payments paid in the same transaction too (refused without it when
        /// there are some).
        pub allow_refund_multiple_related_payments: Option<bool>,
    }

    crate::list_query! {
        /// Payments.
        PaymentListQuery(PaymentSort) {
            /// Payments in these statuses (repeated or comma-separated).
            statuses: Vec<PaymentStatus>,
            /// Payments of these invoices (repeated).
            invoice_id: Vec<Id>,
            /// Created at or after (inclusive).
            from_date: DateTime,
            /// Created at or before (inclusive).
            to_date: DateTime,
        }
    }
}
