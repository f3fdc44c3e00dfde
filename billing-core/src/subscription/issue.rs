//! Issuing a subscription's invoices: a new subscription opened with its priced plan, and the
//! invoice of a cycle (the cycle's one invoice, a zero one settled at once).

use super::activation::activate;
use super::*;
use crate::auth::Scope;
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Error, FieldError, Result};
use crate::event::EventType;
use crate::ids::{ConsumerId, InvoiceId, InvoiceItemId, SubscriptionId, SubscriptionItemId};
use crate::invoice::events::emit_invoice;
use crate::invoice::{Invoice, InvoiceItem, InvoiceStatus};
use crate::money::Money;
use crate::payment::{Payment, PaymentStatus, PaymentType};
use crate::product::{Product, ProductType, RecurringInterval};
use crate::store::{Store, Tx};

fn items_problem(msg: impl Into<String>) -> Error {
    Error::invalid(FieldError::new("value_error", vec!["body".into(), "items".into()], msg))
}

/// The one interval of a subscription's products: every product RECURRING, all with the same
/// interval and count (a 422 at `items` otherwise).
pub(crate) fn interval_of(products: &[Product]) -> Result<(RecurringInterval, u32)> {
    if let Some(k) = products.iter().position(|p| p.product_type != ProductType::Recurring) {
        return Err(Error::invalid(FieldError::new(
            "value_error",
            vec!["body".into(), "items".into(), k.into(), "product_id".into()],
            format!(
                "Value error, product '{}' is not RECURRING: a subscription bills recurring products only",
                products[k].id
            ),
        )));
    }
    let first = (products[0].recurring_interval, products[0].recurring_interval_count.max(1));
    if products.iter().any(|p| (p.recurring_interval, p.recurring_interval_count.max(1)) != first) {
        return Err(items_problem(
            "Value error, the products of one subscription must share their recurring interval and interval count",
        ));
    }
    match first {
        (Some(interval), count) => Ok((interval, count)),
        (None, _) => Err(items_problem("Value error, a recurring product has no interval")),
    }
}

/// What a new subscription bills, priced: its lines (their ids become the items' ids) and the
/// totals over them, from a request priced now or from a paid payment link's stored lines.
pub(crate) struct PricedPlan {
    pub interval: RecurringInterval,
    pub interval_count: u32,
    pub lines: Vec<InvoiceItem>,
    pub coupons: Vec<crate::pricing::CouponLine>,
    pub original_amount: Money,
    pub item_level_discounted_amount: Money,
    pub total_vat_amount: Money,
    pub total_price_excluding_vat: Money,
    pub amount: Money,
}

