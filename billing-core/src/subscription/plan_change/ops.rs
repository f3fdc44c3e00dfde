//! Plan-change operations on [`Engine`]: the update (`PUT /subscriptions/{id}`), the
//! cancellation of a pending change, and the engine's steps (applying a change at the period
//! end, withdrawing one, re-issuing a prepared next-cycle invoice). Each operation is one
//! transaction with its events.
//!
//! The update:
//! - Refused with 400 INVALID_STATUS for a CANCELED or EXPIRED subscription; a consumer or
//!   currency other than the subscription's is a 422 (a subscription keeps both: cancel it and
//!   create another); an `until_cycle_number` below the current cycle is a 422.
//! - `description`, `until_cycle_number`, `override_payment_methods` and
//!   `exclude_coupons_if_installments` apply at once (SUBSCRIPTION_PLAN_UPDATED when one of them
//!   changed).
//! - `items` and `coupons` are the plan wanted from the next cycle on. The same as the plan in
//!   force: no change (a SCHEDULED change is withdrawn, SUBSCRIPTION_PLAN_CHANGE_CANCELED). The
//!   same as the SCHEDULED change's target: it stays as it is. Otherwise the target is priced
//!   (as a creation is: every product RECURRING with one interval, an active price in the
//!   subscription's currency, coupons valid — except that products and coupons already on the
//!   plan keep the unit price and terms they were subscribed at) and becomes the SCHEDULED
//!   change (SUBSCRIPTION_PLAN_CHANGE_SCHEDULED), replacing the previous one.
//! - When the next cycle's invoice was already prepared and is still open, and does not bill
//!   the plan wanted, it is voided and issued again for it (SUBSCRIPTION_PLAN_CHANGE_INVOICE_REISSUED).

use super::diff::{self};
use super::*;
use crate::auth::Scope;
use crate::clock::{format_rfc3339, Timestamp};
use crate::engine::Engine;
use crate::error::{Code, Error, FieldError, Problems, Result};
use crate::event::EventType;
use crate::ids::InvoiceId;
use crate::ids::{PlanChangeId, SubscriptionId};
use crate::invoice::Invoice;
use crate::lane::Lane;
use crate::money::Money;
use crate::product::RecurringInterval;
use crate::store::{Store, Tx};
use crate::subscription::ops::{subscription_event, Subscriptions};
use crate::subscription::period_end::is_open;
use crate::subscription::view::SubscriptionDetail;
use crate::subscription::Subscription;
use serde_json::json;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const UPDATE: Lane = Lane::Write;
    pub const CANCEL_PENDING: Lane = Lane::Write;
}

/// A SUBSCRIPTION_PLAN_* event about `s` and the change `c`: `data.pending_change` names it;
/// with `reissued`, `data.invoice` is the new invoice and `data.canceled_invoice` the old one.
fn plan_event(
    public_url: &str,
    t: EventType,
    s: &Subscription,
    c: &PlanChange,
    reissued: Option<(InvoiceId, InvoiceId)>,
    now: Timestamp,
) -> crate::event::Event {
    let mut e = subscription_event(public_url, t, s, None, now);
    let data = &mut e.payload["data"];
    data["pending_change"] = json!({
        "id": c.id,
        "status": c.status,
        "effective_at": format_rfc3339(&c.effective_at),
        "target_amount": c.target.amount,
    });
    if let Some((old, new)) = reissued {
        data["invoice"] = json!({"id": new, "url": Invoice::api_url(public_url, new)});
        data["canceled_invoice"] = json!({"id": old, "url": Invoice::api_url(public_url, old)});
    }
    e
}

fn same_lines(a: &diff::PlanShape, b: &diff::PlanShape) -> bool {
    let (na, nb) = (diff::normalize(a), diff::normalize(b));
    na.lines == nb.lines && na.coupons == nb.coupons
}

/// Whether `inv` bills `plan`: the same lines, coupons and total.
fn bills(inv: &Invoice, plan: &Plan) -> bool {
    let key = |l: &crate::invoice::InvoiceItem| (l.product_id, l.quantity, l.unit_price, l.coupon_ids.clone(), l.discounted_amount, l.vat_amount);
    inv.total_amount == plan.amount
        && inv.coupon_ids == plan.coupon_ids
        && inv.items.len() == plan.items.len()
        && inv.items.iter().zip(&plan.items).all(|(a, b)| key(a) == key(&b.line))
}

