//! PaymentLinkDetailed (list entries are the same document).

use super::PaymentLink;
use crate::clock::format_rfc3339;
use crate::coupon::Coupon;
use crate::org::OrgSettings;
use crate::pricing::totals;
use crate::product::Product;
use serde_json::{json, Value};

/// Everything the response of a link needs besides the link itself.
pub struct PaymentLinkView<'a> {
    pub link: &'a PaymentLink,
    /// The products of its items (a deleted one shows as `null`).
    pub products: &'a [Product],
    /// Its link-level coupons (CouponDto; deleted ones are left out).
    pub coupons: &'a [Coupon],
    pub public_url: &'a str,
    pub settings: &'a OrgSettings,
}

impl PaymentLinkView<'_> {
    /// PaymentLinkItemDto.
    fn item(&self, it: &super::PaymentLinkItem) -> Value {
        let l = self.link;
        let line = &it.line;
        json!({
            "created_at": format_rfc3339(&line.created_at),
            "updated_at": it.updated_at.as_ref().map(format_rfc3339),
            "id": it.id,
            "product_id": line.product_id,
            "quantity": line.quantity,
            "unit_price": line.unit_price,
            "original_amount": line.original_amount,
            "discounted_amount": line.discounted_amount,
            "vat_amount": line.vat_amount,
            "price_excluding_vat": line.excluding_vat,
            "coupon_calculation_metadata": totals::metadata_json(&line.coupons),
            "product": self.products.iter().find(|p| p.id == line.product_id).map(|p| p.to_json(self.settings)),
            "allow_custom_quantity": it.allow_custom_quantity,
            "min_quantity": it.min_quantity,
            "max_quantity": it.max_quantity,
            "currency": l.currency,
            "product_price_id": line.price_id,
        })
    }

    pub fn detailed(&self) -> Value {
        let l = self.link;
        let pm = &l.payment_methods;
        let mut v = json!({
            "created_at": format_rfc3339(&l.created_at),
            "updated_at": l.updated_at.as_ref().map(format_rfc3339),
            "id": l.id,
            "short_id": l.short_id,
            "name": l.name,
            "description": l.description,
            "amount": l.amount,
            "amount_in_smallest_unit": l.amount.minor_units(),
            "original_amount": l.original_amount,
            "item_level_discounted_amount": l.item_level_discounted_amount,
            "total_vat_amount": l.total_vat_amount,
            "total_price_excluding_vat": l.total_price_excluding_vat,
            "coupon_calculation_metadata": totals::metadata_json(&l.coupons),
            "currency": l.currency,
            "home_currency_amount": Value::Null,
            "exchange_rate_at_creation": Value::Null,
            "max_number_of_payments": l.max_number_of_payments,
            "number_of_payments": l.payments_count,
            "valid_until": l.valid_until.as_ref().map(format_rfc3339),
            "confirmation_message": l.checkout.confirmation_message,
            "recurring_interval": l.recurring_interval,
            "recurring_interval_count": l.recurring_interval_count,
            "trial_period_days": l.checkout.trial_period_days,
        });
        let more = json!({
            "status": l.status,
            "organization_id": l.org_id,
            "branch_id": l.branch_id,
            "user_id": l.user_id,
            "organization_consumer_id": l.consumer_id,
            "deactivate_message": l.deactivate_message,
            "custom_fields": l.checkout.custom_fields,
            "success_redirect_url": l.checkout.success_redirect_url,
            "failure_redirect_url": l.checkout.failure_redirect_url,
            "custom_metadata": l.custom_metadata,
            "contact_information_type": l.contact_information_type,
            "items": l.items.iter().map(|it| self.item(it)).collect::<Vec<_>>(),
            "coupons": self.coupons.iter().map(Coupon::to_json).collect::<Vec<_>>(),
            "override_payment_methods": {
                "visa": pm.visa,
                "mastercard": pm.mastercard,
                "amex": pm.amex,
                "bank_transfer": pm.bank_transfer,
                "installment": pm.installment,
            },
            "url": l.url(self.public_url),
            "amount_collected": l.amount_collected,
        });
        if let (Value::Object(a), Value::Object(b)) = (&mut v, more) {
            a.extend(b);
        }
        v
    }
}