impl<S: Store> Engine<S> {
    /// A new subscription of `consumer` billing `plan` (priced by the caller), as `req` asks:
    /// INACTIVE, in cycle 1 from `req.period_start`; inserted, with SUBSCRIPTION_CREATED. The
    /// caller issues the first cycle's invoice and writes the subscription again. With
    /// `req.trial`: TRIALING in cycle 0 until `req.period_start` ([`super::trial`]), its end
    /// queued; nothing is issued.
    pub(crate) fn open_subscription(
        &self,
        tx: &mut dyn Tx,
        scope: &Scope,
        req: &SubscriptionCreate,
        consumer: ConsumerId,
        plan: PricedPlan,
        now: Timestamp,
    ) -> Result<Subscription> {
        let anchor = req.period_start;
        if req.trial {
            super::trial::check(anchor, now)?;
        }
        let (start, end) = cycle::cycle(anchor, plan.interval, plan.interval_count, 1);
        let items = plan
            .lines
            .into_iter()
            .map(|line| SubscriptionItem {
                id: SubscriptionItemId(line.id.0),
                line,
                updated_at: None,
            })
            .collect();
        let mut s = Subscription {
            id: SubscriptionId::new(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            user_id: scope.actor.user_id,
            consumer_id: consumer,
            description: req.description.clone(),
            currency: req.currency,
            status: SubscriptionStatus::Inactive,
            recurring_interval: plan.interval,
            recurring_interval_count: plan.interval_count,
            period_anchor: anchor,
            anchor_cycle: 1,
            current_cycle_number: 1,
            current_period_start: start,
            current_period_end: end,
            cancel_at_period_end: false,
            until_cycle_number: req.until_cycle_number,
            started_at: None,
            ended_at: None,
            latest_invoice_id: None,
            latest_invoice_paid: false,
            renewal_failures: 0,
            notify_consumer: req.notify_consumer,
            exclude_coupons_if_installments: req.exclude_coupons_if_installments,
            payment_methods: req.payment_methods,
            coupon_ids: req.coupons.clone(),
            coupons: plan.coupons,
            original_amount: plan.original_amount,
            item_level_discounted_amount: plan.item_level_discounted_amount,
            total_vat_amount: plan.total_vat_amount,
            total_price_excluding_vat: plan.total_price_excluding_vat,
            amount: plan.amount,
            items,
            created_at: now,
            updated_at: None,
        };
        if req.trial {
            super::trial::begin(&mut s, now);
        }
        tx.insert_subscription(&s)?;
        super::activation::emit(tx, self.public_url(), EventType::SubscriptionCreated, &s, now)?;
        if req.trial {
            // Nothing is billed during the trial: its end issues cycle 1's invoice.
            super::trial::record(tx, &s)?;
        }
        Ok(s)
    }

    /// Issues the invoice of cycle `n` of `s` (which the caller has moved to that cycle) with
    /// its plan, as [`Self::new_cycle_invoice`], and makes it the latest invoice. A zero
    /// invoice is settled at once (and activates an INACTIVE subscription). The caller writes
    /// `s`. Returns the invoice and its payment, as written.
    pub(crate) fn issue_cycle_invoice(&self, tx: &mut dyn Tx, scope: &Scope, s: &mut Subscription, n: u32, now: Timestamp) -> Result<(Invoice, Payment)> {
        self.issue_cycle_invoice_of(tx, scope, s, n, None, now)
    }

    /// [`Self::issue_cycle_invoice`] of a payment made through `link` (the invoice's
    /// `payment_link_id`; its events carry the link and its metadata).
    pub(crate) fn issue_cycle_invoice_of(
        &self,
        tx: &mut dyn Tx,
        scope: &Scope,
        s: &mut Subscription,
        n: u32,
        link: Option<crate::ids::PaymentLinkId>,
        now: Timestamp,
    ) -> Result<(Invoice, Payment)> {
        let (inv, payment) = self.new_cycle_invoice(tx, scope, s, &s.plan(), n, None, link, now)?;
        s.latest_invoice_id = Some(inv.id);
        s.latest_invoice_paid = inv.status == InvoiceStatus::Completed;
        s.renewal_failures = 0;
        s.updated_at = Some(now);
        if inv.status == InvoiceStatus::Completed {
            activate(tx, self.public_url(), s, now)?;
        }
        Ok((inv, payment))
    }

    /// Issues an invoice of cycle `n` of `s` billing `plan` and records it as the cycle's one
    /// invoice: a new row (a second is refused by the store's `subscription_cycles_key`), or,
    /// with `replacing`, the row of that invoice taken over (a `Conflict` when the row no longer
    /// points at it). Due at the cycle's start, one INITIAL payment, INVOICE_CREATED; a zero
    /// invoice is settled at once (INVOICE_COMPLETED). `link`: the payment link paid (the
    /// invoice's `payment_link_id`). `s` is not changed. Returns the invoice and its payment,
    /// as written (a renewal charges that payment without reading it back).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new_cycle_invoice(
        &self,
        tx: &mut dyn Tx,
        scope: &Scope,
        s: &Subscription,
        plan: &super::plan_change::Plan,
        n: u32,
        replacing: Option<InvoiceId>,
        link: Option<crate::ids::PaymentLinkId>,
        now: Timestamp,
    ) -> Result<(Invoice, Payment)> {
        let (start, _) = s.cycle(n);
        let inv_id = crate::ids::InvoiceId::new();
        let number = tx.next_invoice_number(s.org_id)?;
        let zero = plan.amount.is_zero();
        let inv = Invoice {
            id: inv_id,
            org_id: s.org_id,
            branch_id: s.branch_id,
            user_id: s.user_id,
            consumer_id: s.consumer_id,
            org_invoice_number: number,
            description: s.description.clone(),
            currency: s.currency,
            status: if zero { InvoiceStatus::Completed } else { InvoiceStatus::Created },
            payment_methods: s.payment_methods.effective(scope.org.settings.default_payment_methods),
            coupon_ids: plan.coupon_ids.clone(),
            exclude_coupons_if_installments: s.exclude_coupons_if_installments,
            notify_consumer: s.notify_consumer,
            scheduled_on: start,
            original_amount: plan.original_amount,
            item_level_discounted_amount: plan.item_level_discounted_amount,
            total_vat_amount: plan.total_vat_amount,
            total_price_excluding_vat: plan.total_price_excluding_vat,
            total_amount: plan.amount,
            paid_amount: Money::zero(s.currency),
            coupons: plan.coupons.clone(),
            installments: None,
            payment_link_id: link.map(|l| l.0),
            subscription_id: Some(s.id.0),
            items: plan
                .items
                .iter()
                .map(|i| InvoiceItem {
                    id: InvoiceItemId::new(),
                    created_at: now,
                    ..i.line.clone()
                })
                .collect(),
            created_at: now,
            updated_at: None,
        };
        let mut payment = crate::invoice::ops::pending_payment(&inv, 1, inv.total_amount, PaymentType::Initial, start, now);
        if zero {
            payment.status = PaymentStatus::Succeeded;
            payment.payed_at = Some(now);
            payment.note = Some("Nothing to pay".into());
        }
        tx.insert_invoice(&inv)?;
        match replacing {
            None => tx.insert_subscription_cycle(s.id, n, inv_id)?,
            Some(old) => {
                if !tx.replace_subscription_cycle_invoice(s.id, n, old, inv_id)? {
                    return Err(crate::error::StoreError::Conflict(format!("cycle {n} of subscription {} moved on", s.id)).into());
                }
            }
        }
        tx.insert_payment(&payment)?;
        emit_invoice(
            tx,
            self.public_url(),
            EventType::InvoiceCreated,
            &Invoice {
                status: InvoiceStatus::Created,
                ..inv.clone()
            },
            now,
        )?;
        if zero {
            emit_invoice(tx, self.public_url(), EventType::InvoiceCompleted, &inv, now)?;
            self.freeze_catalog(tx, scope, &inv)?;
        }
        Ok((inv, payment))
    }
}
