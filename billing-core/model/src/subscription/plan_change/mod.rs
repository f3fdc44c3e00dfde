//! Plan changes: `PUT /subscriptions/{id}` and `DELETE /subscriptions/{id}/pending-change`.
//!
//! A subscription's plan is what each cycle's invoice bills: its priced items, its
//! subscription-level coupons, its interval ([`Plan`]). An update changing the items, coupons
//! or interval does not change the running cycle: it records a SCHEDULED [`PlanChange`]
//! effective at `current_period_end` (the start of the next cycle), priced now by
//! [`crate::pricing`] (the target plan is stored priced, so the `next_invoice_preview` shown and
//! the invoice issued bill the very same lines, to the minor unit). At the period end the
//! renewal applies it first (SUBSCRIPTION_PLAN_CHANGED), then bills the new cycle with it.
//!
//! - [`diff`]: the per-line diff (pure).
//! - `ops`: the update, the cancellation of a pending change, and the engine's steps
//!   (applying a change, re-issuing a prepared invoice).
//! - `view`: PendingPlanChange.
//! - [`store`]: the [`PlanChangeTx`] slice of the store contract.
//! - `wire`: SubscriptionUpdate.

pub mod diff;
pub mod store;
pub mod view;
pub mod wire;

pub use diff::{DiffEntry, DiffKind};
pub use store::PlanChangeTx;

use super::{PaymentMethodOverrides, Subscription, SubscriptionItem, SubscriptionItemRequest};
use crate::clock::{format_rfc3339, parse_datetime, Timestamp};
use crate::error::StoreError;
use crate::ids::{ConsumerId, CouponId, InvoiceItemId, PlanChangeId, PriceId, ProductId, SubscriptionId, SubscriptionItemId};
use crate::invoice::InvoiceItem;
use crate::money::{Currency, Money};
use crate::pricing::totals::{lines_from_stored, lines_to_stored};
use crate::pricing::CouponLine;
use crate::product::{RecurringInterval, VatMode};
use crate::wire_enum;
use serde_json::{json, Value};

wire_enum!(
    /// SCHEDULED: waiting for the period end; APPLIED at the period end; CANCELED: withdrawn
    /// (`DELETE pending-change`, an update back to the plan in force, or the subscription ended
    /// before it took effect); REPLACED by a later update.
    PlanChangeStatus {
        Scheduled = "SCHEDULED",
        Applied = "APPLIED",
        Canceled = "CANCELED",
        Replaced = "REPLACED",
    }
);

/// What each cycle's invoice bills.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub items: Vec<SubscriptionItem>,
    pub coupon_ids: Vec<CouponId>,
    pub coupons: Vec<CouponLine>,
    pub original_amount: Money,
    pub item_level_discounted_amount: Money,
    pub total_vat_amount: Money,
    pub total_price_excluding_vat: Money,
    pub amount: Money,
    pub recurring_interval: RecurringInterval,
    pub recurring_interval_count: u32,
}

impl Plan {
    /// What the invoice-level coupons leave of the items' amounts (before VAT is added to
    /// VAT-exclusive prices).
    pub fn after_discounts(&self) -> Money {
        self.coupons.last().map(|c| c.after).unwrap_or(self.item_level_discounted_amount)
    }

    /// The plan as [`diff`] compares it.
    pub fn shape(&self) -> diff::PlanShape {
        diff::PlanShape {
            lines: self
                .items
                .iter()
                .map(|i| diff::PlanLine {
                    product_id: i.line.product_id,
                    quantity: i.line.quantity,
                    coupons: i.line.coupon_ids.clone(),
                })
                .collect(),
            coupons: self.coupon_ids.clone(),
            interval: self.recurring_interval,
            interval_count: self.recurring_interval_count,
        }
    }
}

