//! SubscriptionDetailed (list entries are the same document).

use super::{Freeze, Subscription, SubscriptionItem, Trial};
use crate::clock::{format_rfc3339, Timestamp};
use crate::consumer::Consumer;
use crate::org::OrgSettings;
use crate::pricing::totals;
use crate::product::Product;
use serde_json::{json, Value};

/// Everything the response of a subscription needs besides the subscription itself.
pub struct SubscriptionView<'a> {
    pub sub: &'a Subscription,
    /// The products of its items (a deleted one shows as `null`).
    pub products: &'a [Product],
    pub consumer: Option<&'a Consumer>,
    /// InvoiceBase of the latest invoice, or `null`.
    pub latest_invoice: Value,
    /// Its trial, if it had one.
    pub trial: Option<&'a Trial>,
    /// [`super::freeze`]'s pick: the freeze in force, else the next, else the last.
    pub latest_freeze: Option<&'a Freeze>,
    /// PendingPlanChange of the SCHEDULED change, or `null`.
    pub pending_change: Value,
    pub settings: &'a OrgSettings,
    /// The organization's time (for `remaining_days`).
    pub now: Timestamp,
}

impl SubscriptionView<'_> {
    /// SubscriptionItemDto.
    fn item(&self, it: &SubscriptionItem) -> Value {
        let line = &it.line;
        json!({
            "created_at": format_rfc3339(&line.created_at),
            "updated_at": it.updated_at.as_ref().map(format_rfc3339),
            "id": it.id,
            "product_id": line.product_id,
            "subscription_id": self.sub.id,
            "quantity": line.quantity,
            "unit_price": line.unit_price,
            "original_amount": line.original_amount,
            "discounted_amount": line.discounted_amount,
            "vat_amount": line.vat_amount,
            "price_excluding_vat": line.excluding_vat,
            "coupons": line.coupon_ids,
            "coupon_calculation_metadata": totals::metadata_json(&line.coupons),
            "product": self.products.iter().find(|p| p.id == line.product_id).map(|p| p.to_json(self.settings)),
        })
    }

    /// Whole days left in the current period (rounded up; 0 once it ended or the subscription
    /// is over).
    fn remaining_days(&self) -> i64 {
        let s = self.sub;
        if s.status.is_terminal() || s.current_period_end <= self.now {
            return 0;
        }
        let us = (s.current_period_end - self.now).num_microseconds().unwrap_or(i64::MAX);
        let day = 86_400_000_000i64;
        (us + day - 1) / day
    }

    pub fn detailed(&self) -> Value {
        let s = self.sub;
        let pm = &s.payment_methods;
        let mut v = json!({
            "created_at": format_rfc3339(&s.created_at),
            "updated_at": s.updated_at.as_ref().map(format_rfc3339),
            "id": s.id,
            "description": s.description,
            "amount": s.amount,
            "amount_in_smallest_unit": s.amount.minor_units(),
            "original_amount": s.original_amount,
            "item_level_discounted_amount": s.item_level_discounted_amount,
            "total_vat_amount": s.total_vat_amount,
            "total_price_excluding_vat": s.total_price_excluding_vat,
            "coupon_calculation_metadata": totals::metadata_json(&s.coupons),
            "coupons": s.coupon_ids,
            "remaining_days": self.remaining_days(),
            "currency": s.currency,
            "home_currency_amount": Value::Null,
            "exchange_rate_at_creation": Value::Null,
            "recurring_interval": s.recurring_interval,
            "recurring_interval_count": s.recurring_interval_count,
            "status": s.status,
            "current_period_start": format_rfc3339(&s.current_period_start),
            "current_period_end": format_rfc3339(&s.current_period_end),
            "current_cycle_number": s.current_cycle_number,
            "until_cycle_number": s.until_cycle_number,
            "cancel_at_period_end": s.cancel_at_period_end,
            "cancel_at_cycle_number": s.cancel_at_cycle_number(),
        });
        let more = json!({
            "started_at": s.started_at.as_ref().map(format_rfc3339),
            "ended_at": s.ended_at.as_ref().map(format_rfc3339),
            "user_id": s.user_id,
            "organization_id": s.org_id,
            "branch_id": s.branch_id,
            "organization_consumer_id": s.consumer_id,
            "latest_invoice_id": s.latest_invoice_id,
            "trial_period_days": self.trial.map(Trial::period_days),
            "trial_end": self.trial.map(|t| format_rfc3339(&t.end)),
            "organization_consumer": self.consumer.map(Consumer::summary),
            "items": s.items.iter().map(|it| self.item(it)).collect::<Vec<_>>(),
            "latest_invoice": self.latest_invoice,
            "latest_freeze": self.latest_freeze.map(Freeze::to_json),
            "override_payment_methods": {
                "visa": pm.visa,
                "mastercard": pm.mastercard,
                "amex": pm.amex,
                "bank_transfer": pm.bank_transfer,
                "installment": pm.installment,
                "qurrah": pm.qurrah,
                "subscription_auto_renewal": pm.subscription_auto_renewal,
            },
            "pending_change": self.pending_change,
            "notify_consumer": s.notify_consumer,
            "exclude_coupons_if_installments": s.exclude_coupons_if_installments,
        });
        if let (Value::Object(a), Value::Object(b)) = (&mut v, more) {
            a.extend(b);
        }
        v
    }
}
