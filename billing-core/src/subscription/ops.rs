//! Subscription operations on [`Engine`]: create, get, list, cancel, uncancel; issuing a
//! cycle's invoice; and what paying a subscription's invoice changes. Each is one transaction
//! with its events.

use super::view::SubscriptionView;
use super::*;
use crate::auth::Scope;
use crate::clock::format_rfc3339;
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::error::{Code, Error, FieldError, Result};
use crate::event::{EntityType, Event, EventType};
use crate::ids::{ConsumerId, InvoiceId, SubscriptionId, SubscriptionItemId};
use crate::ids::{EventId, InvoiceItemId, WorkId};
use crate::invoice::events::emit_invoice;
use crate::invoice::InvoiceItem;
use crate::invoice::{Invoice, InvoiceStatus};
use crate::lane::Lane;
use crate::list::Page;
use crate::money::Money;
use crate::payment::Payment;
use crate::payment::{PaymentStatus, PaymentType};
use crate::pricing::{self, ItemRequest};
use crate::product::RecurringInterval;
use crate::product::{Product, ProductType};
use crate::store::{Store, Tx};
use crate::work::DueWork;
use serde_json::{json, Value};

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const CREATE: Lane = Lane::Write;
    pub const GET: Lane = Lane::Read;
    pub const LIST: Lane = Lane::Read;
    pub const CANCEL: Lane = Lane::Write;
    pub const UNCANCEL: Lane = Lane::Write;
}

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

/// The work item that renews `s` into cycle `cycle`: one id per subscription and cycle, so
/// scheduling it twice finds the first.
pub(crate) fn renewal_work_id(s: SubscriptionId, cycle: u32) -> WorkId {
    WorkId(uuid::Uuid::from_u128(s.0.as_u128() ^ (u128::from(cycle) << 1 | 1)))
}

/// Queues the renewal into the next cycle at the current period's end, unless it is queued,
/// and (with a lead time) the preparation of the next cycle's invoice `lead` before it.
pub(crate) fn schedule_renewal(tx: &mut dyn Tx, s: &Subscription, lead: chrono::Duration) -> Result<()> {
    let next = s.current_cycle_number + 1;
    let id = renewal_work_id(s.id, next);
    let payload = json!({"branch_id": s.branch_id, "subscription_id": s.id, "cycle": next});
    tx.queue_work_if_absent(&DueWork::new(id, s.org_id, super::RENEWAL_KIND, s.current_period_end, payload))?;
    super::period_end::schedule_prepare(tx, s, lead)
}

/// A SUBSCRIPTION_* event about `s` (its status as it is now); `data` names the subscription,
/// its latest invoice and, for a charge, the payment.
pub fn subscription_event(public_url: &str, t: EventType, s: &Subscription, payment: Option<crate::ids::PaymentId>, now: Timestamp) -> Event {
    Event {
        id: EventId::new(),
        org_id: s.org_id,
        branch_id: s.branch_id,
        event_type: t,
        entity_type: EntityType::Subscription,
        entity_id: s.id.0,
        payload: json!({
            "event_type": t,
            "entity_type": EntityType::Subscription,
            "entity_id": s.id,
            "entity_url": Subscription::api_url(public_url, s.id),
            "status": s.status,
            "data": {
                "subscription": {"id": s.id, "url": Subscription::api_url(public_url, s.id)},
                "invoice": s.latest_invoice_id.map(|id| json!({"id": id, "url": Invoice::api_url(public_url, id)})),
                "payment": payment.map(|id| json!({"id": id, "url": crate::payment::Payment::api_url(public_url, id)})),
                "metadata": {},
                "current_cycle_number": s.current_cycle_number,
                "current_period_start": format_rfc3339(&s.current_period_start),
                "current_period_end": format_rfc3339(&s.current_period_end),
            },
            "timestamp": format_rfc3339(&now),
        }),
        created_at: now,
    }
}

pub(crate) fn emit(tx: &mut dyn Tx, public_url: &str, t: EventType, s: &Subscription, now: Timestamp) -> Result<()> {
    crate::event::record(tx, &subscription_event(public_url, t, s, None, now))
}

/// Whether paying its invoice activates a subscription in `status`.
fn activated_by_payment(status: SubscriptionStatus) -> bool {
    matches!(status, SubscriptionStatus::Inactive | SubscriptionStatus::TrialPending)
}

