//! Paying a link of recurring products: the payment makes, in the transaction that records it,
//! the subscription (from the link's lines as priced for this payer, its period starting now),
//! the first cycle's invoice (ACCEPTED, `payment_link_id` and `subscription_id` set) and its
//! payment, paid. The card is kept as the consumer's token with consent, so renewals charge it
//! ([`crate::subscription`]'s renewal). Events: SUBSCRIPTION_CREATED, INVOICE_CREATED,
//! INVOICE_ACCEPTED, PAYMENT_SUCCEEDED, INVOICE_COMPLETED, SUBSCRIPTION_ACTIVATED.
//!
//! Refused before anything is written or charged: a mobile wallet (renewals are charged to a
//! card) and installments (never offered for recurring products).

use super::checkout::PayMethod;
use super::pay::{redeem_link_coupons, Paid};
use super::PaymentLink;
use crate::engine::Engine;
use crate::error::{Code, Error, Result};
use crate::event::EventType;
use crate::ids::{ConsumerId, InvoiceId, PaymentId};
use crate::invoice::events::emit_invoice;
use crate::invoice::InvoiceStatus;
use crate::payment::PaymentMethod;
use crate::store::{Store, Tx};
use crate::subscription::ops::PricedPlan;
use crate::subscription::{PaymentMethodOverrides, SubscriptionCreate};

/// Whether a recurring link can be paid this way.
pub(super) fn check_recurring(l: &PaymentLink, method: &PayMethod) -> Result<()> {
    if matches!(method, PayMethod::Wallet(_)) {
        return Err(Error::rule(
            Code::PAYMENT_FLOW_NOT_ALLOWED,
            "A subscription is paid by card: its renewals are charged to the card",
        ));
    }
    if l.checkout.trial_period_days.is_some_and(|d| d > 0) {
        return Err(Error::rule(
            Code::PAYMENT_FLOW_NOT_ALLOWED,
            "A payment link with a trial period cannot be paid yet",
        ));
    }
    Ok(())
}

impl<S: Store> Engine<S> {
    /// The subscription a paid recurring link makes, with its first invoice paid. Returns the
    /// invoice's and the paid payment's ids.
    pub(super) fn subscription_of_link(
        &self,
        tx: &mut dyn Tx,
        p: &Paid<'_>,
        consumer: ConsumerId,
        method: PaymentMethod,
        code: &str,
        message: &str,
    ) -> Result<(InvoiceId, PaymentId)> {
        let (l, scope, now) = (p.link, p.scope, p.now);
        let (Some(interval), Some(interval_count)) = (l.recurring_interval, l.recurring_interval_count) else {
            return Err(Error::rule(Code::PAYMENT_FLOW_NOT_ALLOWED, "The payment link is not recurring"));
        };
        let req = SubscriptionCreate {
            notify_consumer: true,
            description: Some(l.description.clone().unwrap_or_else(|| l.name.clone())),
            items: vec![],
            coupons: l.coupon_ids.clone(),
            consumer_id: consumer,
            period_start: now,
            until_cycle_number: None,
            payment_methods: PaymentMethodOverrides::default(),
            exclude_coupons_if_installments: false,
            currency: l.currency,
            trial: false,
        };
        let plan = PricedPlan {
            interval,
            interval_count: interval_count.max(1),
            lines: l
                .items
                .iter()
                .map(|i| crate::invoice::InvoiceItem {
                    id: crate::ids::InvoiceItemId::new(),
                    created_at: now,
                    ..i.line.clone()
                })
                .collect(),
            coupons: l.coupons.clone(),
            original_amount: l.original_amount,
            item_level_discounted_amount: l.item_level_discounted_amount,
            total_vat_amount: l.total_vat_amount,
            total_price_excluding_vat: l.total_price_excluding_vat,
            amount: l.amount,
        };
        let mut s = self.open_subscription(tx, scope, &req, consumer, plan, now)?;
        redeem_link_coupons(tx, l)?;
        let (mut inv, _) = self.issue_cycle_invoice_of(tx, scope, &mut s, 1, Some(l.id), now)?;
        // Written before the payment: paying the invoice activates the subscription as stored.
        tx.update_subscription(&s)?;
        inv.status = InvoiceStatus::Accepted;
        inv.updated_at = Some(now);
        tx.update_invoice_row(&inv)?;
        emit_invoice(tx, self.public_url(), EventType::InvoiceAccepted, &inv, now)?;
        let mut payments = tx.invoice_payments(inv.id)?;
        payments[0].method = Some(method);
        let paid = self.settle_first_payment(tx, p, &mut inv, &payments, code, message)?;
        Ok((inv.id, paid))
    }
}