/// The interval fields of the request, when sent, must be the products'.
pub(super) fn check_interval(req: &SubscriptionUpdate, interval: RecurringInterval, count: u32) -> Result<()> {
    let mut p = Problems::default();
    let msg = format!(
        "Value error, the products of the plan renew every {}: a subscription's interval is its products'",
        diff::interval_text(interval, count)
    );
    if req.recurring_interval.is_some_and(|i| i != interval) {
        p.push(FieldError::body("value_error", "recurring_interval", msg.clone()));
    }
    if req.recurring_interval_count.is_some_and(|n| n != count) {
        p.push(FieldError::body("value_error", "recurring_interval_count", msg));
    }
    p.into_result()
}

impl<S: Store> Subscriptions<'_, S> {
    /// Updates a subscription (see the module): fields apply at once, a plan change is
    /// scheduled for the period end (its `pending_change`).
    pub fn update(&self, scope: &Scope, id: SubscriptionId, req: &SubscriptionUpdate) -> Result<SubscriptionDetail> {
        self.store.write(|tx| {
            let s = self.update_in(tx, scope, id, req)?;
            self.subscription_detail(tx, scope, s)
        })
    }

    /// `DELETE /subscriptions/{id}/pending-change`: withdraws the SCHEDULED change
    /// (SUBSCRIPTION_PLAN_CHANGE_CANCELED); without one, nothing happens. A next-cycle invoice
    /// already re-issued for the change is left as it is.
    pub fn cancel_pending_change(&self, scope: &Scope, id: SubscriptionId) -> Result<()> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let s = tx.subscription(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Subscription", id))?;
            if let Some(c) = tx.scheduled_plan_change(id)? {
                self.withdraw_change(tx, &s, c, now)?;
            }
            Ok(())
        })
    }
}

