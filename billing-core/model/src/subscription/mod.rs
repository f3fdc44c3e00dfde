//! Subscriptions: a consumer billed repeatedly for recurring products, one invoice per cycle.
//!
//! - [`cycle`]: where each cycle starts and ends (anchored on `period_start`, end-of-month
//!   clamping, no drift; an interval change re-anchors from the cycle it takes effect).
//! - [`ops`]: create (the first cycle's invoice issued at once), get, list, cancel, uncancel;
//!   and what paying a subscription's invoice changes (the first one activates it).
//! - [`plan_change`]: `PUT /subscriptions/{id}` (fields applied at once, plan changes scheduled
//!   for the period end with their diff and preview) and the pending change.
//! - `period_end`: the steps of a cycle on one subscription in the caller's transaction:
//!   preparing the next invoice ahead (the organization's lead time), renewing at the period
//!   end (a pending change applied first, scheduled cancellation, `until_cycle_number`).
//! - `renewal`: the due-work handlers that run those steps, the auto-renewal charge and its
//!   retries (the organization's schedule).
//! - [`store`]: the [`SubscriptionTx`] slice of the store contract; one invoice per subscription
//!   and cycle is a unique key of the store (`subscription_cycles_key`).
//! - `wire` and `view`: request parsing and SubscriptionDetailed.
//! - [`freeze`]: freeze periods (the subscription FROZEN while one is in force, its period
//!   extended by the time it was frozen and the cycles re-anchored there) and their due-work
//!   items.
//! - [`trial`]: trials (TRIALING until `period_start`, then the first paid cycle).
//!
//! Prices are fixed when the subscription is made (by [`crate::pricing`], as invoices'): every
//! cycle's invoice bills the subscription's priced lines, so a later change of a product's
//! price does not change a running subscription; a plan change prices its target once, when
//! it is made, and the invoices bill exactly that.

pub mod cycle;
pub mod freeze;
pub mod plan_change;
pub mod store;
pub mod trial;
pub mod view;
pub mod wire;

pub use crate::org::subscription_settings::RENEWAL_RETRY_DAYS;
pub use freeze::{Freeze, FreezeRequest, FreezeSort, FreezeState, FreezeTx};
pub use plan_change::{PlanChange, PlanChangeStatus, PlanChangeTx, SubscriptionUpdate};
pub use store::SubscriptionTx;
pub use trial::{Trial, TrialTx};
pub use wire::parse_subscription_list;

use crate::clock::Timestamp;
use crate::ids::{BranchId, ConsumerId, CouponId, InvoiceId, OrgId, ProductId, SubscriptionId, SubscriptionItemId, UserId};
use crate::invoice::{InvoiceItem, PaymentMethods};
use crate::list::ListQuery;
use crate::money::{Currency, Money};
use crate::pricing::CouponLine;
use crate::product::RecurringInterval;
use crate::wire_enum;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

wire_enum!(SubscriptionStatus {
    Inactive = "INACTIVE",
    Active = "ACTIVE",
    Expired = "EXPIRED",
    Canceled = "CANCELED",
    Frozen = "FROZEN",
    Trialing = "TRIALING",
    TrialPending = "TRIAL_PENDING",
});

wire_enum!(SubscriptionSort {
    CreatedAt = "created_at",
    UpdatedAt = "updated_at",
    Amount = "amount",
    CurrentPeriodStart = "current_period_start",
    CurrentPeriodEnd = "current_period_end",
    Status = "status",
});

impl SubscriptionStatus {
    /// Over: nothing more is billed.
    pub fn is_terminal(self) -> bool {
        matches!(self, SubscriptionStatus::Canceled | SubscriptionStatus::Expired)
    }

    /// Whether an issued, unpaid invoice of the subscription is still collected (auto-renewal
    /// charges and their retries): ACTIVE, FROZEN (the invoice is of a period before the
    /// freeze) and TRIAL_PENDING (the first paid cycle after a trial).
    pub fn collects(self) -> bool {
        matches!(self, SubscriptionStatus::Active | SubscriptionStatus::Frozen | SubscriptionStatus::TrialPending)
    }
}

/// SubscriptionPaymentMethodDto: the overrides of the organization's payment methods (`None`:
/// the organization's default), and whether renewals charge the consumer's card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PaymentMethodOverrides {
    pub visa: Option<bool>,
    pub mastercard: Option<bool>,
    pub amex: Option<bool>,
    pub bank_transfer: Option<bool>,
    pub installment: Option<bool>,
    pub qurrah: Option<bool>,
    pub subscription_auto_renewal: Option<bool>,
}

impl PaymentMethodOverrides {
    /// The ways of paying the subscription's invoices offer: the organization's defaults with
    /// these overrides; never installments (recurring products are not paid in installments).
    pub fn effective(&self, defaults: PaymentMethods) -> PaymentMethods {
        let visa = self.visa.unwrap_or(defaults.visa);
        PaymentMethods {
            mada: if self.visa.is_some() { visa } else { defaults.mada },
            visa,
            mastercard: self.mastercard.unwrap_or(defaults.mastercard),
            amex: self.amex.unwrap_or(defaults.amex),
            bank_transfer: self.bank_transfer.unwrap_or(defaults.bank_transfer),
            installment: false,
            qurrah: self.qurrah.unwrap_or(defaults.qurrah),
        }
    }