/// Makes an INACTIVE or TRIAL_PENDING subscription ACTIVE (SUBSCRIPTION_ACTIVATED; then FROZEN when a
/// freeze is in force, [`super::freeze::on_activated`]) and queues its renewal (it
/// is not renewed while inactive). Other statuses are left as they are. Returns whether it
/// changed.
fn activate(tx: &mut dyn Tx, public_url: &str, s: &mut Subscription, now: Timestamp) -> Result<bool> {
    if !activated_by_payment(s.status) {
        return Ok(false);
    }
    s.status = SubscriptionStatus::Active;
    s.started_at.get_or_insert(now);
    s.renewal_failures = 0;
    s.updated_at = Some(now);
    emit(tx, public_url, EventType::SubscriptionActivated, s, now)?;
    super::freeze::on_activated(tx, public_url, s, now)?;
    let lead = tx.org(s.org_id)?.map(|o| o.settings.invoice_lead()).unwrap_or_default();
    schedule_renewal(tx, s, lead)?;
    Ok(true)
}

/// What paying an invoice of a subscription changes (called where payments are recorded, in
/// their transaction): the latest invoice counts as paid, and a fully paid invoice makes an
/// INACTIVE subscription ACTIVE (the first invoice paid, or an overdue renewal paid at last).
pub(crate) fn on_invoice_paid(tx: &mut dyn Tx, public_url: &str, inv: &Invoice, fully: bool, now: Timestamp) -> Result<()> {
    let Some(sid) = inv.subscription_id else { return Ok(()) };
    // The common case, a renewal's invoice paid: its latest invoice is marked paid, and a
    // status that no payment activates needs nothing more (one write, no read).
    let settled: Vec<SubscriptionStatus> = SubscriptionStatus::ALL.iter().copied().filter(|x| !activated_by_payment(*x)).collect();
    if tx.mark_latest_invoice_paid(inv.branch_id, sid.into(), inv.id, &settled, now)? {
        return Ok(());
    }
    // The row is what changes; the items are read only for an activation's event.
    let Some(mut s) = tx.subscription_row(inv.branch_id, sid.into())? else {
        return Ok(());
    };
    let mut changed = false;
    if s.latest_invoice_id == Some(inv.id) && !s.latest_invoice_paid {
        s.latest_invoice_paid = true;
        s.updated_at = Some(now);
        changed = true;
    }
    let activates = activated_by_payment(s.status);
    if fully && (s.latest_invoice_id == Some(inv.id) || s.started_at.is_none()) && activates {
        // SUBSCRIPTION_ACTIVATED carries the items.
        if let Some(whole) = tx.subscription(inv.branch_id, sid.into())? {
            s.items = whole.items;
        }
        changed |= activate(tx, public_url, &mut s, now)?;
    }
    if changed {
        // Neither step changes an item.
        tx.update_subscription_row(&s)?;
    }
    Ok(())
}

impl<S: Store> Engine<S> {
    /// Creates a subscription: INACTIVE, cycle 1 from `period_start`, its first invoice issued
    /// now (due at `period_start`), priced by [`crate::pricing`]. Refused (422) when a product
    /// is not RECURRING or the products differ in interval, when a product has no active price
    /// in the currency; 404 when a product, coupon or the consumer is not one of the branch's.
    pub fn create_subscription(&self, scope: &Scope, req: SubscriptionCreate) -> Result<Subscription> {
        self.store.write(|tx| self.create_subscription_in(tx, scope, &req))
    }

    /// [`Self::create_subscription`], answering SubscriptionDetailed read in the same
    /// transaction.
    pub fn create_subscription_detailed(&self, scope: &Scope, req: SubscriptionCreate) -> Result<Value> {
        self.store.write(|tx| {
            let s = self.create_subscription_in(tx, scope, &req)?;
            self.subscription_json(tx, scope, &s)
        })
    }

