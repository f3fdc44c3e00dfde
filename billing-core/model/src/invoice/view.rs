//! InvoiceDetailed and InvoiceListItem.

use super::{Invoice, InvoiceDetail};
use crate::clock::format_rfc3339;
use crate::payment::Payment;
use crate::pricing::totals;
use serde_json::{json, Value};

/// Everything the response of an invoice needs besides the invoice itself.
pub struct InvoiceView<'a> {
    pub invoice: &'a Invoice,
    pub payments: &'a [Payment],
    pub consumer: Option<&'a crate::consumer::Consumer>,
    pub products: &'a [crate::product::Product],
    pub branch_name: &'a str,
    pub public_url: &'a str,
    pub settings: &'a crate::org::OrgSettings,
}

impl InvoiceView<'_> {
    fn base(&self) -> Value {
        let i = self.invoice;
        let flow = "ALL";
        json!({
            "created_at": format_rfc3339(&i.created_at),
            "updated_at": i.updated_at.as_ref().map(format_rfc3339),
            "id": i.id,
            "payment_link_id": i.payment_link_id,
            "user_id": i.user_id,
            "organization_id": i.org_id,
            "organization_consumer_id": i.consumer_id,
            "account_id": Value::Null,
            "branch_id": i.branch_id,
            "org_invoice_number": i.org_invoice_number,
            "description": i.description,
            "total_amount": i.total_amount,
            "original_amount": i.original_amount,
            "item_level_discounted_amount": i.item_level_discounted_amount,
            "total_vat_amount": i.total_vat_amount,
            "total_price_excluding_vat": i.total_price_excluding_vat,
            "coupon_calculation_metadata": totals::metadata_json(&i.coupons),
            "currency": i.currency,
            "home_currency_amount": Value::Null,
            "home_currency_amount_actual": Value::Null,
            "exchange_rate_at_creation": Value::Null,
            "consumer_message": Value::Null,
            "status": i.status,
            "payment_method": "PAYMENTGATEWAY",
            "allowed_payment_flow": flow,
            "current_payment_flow": flow,
            "period_start": Value::Null,
            "period_end": Value::Null,
            "recurring_interval": Value::Null,
            "recurring_interval_count": Value::Null,
            "type": if i.installments.is_some() { "INSTALLMENTS" } else { "ONE_OFF" },
            "scheduled_on": format_rfc3339(&i.scheduled_on),
            "remaining_amount": i.remaining_amount(self.payments),
            "paid_amount": i.paid_amount,
            "organization_consumer": self.consumer.map(|c| {
                let mut v = c.summary();
                v["consumer"] = json!({"id": c.id, "phone_number": c.phone_number, "email": c.email, "preferred_language": c.preferred_language});
                v
            }),
            "subscription_id": i.subscription_id,
            "url": i.url(self.public_url),
        })
    }

    /// InvoiceDetailed.
    pub fn detailed(&self) -> Value {
        let i = self.invoice;
        let mut v = self.base();
        v["invoice_number"] = json!(i.org_invoice_number);
        v["exclude_coupons_if_installments"] = json!(i.exclude_coupons_if_installments);
        v["items"] = Value::Array(
            i.items
                .iter()
                .map(|it| {
                    json!({
                        "created_at": format_rfc3339(&it.created_at),
                        "updated_at": Value::Null,
                        "id": it.id,
                        "product_id": it.product_id,
                        "product": self.products.iter().find(|p| p.id == it.product_id).map(|p| p.to_json(self.settings)),
                        "quantity": it.quantity,
                        "original_amount": it.original_amount,
                        "discounted_amount": it.discounted_amount,
                        "coupon_calculation_metadata": totals::metadata_json(&it.coupons),
                        "currency": i.currency,
                        "unit_price": it.unit_price,
                        "product_price_id": it.price_id,
                        "vat_amount": it.vat_amount,
                        "price_excluding_vat": it.excluding_vat,
                    })
                })
                .collect(),
        );
        v["branch"] = json!({"id": i.branch_id, "name": self.branch_name});
        v["payments"] = Value::Array(self.payments.iter().map(Payment::to_dto).collect());
        v["subscription"] = Value::Null;
        v["payment_methods"] = json!(i.payment_methods);
        v["recurrence_pattern"] = Value::Null;
        v["parent_id"] = Value::Null;
        v["custom_field_answers"] = json!({});
        v
    }

    /// InvoiceListItem; `payments` only when asked for (`include_payments`).
    pub fn list_item(&self, include_payments: bool) -> Value {
        let mut v = self.base();
        let remaining = self.invoice.remaining_amount(self.payments);
        v["subscription"] = Value::Null;
        v["payments"] = if include_payments {
            Value::Array(self.payments.iter().map(Payment::to_dto).collect())
        } else {
            Value::Null
        };
        v["total_number_of_payments"] = json!(self.payments.len());
        v["last_payment_paid_at"] = json!(self.payments.iter().filter_map(|p| p.payed_at).max().as_ref().map(format_rfc3339));
        v["remaining_amount_in_smallest_unit"] = json!(remaining.minor_units());
        v
    }
}

impl InvoiceDetail {
    /// The invoice's views (InvoiceDetailed, InvoiceListItem).
    pub fn view<'a>(&'a self, branch_name: &'a str, public_url: &'a str, settings: &'a crate::org::OrgSettings) -> InvoiceView<'a> {
        InvoiceView {
            invoice: &self.invoice,
            payments: &self.payments,
            consumer: self.consumer.as_ref(),
            products: &self.products,
            branch_name,
            public_url,
            settings,
        }
    }
}