impl Subscription {
    /// The plan in force.
    pub fn plan(&self) -> Plan {
        Plan {
            items: self.items.clone(),
            coupon_ids: self.coupon_ids.clone(),
            coupons: self.coupons.clone(),
            original_amount: self.original_amount,
            item_level_discounted_amount: self.item_level_discounted_amount,
            total_vat_amount: self.total_vat_amount,
            total_price_excluding_vat: self.total_price_excluding_vat,
            amount: self.amount,
            recurring_interval: self.recurring_interval,
            recurring_interval_count: self.recurring_interval_count,
        }
    }

    /// Puts `p` in force from cycle `from_cycle`, which starts at `start`. A new interval
    /// re-anchors the cycles there: cycle `from_cycle` starts at `start` and the later ones are
    /// counted from it (with the same end-of-month clamping).
    pub fn set_plan(&mut self, p: Plan, from_cycle: u32, start: Timestamp) {
        if (p.recurring_interval, p.recurring_interval_count) != (self.recurring_interval, self.recurring_interval_count) {
            self.period_anchor = start;
            self.anchor_cycle = from_cycle;
        }
        self.items = p.items;
        self.coupon_ids = p.coupon_ids;
        self.coupons = p.coupons;
        self.original_amount = p.original_amount;
        self.item_level_discounted_amount = p.item_level_discounted_amount;
        self.total_vat_amount = p.total_vat_amount;
        self.total_price_excluding_vat = p.total_price_excluding_vat;
        self.amount = p.amount;
        self.recurring_interval = p.recurring_interval;
        self.recurring_interval_count = p.recurring_interval_count;
    }
}

/// NextInvoicePreview: the first invoice that bills the target plan.
#[derive(Debug, Clone, PartialEq)]
pub struct NextInvoicePreview {
    /// The cycle it bills.
    pub cycle: u32,
    pub period_start: Timestamp,
    pub period_end: Timestamp,
    /// When it is (or was) issued: the period start less the organization's lead time, not
    /// before the change was scheduled.
    pub issue_at: Timestamp,
    /// The period start.
    pub due_at: Timestamp,
    /// The items' amounts before any coupon.
    pub subtotal: Money,
    /// What the coupons take off.
    pub discount_total: Money,
    pub total_amount: Money,
}

/// A plan change of a subscription (PendingPlanChange while SCHEDULED).
#[derive(Debug, Clone, PartialEq)]
pub struct PlanChange {
    pub id: PlanChangeId,
    pub subscription_id: SubscriptionId,
    pub status: PlanChangeStatus,
    /// The first cycle the target plan bills.
    pub effective_cycle: u32,
    /// When that cycle starts (`current_period_end` when scheduled).
    pub effective_at: Timestamp,
    pub target: Plan,
    /// The names of the products of both plans, for the view.
    pub product_names: Vec<(ProductId, String)>,
    /// The coupons the target plan adds: each counts one redemption when the change is applied.
    pub new_coupons: Vec<CouponId>,
    /// What each cycle billed, and how often, when the change was scheduled.
    pub current_amount: Money,
    pub current_interval: RecurringInterval,
    pub current_interval_count: u32,
    pub changes: Vec<DiffEntry>,
    /// Whether an already prepared next-cycle invoice was cancelled and issued again for it.
    pub invoice_was_reissued: bool,
    pub preview: NextInvoicePreview,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

impl PlanChange {
    pub fn currency(&self) -> Currency {
        self.target.amount.currency()
    }