    fn create_subscription_in(&self, tx: &mut dyn Tx, scope: &Scope, req: &SubscriptionCreate) -> Result<Subscription> {
        let now = self.now(scope);
        let consumer = tx
            .consumer(scope.branch_id(), req.consumer_id)?
            .filter(|c| !c.is_deleted)
            .ok_or_else(|| Error::not_found("Consumer", req.consumer_id))?;
        let lines: Vec<ItemRequest> = req.items.iter().map(SubscriptionItemRequest::pricing_line).collect();
        let loaded = pricing::load(tx, scope.branch_id(), &lines, &req.coupons, req.currency)?;
        let (interval, interval_count) = interval_of(&loaded.products)?;
        let priced = pricing::price(&lines, &loaded, req.currency, scope.org.settings.vat_rate)?;
        let t = &priced.totals;
        let plan = PricedPlan {
            interval,
            interval_count,
            lines: priced.items.iter().map(|p| InvoiceItem::from_priced(p, InvoiceItemId::new(), now)).collect(),
            coupons: t.coupons.clone(),
            original_amount: t.original_amount,
            item_level_discounted_amount: t.item_level_discounted_amount,
            total_vat_amount: t.total_vat_amount,
            total_price_excluding_vat: t.total_price_excluding_vat,
            amount: t.total_amount,
        };
        let mut s = self.open_subscription(tx, scope, req, consumer.id, plan, now)?;
        for c in &priced.redeemed {
            tx.redeem_coupon(*c)?;
        }
        if req.trial {
            return Ok(s);
        }
        self.issue_cycle_invoice(tx, scope, &mut s, 1, now)?;
        tx.update_subscription(&s)?;
        Ok(s)
    }

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
        emit(tx, self.public_url(), EventType::SubscriptionCreated, &s, now)?;
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

    /// SubscriptionDetailed of `s`, with its consumer, products and latest invoice as stored now.
    pub(crate) fn subscription_json(&self, tx: &mut dyn Tx, scope: &Scope, s: &Subscription) -> Result<Value> {
        let mut products: Vec<Product> = vec![];
        for it in &s.items {
            if !products.iter().any(|p| p.id == it.line.product_id) {
                if let Some(p) = tx.product(s.branch_id, it.line.product_id)? {
                    products.push(p);
                }
            }
        }
        let consumer = tx.consumer(s.branch_id, s.consumer_id)?;
        let latest = match s.latest_invoice_id {
            Some(id) => match tx.invoice(s.branch_id, id)? {
                Some(inv) => {
                    let payments = tx.invoice_payments(id)?;
                    let view = crate::invoice::InvoiceView {
                        invoice: &inv,
                        payments: &payments,
                        consumer: consumer.as_ref(),
                        products: &[],
                        branch_name: &scope.branch.name,
                        public_url: self.public_url(),
                        settings: &scope.org.settings,
                    };
                    view.list_item(false)
                }
                None => Value::Null,
            },
            None => Value::Null,
        };
        let trial = tx.subscription_trial(s.id)?;
        let latest_freeze = super::freeze::latest(tx, s.id)?;
        let pending_change = tx.scheduled_plan_change(s.id)?.map(|c| c.to_json()).unwrap_or(Value::Null);
        let view = SubscriptionView {
            sub: s,
            products: &products,
            consumer: consumer.as_ref(),
            latest_invoice: latest,
            trial: trial.as_ref(),
            latest_freeze: latest_freeze.as_ref(),
            pending_change,
            settings: &scope.org.settings,
            now: self.now(scope),
        };
        Ok(view.detailed())
    }