    /// Whether renewals charge the consumer's latest active card (default: yes).
    pub fn auto_renewal(&self) -> bool {
        self.subscription_auto_renewal.unwrap_or(true)
    }
}

/// One line of a subscription: the priced line each cycle's invoice bills.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionItem {
    pub id: SubscriptionItemId,
    pub line: InvoiceItem,
    pub updated_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    pub id: SubscriptionId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub user_id: UserId,
    pub consumer_id: ConsumerId,
    pub description: Option<String>,
    pub currency: Currency,
    pub status: SubscriptionStatus,
    pub recurring_interval: RecurringInterval,
    pub recurring_interval_count: u32,
    /// The start of cycle `anchor_cycle`: every later cycle boundary is computed from it
    /// ([`cycle`]).
    pub period_anchor: Timestamp,
    /// The cycle that starts at `period_anchor`: 1, until a plan change of the interval
    /// re-anchors the cycles where it takes effect ([`plan_change`]) or the end of a freeze at
    /// the moved period end ([`freeze`]).
    pub anchor_cycle: u32,
    pub current_cycle_number: u32,
    pub current_period_start: Timestamp,
    pub current_period_end: Timestamp,
    /// An ACTIVE subscription canceled: it ends at the end of the current period.
    pub cancel_at_period_end: bool,
    /// The last cycle billed; none is no end.
    pub until_cycle_number: Option<u32>,
    /// When it first became ACTIVE.
    pub started_at: Option<Timestamp>,
    /// When it was canceled (or ran out of cycles).
    pub ended_at: Option<Timestamp>,
    pub latest_invoice_id: Option<InvoiceId>,
    /// Whether the latest invoice is paid (in full or in part).
    pub latest_invoice_paid: bool,
    /// Failed auto-renewal charges of the latest invoice so far.
    pub renewal_failures: u32,
    pub notify_consumer: bool,
    pub exclude_coupons_if_installments: bool,
    pub payment_methods: PaymentMethodOverrides,
    pub coupon_ids: Vec<CouponId>,
    pub coupons: Vec<CouponLine>,
    pub original_amount: Money,
    pub item_level_discounted_amount: Money,
    pub total_vat_amount: Money,
    pub total_price_excluding_vat: Money,
    /// What each cycle bills.
    pub amount: Money,
    pub items: Vec<SubscriptionItem>,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

impl Subscription {
    pub fn api_url(public_url: &str, id: SubscriptionId) -> String {
        format!("{public_url}/api/v2/subscriptions/{id}")
    }

    /// Cycle `n`'s `(start, end)`, for `n` from `anchor_cycle` on.
    pub fn cycle(&self, n: u32) -> (Timestamp, Timestamp) {
        let k = (n + 1).checked_sub(self.anchor_cycle).expect("a cycle from the anchor on");
        cycle::cycle(self.period_anchor, self.recurring_interval, self.recurring_interval_count, k)
    }

    /// The cycle at which a scheduled cancellation takes effect (`cancel_at_cycle_number`).
    pub fn cancel_at_cycle_number(&self) -> Option<u32> {
        self.cancel_at_period_end.then_some(self.current_cycle_number)
    }
}

/// SubscriptionItemCreateDto, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionItemRequest {
    pub product_id: ProductId,
    pub quantity: u32,
    pub coupons: Vec<CouponId>,
}

impl SubscriptionItemRequest {
    /// The line as [`crate::pricing`] prices it.
    pub fn pricing_line(&self) -> crate::pricing::ItemRequest {
        crate::pricing::ItemRequest {
            product_id: self.product_id,
            quantity: self.quantity,
            coupons: self.coupons.clone(),
        }
    }
}

/// SubscriptionCreate, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriptionCreate {
    pub notify_consumer: bool,
    pub description: Option<String>,
    pub items: Vec<SubscriptionItemRequest>,
    pub coupons: Vec<CouponId>,
    pub consumer_id: ConsumerId,
    pub period_start: Timestamp,
    pub until_cycle_number: Option<u32>,
    pub payment_methods: PaymentMethodOverrides,
    pub exclude_coupons_if_installments: bool,
    pub currency: Currency,
    /// A trial until `period_start` ([`trial`]): nothing is billed before it.
    pub trial: bool,
}

/// SubscriptionCancel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubscriptionCancel {
    pub cancel_related_invoices: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubscriptionFilter {
    pub statuses: Vec<SubscriptionStatus>,
    pub latest_invoice_is_paid: Option<bool>,
    /// Bounds on `created_at`, inclusive (as every date bound below).
    pub from_date: Option<Timestamp>,
    pub to_date: Option<Timestamp>,
    pub current_period_start_from: Option<Timestamp>,
    pub current_period_start_to: Option<Timestamp>,
    pub current_period_end_from: Option<Timestamp>,
    pub current_period_end_to: Option<Timestamp>,
    /// Bounds on `amount`, inclusive.
    pub from_price: Option<Decimal>,
    pub to_price: Option<Decimal>,
    pub consumer_id: Option<ConsumerId>,
    /// Subscriptions with an item of one of these products.
    pub product_ids: Vec<ProductId>,
    pub currencies: Vec<Currency>,
}

pub struct SubscriptionListRequest {
    pub query: ListQuery<SubscriptionSort>,
    pub filter: SubscriptionFilter,
}
