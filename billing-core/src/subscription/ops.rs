//! Subscription operations ([`Subscriptions`]): create, get, list, its invoices, cancel,
//! uncancel (and, in [`super::plan_change`], update and the pending change). Each is one
//! transaction with its events, and answers the subscription with what its response shows,
//! read in that transaction ([`SubscriptionDetail`]).
//!
//! What paying a subscription's invoice changes is [`super::activation`]'s; issuing its
//! invoices, [`super::issue`]'s.

use super::view::SubscriptionDetail;
use super::*;
use crate::auth::Scope;
use crate::consumer::Consumer;
use crate::engine::Engine;
use crate::error::{Code, Error, Result};
use crate::event::EventType;
use crate::ids::{ConsumerId, InvoiceItemId, ProductId, SubscriptionId};
use crate::invoice::{Invoice, InvoiceItem};
use crate::lane::Lane;
use crate::list::Page;
use crate::payment::PaymentStatus;
use crate::pricing::{self, ItemRequest};
use crate::product::Product;
use crate::store::{Store, Tx};
use std::collections::hash_map::{Entry, HashMap};

pub use super::activation::subscription_event;
pub(crate) use super::activation::{emit, on_invoice_paid, schedule_renewal};
pub(crate) use super::issue::{interval_of, PricedPlan};

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const CREATE: Lane = Lane::Write;
    pub const GET: Lane = Lane::Read;
    pub const LIST: Lane = Lane::Read;
    pub const INVOICES: Lane = Lane::Read;
    pub const CANCEL: Lane = Lane::Write;
    pub const UNCANCEL: Lane = Lane::Write;
}

/// The products and consumers read for a page of subscriptions (each once).
#[derive(Default)]
struct Seen {
    products: HashMap<ProductId, Option<Product>>,
    consumers: HashMap<ConsumerId, Option<Consumer>>,
}

crate::service!(
    /// Subscriptions: create, get, list, invoices, cancel, uncancel, update, cancel_pending_change.
    /// Each is one transaction.
    Subscriptions
);

impl<S: Store> Subscriptions<'_, S> {
    /// Creates a subscription: INACTIVE, cycle 1 from `period_start`, its first invoice issued
    /// now (due at `period_start`), priced by [`crate::pricing`]. Refused (422) when a product
    /// is not RECURRING or the products differ in interval, when a product has no active price
    /// in the currency; 404 when a product, coupon or the consumer is not one of the branch's.
    pub fn create(&self, scope: &Scope, req: SubscriptionCreate) -> Result<SubscriptionDetail> {
        self.store.write(|tx| {
            let s = self.create_in(tx, scope, &req)?;
            self.subscription_detail(tx, scope, s)
        })
    }

    /// A subscription of the request's branch.
    pub fn get(&self, scope: &Scope, id: SubscriptionId) -> Result<SubscriptionDetail> {
        self.store.read(|tx| {
            let s = self.load_subscription(tx, scope, id)?;
            self.subscription_detail(tx, scope, s)
        })
    }

    /// A page of the branch's subscriptions. What their responses show is read for the page
    /// at once where the store can ([`SubscriptionTx::prefetch_subscription_views`]), and each
    /// product and consumer once for the page.
    pub fn list(&self, scope: &Scope, req: &SubscriptionListRequest) -> Result<Page<SubscriptionDetail>> {
        self.store.read(|tx| {
            let page = tx.list_subscriptions(scope.branch_id(), &req.query, &req.filter)?;
            tx.prefetch_subscription_views(&page.items)?;
            let mut seen = Seen::default();
            let mut out = Vec::with_capacity(page.items.len());
            for s in page.items {
                out.push(self.detail_of(tx, scope, s, &mut seen)?);
            }
            Ok(Page {
                items: out,
                total: page.total,
                page: page.page,
                limit: page.limit,
            })
        })
    }

    /// The invoices of a subscription's cycles, `(cycle, invoice)` by cycle.
    pub fn invoices(&self, scope: &Scope, id: SubscriptionId) -> Result<Vec<(u32, Invoice)>> {
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

    /// Cancels a subscription. ACTIVE: it stays ACTIVE with `cancel_at_period_end` and ends
    /// (CANCELED) at the end of the current period (SUBSCRIPTION_CANCEL_AT_PERIOD_END; asking
    /// again changes nothing). INACTIVE, TRIALING, TRIAL_PENDING or FROZEN: CANCELED now
    /// (SUBSCRIPTION_CANCELED). Already CANCELED or EXPIRED: 400 INVALID_STATUS. With
    /// `cancel_related_invoices`, its invoices that are not finalised are voided (as
    /// `POST /invoices/{id}/void` does).
    pub fn cancel(&self, scope: &Scope, id: SubscriptionId, req: SubscriptionCancel) -> Result<SubscriptionDetail> {
        self.store.write(|tx| {
            let s = self.cancel_in(tx, scope, id, req)?;
            self.subscription_detail(tx, scope, s)
        })
    }

    /// Withdraws the scheduled cancellation of an ACTIVE subscription (no event); an ACTIVE one
    /// without one is left as it is. Any other status: 400 INVALID_STATUS.
    pub fn uncancel(&self, scope: &Scope, id: SubscriptionId) -> Result<()> {
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

impl<S: Store> Engine<S> {
    /// `s` with what its response shows, as stored now: its products, consumer, latest invoice
    /// (with its payments), trial, latest freeze and scheduled plan change.
    pub(crate) fn subscription_detail(&self, tx: &mut dyn Tx, scope: &Scope, s: Subscription) -> Result<SubscriptionDetail> {
        self.detail_of(tx, scope, s, &mut Seen::default())
    }

    /// [`Self::subscription_detail`], with the products and consumers already read for the
    /// other subscriptions of a page.
    fn detail_of(&self, tx: &mut dyn Tx, scope: &Scope, s: Subscription, seen: &mut Seen) -> Result<SubscriptionDetail> {
        let mut products: Vec<Product> = vec![];
        for it in &s.items {
            let id = it.line.product_id;
            if products.iter().any(|p| p.id == id) {
                continue;
            }
            let p = match seen.products.entry(id) {
                Entry::Occupied(e) => e.get().clone(),
                Entry::Vacant(e) => e.insert(tx.product(s.branch_id, id)?).clone(),
            };
            products.extend(p);
        }
        let consumer = match seen.consumers.entry(s.consumer_id) {
            Entry::Occupied(e) => e.get().clone(),
            Entry::Vacant(e) => e.insert(tx.consumer(s.branch_id, s.consumer_id)?).clone(),
        };
        let latest_invoice = match s.latest_invoice_id {
            Some(id) => match tx.invoice(s.branch_id, id)? {
                Some(inv) => {
                    let payments = tx.invoice_payments(id)?;
                    Some((inv, payments))
                }
                None => None,
            },
            None => None,
        };
        let trial = tx.subscription_trial(s.id)?;
        let latest_freeze = super::freeze::latest(tx, s.id)?;
        let pending_change = tx.scheduled_plan_change(s.id)?;
        Ok(SubscriptionDetail {
            subscription: s,
            products,
            consumer,
            latest_invoice,
            trial,
            latest_freeze,
            pending_change,
            as_of: self.now(scope),
        })
    }

    pub(crate) fn load_subscription(&self, tx: &mut dyn Tx, scope: &Scope, id: SubscriptionId) -> Result<Subscription> {
        tx.subscription(scope.branch_id(), id)?.ok_or_else(|| Error::not_found("Subscription", id))
    }

    fn create_in(&self, tx: &mut dyn Tx, scope: &Scope, req: &SubscriptionCreate) -> Result<Subscription> {
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
}