    fn load_subscription(&self, tx: &mut dyn Tx, scope: &Scope, id: SubscriptionId) -> Result<Subscription> {
        tx.subscription(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Subscription", id))
    }

    pub fn get_subscription(&self, scope: &Scope, id: SubscriptionId) -> Result<Subscription> {
        self.store.read(|tx| self.load_subscription(tx, scope, id))
    }

    /// SubscriptionDetailed of a subscription of the request's branch.
    pub fn subscription_detailed(&self, scope: &Scope, id: SubscriptionId) -> Result<Value> {
        self.store.read(|tx| {
            let s = self.load_subscription(tx, scope, id)?;
            self.subscription_json(tx, scope, &s)
        })
    }

    /// The invoices of a subscription's cycles, `(cycle, invoice)` by cycle.
    pub fn subscription_invoices(&self, scope: &Scope, id: SubscriptionId) -> Result<Vec<(u32, Invoice)>> {
        self.store.read(|tx| {
            self.load_subscription(tx, scope, id)?;
            let mut out = vec![];
            for (n, inv) in tx.subscription_cycles(id)? {
                if let Some(inv) = tx.invoice(scope.branch_id(), inv)? {
                    out.push((n, inv));
                }
            }
            Ok(out)
        })
    }

    /// A page of SubscriptionDetailed.
    pub fn list_subscriptions(&self, scope: &Scope, req: &SubscriptionListRequest) -> Result<Page<Value>> {
        self.store.read(|tx| {
            let page = tx.list_subscriptions(scope.branch_id(), &req.query, &req.filter)?;
            let mut out = Vec::with_capacity(page.items.len());
            for s in &page.items {
                out.push(self.subscription_json(tx, scope, s)?);
            }
            Ok(Page {
                items: out,
                total: page.total,
                page: page.page,
                limit: page.limit,
            })
        })
    }

    /// Cancels a subscription. ACTIVE: it stays ACTIVE with `cancel_at_period_end` and ends
    /// (CANCELED) at the end of the current period (SUBSCRIPTION_CANCEL_AT_PERIOD_END; asking
    /// again changes nothing). INACTIVE, TRIALING, TRIAL_PENDING or FROZEN: CANCELED now
    /// (SUBSCRIPTION_CANCELED). Already CANCELED or EXPIRED: 400 INVALID_STATUS. With
    /// `cancel_related_invoices`, its invoices that are not finalised are voided (as
    /// `POST /invoices/{id}/void` does).
    pub fn cancel_subscription(&self, scope: &Scope, id: SubscriptionId, req: SubscriptionCancel) -> Result<Subscription> {
        self.store.write(|tx| self.cancel_in(tx, scope, id, req))
    }

    /// [`Self::cancel_subscription`], answering SubscriptionDetailed.
    pub fn cancel_subscription_detailed(&self, scope: &Scope, id: SubscriptionId, req: SubscriptionCancel) -> Result<Value> {
        self.store.write(|tx| {
            let s = self.cancel_in(tx, scope, id, req)?;
            self.subscription_json(tx, scope, &s)
        })
    }

    fn cancel_in(&self, tx: &mut dyn Tx, scope: &Scope, id: SubscriptionId, req: SubscriptionCancel) -> Result<Subscription> {
        let now = self.now(scope);
        let mut s = self.load_subscription(tx, scope, id)?;
        match s.status {
            SubscriptionStatus::Canceled | SubscriptionStatus::Expired => {
                return Err(Error::rule(Code::INVALID_STATUS, format!("Subscription '{id}' is {}", s.status)));
            }
            SubscriptionStatus::Active => {
                if !s.cancel_at_period_end {
                    s.cancel_at_period_end = true;
                    s.updated_at = Some(now);
                    tx.update_subscription(&s)?;
                    emit(tx, self.public_url(), EventType::SubscriptionCancelAtPeriodEnd, &s, now)?;
                    // A next-cycle invoice already prepared is not left payable.
                    self.sync_next_invoice(tx, scope, &s, now)?;
                }
            }
            _ => {
                s.status = SubscriptionStatus::Canceled;
                s.cancel_at_period_end = false;
                s.ended_at = Some(now);
                s.updated_at = Some(now);
                tx.update_subscription(&s)?;
                super::freeze::on_subscription_ended(tx, &s, now, now)?;
                emit(tx, self.public_url(), EventType::SubscriptionCanceled, &s, now)?;
                self.withdraw_plan_change(tx, &s, now)?;
                self.withdraw_cycle_invoice(tx, scope, &s, s.current_cycle_number + 1)?;
            }
        }
        if req.cancel_related_invoices {
            for (_, inv) in tx.subscription_cycles(id)? {
                let Some(invoice) = tx.invoice(scope.branch_id(), inv)? else { continue };
                let payments = tx.invoice_payments(inv)?;
                if invoice.is_finalised(&payments) || payments.iter().any(|p| p.status == PaymentStatus::Processing) {
                    continue;
                }
                self.void_invoice_in(tx, scope, inv)?;
            }
        }
        Ok(s)
    }

    /// Withdraws the scheduled cancellation of an ACTIVE subscription (no event); an ACTIVE one
    /// without one is left as it is. Any other status: 400 INVALID_STATUS.
    pub fn uncancel_subscription(&self, scope: &Scope, id: SubscriptionId) -> Result<()> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut s = self.load_subscription(tx, scope, id)?;
            if s.status != SubscriptionStatus::Active {
                return Err(Error::rule(
                    Code::INVALID_STATUS,
                    format!("Subscription '{id}' is {}: only an ACTIVE subscription can be uncanceled", s.status),
                ));
            }
            if s.cancel_at_period_end {
                s.cancel_at_period_end = false;
                s.updated_at = Some(now);
                tx.update_subscription(&s)?;
                // Renewing again: the next invoice is prepared now if its time has come.
                self.sync_next_invoice(tx, scope, &s, now)?;
            }
            Ok(())
        })
    }
}