    /// What the change stores beside its columns (`id`, `subscription_id`, `status`,
    /// `currency`, `effective_cycle`, `effective_at`, `created_at`, `updated_at`): the target
    /// plan, the diff and the preview, money as integer thousandths.
    pub fn body_to_stored(&self) -> Result<Value, StoreError> {
        let t = &self.target;
        let m = |x: &Money| x.to_stored();
        let items = t.items.iter().map(item_to_stored).collect::<Result<Vec<_>, _>>()?;
        let p = &self.preview;
        Ok(json!({
            "target": {
                "items": items,
                "coupon_ids": t.coupon_ids,
                "coupons": lines_to_stored(&t.coupons)?,
                "original_amount": m(&t.original_amount)?,
                "item_level_discounted_amount": m(&t.item_level_discounted_amount)?,
                "total_vat_amount": m(&t.total_vat_amount)?,
                "total_price_excluding_vat": m(&t.total_price_excluding_vat)?,
                "amount": m(&t.amount)?,
                "recurring_interval": t.recurring_interval,
                "recurring_interval_count": t.recurring_interval_count,
            },
            "product_names": self.product_names.iter().map(|(p, n)| json!([p, n])).collect::<Vec<_>>(),
            "new_coupons": self.new_coupons,
            "current_amount": m(&self.current_amount)?,
            "current_interval": self.current_interval,
            "current_interval_count": self.current_interval_count,
            "changes": self.changes.iter().map(DiffEntry::to_json).collect::<Vec<_>>(),
            "invoice_was_reissued": self.invoice_was_reissued,
            "preview": {
                "cycle": p.cycle,
                "period_start": format_rfc3339(&p.period_start),
                "period_end": format_rfc3339(&p.period_end),
                "issue_at": format_rfc3339(&p.issue_at),
                "due_at": format_rfc3339(&p.due_at),
                "subtotal": m(&p.subtotal)?,
                "discount_total": m(&p.discount_total)?,
                "total_amount": m(&p.total_amount)?,
            },
        }))
    }

    /// A change read back from its columns and stored body; `None` when the body does not read.
    #[allow(clippy::too_many_arguments)]
    pub fn from_stored(
        id: PlanChangeId,
        subscription_id: SubscriptionId,
        status: &str,
        currency: Currency,
        effective_cycle: u32,
        effective_at: Timestamp,
        body: &Value,
        created_at: Timestamp,
        updated_at: Option<Timestamp>,
    ) -> Option<PlanChange> {
        let mo = |v: &Value, k: &str| v.get(k).and_then(Value::as_i64).map(|x| Money::from_stored(x, currency));
        let ts = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).and_then(parse_datetime);
        let ids = |v: &Value| serde_json::from_value::<Vec<CouponId>>(v.clone()).ok();
        let t = body.get("target")?;
        let interval = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).and_then(RecurringInterval::parse);
        let count = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
        let target = Plan {
            items: t
                .get("items")?
                .as_array()?
                .iter()
                .map(|v| item_from_stored(v, currency))
                .collect::<Option<Vec<_>>>()?,
            coupon_ids: ids(t.get("coupon_ids")?)?,
            coupons: lines_from_stored(t.get("coupons")?, currency),
            original_amount: mo(t, "original_amount")?,
            item_level_discounted_amount: mo(t, "item_level_discounted_amount")?,
            total_vat_amount: mo(t, "total_vat_amount")?,
            total_price_excluding_vat: mo(t, "total_price_excluding_vat")?,
            amount: mo(t, "amount")?,
            recurring_interval: interval(t, "recurring_interval")?,
            recurring_interval_count: count(t, "recurring_interval_count")?,
        };
        let p = body.get("preview")?;
        Some(PlanChange {
            id,
            subscription_id,
            status: PlanChangeStatus::parse(status)?,
            effective_cycle,
            effective_at,
            target,
            product_names: body
                .get("product_names")?
                .as_array()?
                .iter()
                .map(|v| Some((v.get(0)?.as_str()?.parse().ok()?, v.get(1)?.as_str()?.to_string())))
                .collect::<Option<Vec<_>>>()?,
            new_coupons: ids(body.get("new_coupons")?)?,
            current_amount: mo(body, "current_amount")?,
            current_interval: interval(body, "current_interval")?,
            current_interval_count: count(body, "current_interval_count")?,
            changes: body.get("changes")?.as_array()?.iter().map(DiffEntry::from_json).collect::<Option<Vec<_>>>()?,
            invoice_was_reissued: body.get("invoice_was_reissued")?.as_bool()?,
            preview: NextInvoicePreview {
                cycle: count(p, "cycle")?,
                period_start: ts(p, "period_start")?,
                period_end: ts(p, "period_end")?,
                issue_at: ts(p, "issue_at")?,
                due_at: ts(p, "due_at")?,
                subtotal: mo(p, "subtotal")?,
                discount_total: mo(p, "discount_total")?,
                total_amount: mo(p, "total_amount")?,
            },
            created_at,
            updated_at,
        })
    }
}

