//! Payment requests (mark-paid, refund, list parameters) and the PaymentDto and
//! PaymentResponse views.

use super::{MarkPaid, Payment, PaymentFilter, PaymentMethod, PaymentSort, PaymentStatus, RefundReason, RefundRequest};
use crate::clock::format_rfc3339;
use crate::error::Result;
use crate::ids::InvoiceId;
use crate::list::{ListQuery, Query, QueryParams};
use crate::wire::Body;
use serde_json::{json, Value};

impl Payment {
    /// The fields PaymentDto and PaymentResponse share.
    fn common_json(&self) -> Value {
        json!({
            "id": self.id,
            "amount": self.amount,
            "amount_in_smallest_unit": self.amount.minor_units(),
            "currency": self.amount.currency(),
            "scheduled_on": format_rfc3339(&self.scheduled_on),
            "invoice_payment_number": self.number,
            "type": self.payment_type,
            "payment_method": self.method,
            "current_status": self.status,
            "payed_at": self.payed_at.as_ref().map(format_rfc3339),
            "refunded_at": self.refunded_at.as_ref().map(format_rfc3339),
            // The mark-paid note (not in the public schema; returned so that it is not lost).
            "note": self.note,
        })
    }

    /// PaymentDto (as embedded in invoices).
    pub fn to_dto(&self) -> Value {
        let mut v = self.common_json();
        v["settled_at"] = Value::Null;
        v["pdf_link"] = Value::Null;
        v["paid_to_account_id"] = Value::Null;
        v
    }

    /// PaymentResponse.
    pub fn to_json(&self) -> Value {
        let mut v = self.common_json();
        v["invoice_id"] = json!(self.invoice_id);
        v["refund_reason"] = json!(self.refund_reason);
        v["refund_note"] = json!(self.refund_note);
        v["latest_pgw_message"] = json!(self.latest_pgw_message);
        v["created_at"] = json!(format_rfc3339(&self.created_at));
        v["updated_at"] = json!(self.updated_at.as_ref().map(format_rfc3339));
        v
    }
}

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