impl<S: Store> Engine<S> {
    fn update_in(&self, tx: &mut dyn Tx, scope: &Scope, id: SubscriptionId, req: &SubscriptionUpdate) -> Result<Subscription> {
        let now = self.now(scope);
        let mut s = tx.subscription(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Subscription", id))?;
        if s.status.is_terminal() {
            return Err(Error::rule(
                Code::INVALID_STATUS,
                format!("Subscription '{id}' is {}: it can no longer be changed", s.status),
            ));
        }
        let mut p = Problems::default();
        if req.consumer_id.is_some_and(|c| c != s.consumer_id) {
            p.push(FieldError::body(
                "value_error",
                "organization_consumer_id",
                "Value error, the consumer of a subscription cannot be changed: cancel it and create another",
            ));
        }
        if req.currency.is_some_and(|c| c != s.currency) {
            p.push(FieldError::body(
                "value_error",
                "currency",
                "Value error, the currency of a subscription cannot be changed: cancel it and create another",
            ));
        }
        if let Some(Some(n)) = req.until_cycle_number {
            if n < s.current_cycle_number {
                p.push(FieldError::body(
                    "value_error",
                    "until_cycle_number",
                    format!("Value error, the subscription is in cycle {}: it cannot end before it", s.current_cycle_number),
                ));
            }
        }
        p.into_result()?;
        // What applies at once.
        let before = s.clone();
        if let Some(d) = &req.description {
            s.description = d.clone();
        }
        if let Some(u) = req.until_cycle_number {
            s.until_cycle_number = u;
        }
        if let Some(m) = req.payment_methods {
            s.payment_methods = m;
        }
        if let Some(x) = req.exclude_coupons_if_installments {
            s.exclude_coupons_if_installments = x;
        }
        if s != before {
            s.updated_at = Some(now);
            tx.update_subscription(&s)?;
            crate::event::record(tx, &subscription_event(self.public_url(), EventType::SubscriptionPlanUpdated, &s, None, now))?;
            self.sync_next_invoice(tx, scope, &s, now)?;
        }
        // The plan from the next cycle on.
        self.schedule_plan(tx, scope, &s, req, now)?;
        Ok(s)
    }

    fn schedule_plan(&self, tx: &mut dyn Tx, scope: &Scope, s: &Subscription, req: &SubscriptionUpdate, now: Timestamp) -> Result<()> {
        let wanted = diff::PlanShape {
            lines: req
                .items
                .iter()
                .map(|i| diff::PlanLine {
                    product_id: i.product_id,
                    quantity: i.quantity,
                    coupons: i.coupons.clone(),
                })
                .collect(),
            coupons: req.coupons.clone(),
            interval: s.recurring_interval,
            interval_count: s.recurring_interval_count,
        };
        let pending = tx.scheduled_plan_change(s.id)?;
        let current = s.plan();
        if same_lines(&wanted, &current.shape()) {
            // Back to (or staying on) the plan in force.
            check_interval(req, s.recurring_interval, s.recurring_interval_count)?;
            if let Some(c) = pending {
                self.withdraw_change(tx, s, c, now)?;
            }
            self.reissue_next_invoice(tx, scope, s, &current, None, now)?;
            return Ok(());
        }
        if let Some(c) = pending.as_ref().filter(|c| same_lines(&wanted, &c.target.shape())) {
            // The change already scheduled.
            check_interval(req, c.target.recurring_interval, c.target.recurring_interval_count)?;
            return Ok(());
        }
        let priced = self.price_target(tx, scope, s, req, now)?;
        if let Some(mut old) = pending {
            old.status = PlanChangeStatus::Replaced;
            old.updated_at = Some(now);
            tx.update_plan_change(&old)?;
        }
        let next = s.current_cycle_number + 1;
        let mut c = PlanChange {
            id: PlanChangeId::new(),
            subscription_id: s.id,
            status: PlanChangeStatus::Scheduled,
            effective_cycle: next,
            effective_at: s.current_period_end,
            changes: diff::diff(&current.shape(), &priced.plan.shape(), &priced.names),
            product_names: priced.names.products.iter().map(|(p, n)| (*p, n.clone())).collect(),
            new_coupons: priced.new_coupons,
            current_amount: s.amount,
            current_interval: s.recurring_interval,
            current_interval_count: s.recurring_interval_count,
            invoice_was_reissued: false,
            preview: self.preview(tx, s, &priced.plan, next, now, scope)?,
            target: priced.plan,
            created_at: now,
            updated_at: None,
        };
        crate::event::record(tx, &plan_event(self.public_url(), EventType::SubscriptionPlanChangeScheduled, s, &c, None, now))?;
        if self.reissue_next_invoice(tx, scope, s, &c.target, Some(&c), now)?.is_some() {
            c.invoice_was_reissued = true;
            c.preview = self.preview(tx, s, &c.target, next, now, scope)?;
        }
        tx.insert_plan_change(&c)?;
        Ok(())
    }

    /// NextInvoicePreview of `target` taking effect at cycle `next`: that cycle's invoice, or,
    /// when that cycle's invoice is already issued and bills something else (paid before the
    /// change), the next cycle's.
    fn preview(&self, tx: &mut dyn Tx, s: &Subscription, target: &Plan, next: u32, now: Timestamp, scope: &Scope) -> Result<NextInvoicePreview> {
        let mut after = s.clone();
        after.set_plan(target.clone(), next, s.current_period_end);
        let issued = match tx.subscription_cycle_invoice(s.id, next)? {
            Some(id) => tx.invoice(s.branch_id, id)?,
            None => None,
        };
        let (cycle, issue_at) = match issued {
            Some(inv) if bills(&inv, target) => (next, inv.created_at),
            other => {
                let cycle = if other.is_some() { next + 1 } else { next };
                let (start, _) = after.cycle(cycle);
                (cycle, (start - scope.org.settings.invoice_lead()).max(now))
            }
        };
        let (period_start, period_end) = after.cycle(cycle);
        let c = s.currency;
        Ok(NextInvoicePreview {
            cycle,
            period_start,
            period_end,
            issue_at,
            due_at: period_start,
            subtotal: target.original_amount,
            discount_total: Money::new(target.original_amount.amount() - target.after_discounts().amount(), c),
            total_amount: target.amount,
        })
    }

    /// When the next cycle's invoice is already prepared, still open, and does not bill
    /// `plan`: voids it and issues the cycle's invoice again for `plan`, the cycle's row taken
    /// over by the new one (SUBSCRIPTION_PLAN_CHANGE_INVOICE_REISSUED, naming `change` when
    /// there is one). Returns the new invoice.
    fn reissue_next_invoice(
        &self,
        tx: &mut dyn Tx,
        scope: &Scope,
        s: &Subscription,
        plan: &Plan,
        change: Option<&PlanChange>,
        now: Timestamp,
    ) -> Result<Option<Invoice>> {
        let next = s.current_cycle_number + 1;
        let Some(old) = tx.subscription_cycle_invoice(s.id, next)? else {
            return Ok(None);
        };
        let Some(inv) = tx.invoice(s.branch_id, old)? else { return Ok(None) };
        if !is_open(&inv, &tx.invoice_payments(old)?) || bills(&inv, plan) {
            return Ok(None);
        }
        self.void_invoice_in(tx, scope, old)?;
        let (new, _) = self.new_cycle_invoice(tx, scope, s, plan, next, Some(old), None, now)?;
        let mut e = match change {
            Some(c) => plan_event(
                self.public_url(),
                EventType::SubscriptionPlanChangeInvoiceReissued,
                s,
                c,
                Some((old, new.id)),
                now,
            ),
            None => subscription_event(self.public_url(), EventType::SubscriptionPlanChangeInvoiceReissued, s, None, now),
        };
        if change.is_none() {
            e.payload["data"]["invoice"] = json!({"id": new.id, "url": Invoice::api_url(self.public_url(), new.id)});
            e.payload["data"]["canceled_invoice"] = json!({"id": old, "url": Invoice::api_url(self.public_url(), old)});
        }
        crate::event::record(tx, &e)?;
        Ok(Some(new))
    }

    /// Withdraws `c` (CANCELED, SUBSCRIPTION_PLAN_CHANGE_CANCELED).
    pub(crate) fn withdraw_change(&self, tx: &mut dyn Tx, s: &Subscription, mut c: PlanChange, now: Timestamp) -> Result<()> {
        c.status = PlanChangeStatus::Canceled;
        c.updated_at = Some(now);
        tx.update_plan_change(&c)?;
        crate::event::record(tx, &plan_event(self.public_url(), EventType::SubscriptionPlanChangeCanceled, s, &c, None, now))
    }

    /// Withdraws the SCHEDULED change of a subscription that ended, if any.
    pub(crate) fn withdraw_plan_change(&self, tx: &mut dyn Tx, s: &Subscription, now: Timestamp) -> Result<()> {
        match tx.scheduled_plan_change(s.id)? {
            Some(c) => self.withdraw_change(tx, s, c, now),
            None => Ok(()),
        }
    }

    /// Applies `c` at the start of cycle `cycle` (at `start`): the subscription bills its
    /// target from that cycle on (items changed are marked updated), its new coupons count a
    /// redemption each; APPLIED, SUBSCRIPTION_PLAN_CHANGED. The caller writes `s`.
    pub(crate) fn apply_plan_change(
        &self,
        tx: &mut dyn Tx,
        s: &mut Subscription,
        mut c: PlanChange,
        cycle: u32,
        start: Timestamp,
        now: Timestamp,
    ) -> Result<()> {
        let old = std::mem::take(&mut s.items);
        s.set_plan(c.target.clone(), cycle, start);
        for it in &mut s.items {
            if old.iter().any(|o| o.id == it.id && o.line != it.line) {
                it.updated_at = Some(now);
            }
        }
        for coupon in &c.new_coupons {
            tx.redeem_coupon(*coupon)?;
        }
        s.updated_at = Some(now);
        c.status = PlanChangeStatus::Applied;
        c.updated_at = Some(now);
        tx.update_plan_change(&c)?;
        crate::event::record(tx, &plan_event(self.public_url(), EventType::SubscriptionPlanChanged, s, &c, None, now))
    }
}