fn item_to_stored(it: &SubscriptionItem) -> Result<Value, StoreError> {
    let l = &it.line;
    Ok(json!({
        "id": it.id,
        "product_id": l.product_id,
        "price_id": l.price_id,
        "quantity": l.quantity,
        "unit_price": l.unit_price.to_stored()?,
        "vat_mode": l.vat_mode.as_str(),
        "one_time": l.one_time,
        "coupon_ids": l.coupon_ids,
        "original_amount": l.original_amount.to_stored()?,
        "discounted_amount": l.discounted_amount.to_stored()?,
        "coupons": lines_to_stored(&l.coupons)?,
        "vat_amount": l.vat_amount.to_stored()?,
        "excluding_vat": l.excluding_vat.to_stored()?,
        "created_at": format_rfc3339(&l.created_at),
        "updated_at": it.updated_at.as_ref().map(format_rfc3339),
    }))
}

fn item_from_stored(v: &Value, currency: Currency) -> Option<SubscriptionItem> {
    let mo = |k: &str| v.get(k).and_then(Value::as_i64).map(|x| Money::from_stored(x, currency));
    let id: SubscriptionItemId = v.get("id")?.as_str()?.parse().ok()?;
    let price_id = match v.get("price_id")? {
        Value::Null => None,
        p => Some(p.as_str()?.parse::<PriceId>().ok()?),
    };
    Some(SubscriptionItem {
        id,
        line: InvoiceItem {
            id: InvoiceItemId(id.0),
            product_id: v.get("product_id")?.as_str()?.parse().ok()?,
            price_id,
            quantity: u32::try_from(v.get("quantity")?.as_u64()?).ok()?,
            unit_price: mo("unit_price")?,
            vat_mode: VatMode::parse(v.get("vat_mode")?.as_str()?)?,
            one_time: v.get("one_time")?.as_bool()?,
            coupon_ids: serde_json::from_value(v.get("coupon_ids")?.clone()).ok()?,
            original_amount: mo("original_amount")?,
            discounted_amount: mo("discounted_amount")?,
            coupons: lines_from_stored(v.get("coupons")?, currency),
            vat_amount: mo("vat_amount")?,
            excluding_vat: mo("excluding_vat")?,
            created_at: parse_datetime(v.get("created_at")?.as_str()?)?,
        },
        updated_at: match v.get("updated_at")? {
            Value::Null => None,
            t => Some(parse_datetime(t.as_str()?)?),
        },
    })
}

/// SubscriptionUpdate, parsed. Absent fields keep their value; `items` and `coupons` are the
/// plan wanted from the next cycle on.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionUpdate {
    pub items: Vec<SubscriptionItemRequest>,
    pub coupons: Vec<CouponId>,
    /// `Some(None)`: no description.
    pub description: Option<Option<String>>,
    /// `Some(None)`: no end.
    pub until_cycle_number: Option<Option<u32>>,
    pub payment_methods: Option<PaymentMethodOverrides>,
    pub recurring_interval: Option<RecurringInterval>,
    pub recurring_interval_count: Option<u32>,
    pub exclude_coupons_if_installments: Option<bool>,
    /// Sent anyway by some clients: it must be the subscription's own.
    pub consumer_id: Option<ConsumerId>,
    pub currency: Option<Currency>,
}
