//! What the API answers of a subscription: SubscriptionDetailed (list entries are the same
//! document), borrowed from a [`SubscriptionDetail`] (the subscription with what was loaded
//! with it in one transaction), its items, its consumer and its latest freeze.

use super::plan_change::view::PendingPlanChange;
use super::wire::request::SubscriptionPaymentMethodDto;
use super::{Freeze, FreezeState, PaymentMethodOverrides, PlanChange, Subscription, SubscriptionItem, SubscriptionStatus, Trial};
use crate::clock::Timestamp;
use crate::consumer::{Address, CommunicationMethod, Consumer, ConsumerType};
use crate::fields::{Email, Language, PhoneNumber};
use crate::ids::{BranchId, ConsumerId, CouponId, FreezeId, InvoiceId, OrgId, ProductId, SubscriptionId, SubscriptionItemId, UserId};
use crate::invoice::Invoice;
use crate::money::{Currency, Money};
use crate::org::OrgSettings;
use crate::payment::Payment;
use crate::pricing::view::{coupon_calculation, CouponCalculation};
use crate::product::{Product, RecurringInterval};
use crate::schema::{Integer, Number};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

/// A subscription with everything its response shows, loaded in the transaction that read (or
/// changed) it.
#[derive(Debug, Clone)]
pub struct SubscriptionDetail {
    pub subscription: Subscription,
    /// The products of its items, as stored now (a deleted one is missing: `product: null`).
    pub products: Vec<Product>,
    pub consumer: Option<Consumer>,
    /// Its latest invoice and that invoice's payments.
    pub latest_invoice: Option<(Invoice, Vec<Payment>)>,
    /// Its trial, if it had one.
    pub trial: Option<Trial>,
    /// [`super::freeze::pick_latest`]'s pick: the freeze in force, else the next, else the last.
    pub latest_freeze: Option<Freeze>,
    /// Its SCHEDULED plan change.
    pub pending_change: Option<PlanChange>,
    /// The organization's time when it was read (for `remaining_days`).
    pub as_of: Timestamp,
}

/// Where the response of a subscription is shown: what its embedded invoice and products need.
#[derive(Clone, Copy)]
pub struct ViewContext<'a> {
    pub settings: &'a OrgSettings,
    /// The name of the request's branch (the embedded invoice's `branch`).
    pub branch_name: &'a str,
    /// The server's public URL (the embedded invoice's `url`).
    pub public_url: &'a str,
}

/// The schema of a component the server's document still describes itself, named by
/// reference until its view is the model's own (InvoiceBase: the invoices' view; ProductDto:
/// the catalog's).
macro_rules! component_ref {
    ($($(#[$m:meta])* $ty:ident => $name:literal;)*) => {$(
        $(#[$m])*
        pub struct $ty;
        impl JsonSchema for $ty {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn json_schema(g: &mut SchemaGenerator) -> Schema {
                let path = g.settings().definitions_path.trim_start_matches('#').trim_end_matches('/').to_string();
                schemars::json_schema!({"$ref": format!("#{path}/{}", $name)})
            }
        }
    )*};
}

component_ref! {
    /// InvoiceBase (the server's `openapi::shapes::InvoiceBase`).
    InvoiceBaseRef => "InvoiceBase";
    /// ProductDto (the server's `openapi::shapes::ProductDto`).
    ProductDtoRef => "ProductDto";
}

/// SubscriptionDetailed: a consumer billed repeatedly for recurring products, one invoice per
/// cycle.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SubscriptionDetailed<'a> {
    /// When the subscription was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When it last changed; `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
    /// The subscription's id.
    pub id: SubscriptionId,
    /// The merchant's description, copied onto each cycle's invoice.
    pub description: Option<&'a str>,
    /// What each cycle bills, VAT and coupons included (a decimal string in `currency`).
    #[schemars(with = "String")]
    pub amount: Money,
    /// `amount` in the currency's minor units (halalas for SAR).
    #[schemars(with = "Integer")]
    pub amount_in_smallest_unit: i64,
    /// The items' amounts before any coupon.
    #[schemars(with = "String")]
    pub original_amount: Money,
    /// The items' amounts after their own coupons, before the subscription's coupons.
    #[schemars(with = "String")]
    pub item_level_discounted_amount: Money,
    /// The VAT each cycle bills.
    #[schemars(with = "String")]
    pub total_vat_amount: Money,
    /// What each cycle bills before VAT.
    #[schemars(with = "String")]
    pub total_price_excluding_vat: Money,
    /// The subscription-level coupons, in the order they applied.
    #[schemars(with = "Option<CouponCalculation<'static>>")]
    pub coupon_calculation_metadata: CouponCalculation<'a>,
    /// The ids of the subscription-level coupons.
    pub coupons: &'a [CouponId],
    /// Whole days left in the current period, rounded up; 0 once it ended or the subscription
    /// is over.
    #[schemars(with = "Number")]
    pub remaining_days: i64,
    /// The currency every cycle is billed in.
    #[schemars(with = "Option<Currency>")]
    pub currency: Currency,
    /// Not tracked: always `null`.
    pub home_currency_amount: Option<&'a str>,
    /// Not tracked: always `null`.
    pub exchange_rate_at_creation: Option<&'a str>,
    /// The unit of a cycle (its products' interval).
    #[schemars(with = "Option<RecurringInterval>")]
    pub recurring_interval: RecurringInterval,
    /// How many `recurring_interval`s one cycle lasts.
    #[schemars(with = "Integer")]
    pub recurring_interval_count: u32,
    /// Where the subscription is in its life.
    pub status: SubscriptionStatus,
    /// When the current cycle started.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub current_period_start: Timestamp,
    /// When the current cycle ends (moved later by the freezes that fall in it).
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub current_period_end: Timestamp,
    /// The current cycle, from 1 (0 during a trial).
    #[schemars(with = "Integer")]
    pub current_cycle_number: u32,
    /// The last cycle billed; `null`: no end.
    #[schemars(with = "Option<Integer>")]
    pub until_cycle_number: Option<u32>,
    /// Whether it ends (CANCELED) at the end of the current period.
    pub cancel_at_period_end: bool,
    /// The cycle at whose end a scheduled cancellation takes effect; `null` if none.
    #[schemars(with = "Option<Number>")]
    pub cancel_at_cycle_number: Option<u32>,
    /// When it first became ACTIVE; `null` until then.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub started_at: Option<Timestamp>,
    /// When it was canceled or ran out of cycles; `null` while it runs.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub ended_at: Option<Timestamp>,
    /// The user (or key's user) who created it.
    pub user_id: UserId,
    /// The organization it belongs to.
    pub organization_id: OrgId,
    /// The branch it belongs to.
    pub branch_id: BranchId,
    /// The consumer billed.
    pub organization_consumer_id: ConsumerId,
    /// The invoice of the latest cycle issued; `null` before the first (a trial).
    pub latest_invoice_id: Option<InvoiceId>,
    /// The trial's length in whole days; `null` without a trial.
    #[schemars(with = "Option<Integer>")]
    pub trial_period_days: Option<i64>,
    /// When the trial ends (the first paid cycle's start); `null` without a trial.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub trial_end: Option<Timestamp>,
    /// The consumer billed; `null` if it can no longer be read.
    pub organization_consumer: Option<SubscriptionConsumer<'a>>,
    /// The lines each cycle bills.
    #[schemars(with = "Option<Vec<SubscriptionItemDto<'static>>>")]
    pub items: Vec<SubscriptionItemDto<'a>>,
    /// The latest invoice (InvoiceBase, as the invoices list shows it); `null` before the first.
    #[schemars(with = "Option<InvoiceBaseRef>")]
    pub latest_invoice: Option<Value>,
    /// The freeze in force, else the next one, else the last one; `null` if none.
    pub latest_freeze: Option<FreezeSubscriptionBase<'a>>,
    /// The overrides of the organization's payment methods for its invoices, and auto-renewal.
    #[schemars(with = "Option<SubscriptionPaymentMethodDto>")]
    pub override_payment_methods: &'a PaymentMethodOverrides,
    /// The plan change scheduled for the period end; `null` if none.
    pub pending_change: Option<PendingPlanChange<'a>>,
    /// Whether the consumer is notified of its invoices.
    pub notify_consumer: bool,
    /// Whether coupons are dropped when an invoice is paid in installments.
    pub exclude_coupons_if_installments: bool,
}

/// app__subscription__v2__dtos__OrganizationConsumer: the consumer a subscription bills.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "app__subscription__v2__dtos__OrganizationConsumer")]
pub struct SubscriptionConsumer<'a> {
    /// The consumer's id.
    pub id: ConsumerId,
    /// The consumer's name.
    pub name: &'a str,
    /// A short name the merchant knows the consumer by.
    pub alias: Option<&'a str>,
    /// E-mail address.
    pub email: Option<&'a Email>,
    /// Mobile number in E.164.
    pub phone_number: Option<&'a PhoneNumber>,
    /// The language of the consumer's notifications and hosted pages.
    #[schemars(with = "Option<Language>")]
    pub preferred_language: Language,
    /// An individual or a business.
    #[schemars(with = "Option<ConsumerType>")]
    pub consumer_type: ConsumerType,
    /// The consumer's postal address.
    pub address: Option<&'a Address>,
    /// The consumer's VAT registration number (businesses).
    pub vat_number: Option<&'a str>,
    /// The consumer's commercial registration number (businesses).
    pub commercial_registration: Option<&'a str>,
    /// Whether the consumer was deleted (its subscriptions are still shown).
    pub is_deleted: bool,
    /// How the consumer is notified, in this order.
    pub communication_methods: &'a [CommunicationMethod],
}

/// SubscriptionItemDto: one line each cycle's invoice bills.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SubscriptionItemDto<'a> {
    /// When the line was priced.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the line last changed; `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
    /// The line's id.
    pub id: SubscriptionItemId,
    /// The product billed.
    pub product_id: ProductId,
    /// The subscription the line belongs to.
    pub subscription_id: SubscriptionId,
    /// How many units.
    #[schemars(with = "Integer")]
    pub quantity: u32,
    /// The price of one unit when the line was priced (a decimal string).
    #[schemars(with = "String")]
    pub unit_price: Money,
    /// `unit_price × quantity`, before coupons.
    #[schemars(with = "String")]
    pub original_amount: Money,
    /// The line's amount after its own coupons.
    #[schemars(with = "String")]
    pub discounted_amount: Money,
    /// The VAT of the line.
    #[schemars(with = "String")]
    pub vat_amount: Money,
    /// The line's amount before VAT.
    #[schemars(with = "String")]
    pub price_excluding_vat: Money,
    /// The ids of the line's own coupons.
    pub coupons: &'a [CouponId],
    /// The line's own coupons, in the order they applied.
    #[schemars(with = "Option<CouponCalculation<'static>>")]
    pub coupon_calculation_metadata: CouponCalculation<'a>,
    /// The product as stored now (ProductDto); `null` if it was deleted.
    #[schemars(with = "Option<ProductDtoRef>")]
    pub product: Option<Value>,
}

/// FreezeSubscriptionBase: a span of time during which a subscription is not billed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FreezeSubscriptionBase<'a> {
    /// When the freeze was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When it last changed; `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
    /// The freeze's id.
    pub id: FreezeId,
    /// When it starts (or started).
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub freeze_start_datetime: Timestamp,
    /// When it ends; `null`: until it is ended by an update or a delete. Once ended, when it
    /// actually ended.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub freeze_end_datetime: Option<Timestamp>,
    /// The merchant's note.
    pub notes: Option<&'a str>,
    /// The subscription frozen.
    pub subscription_id: SubscriptionId,
    /// The invoice of the period the freeze extends; `null` if the subscription had none yet.
    pub invoice_id: Option<InvoiceId>,
    /// Its length in whole days, rounded up; `null` while it has no end.
    #[schemars(with = "Option<Integer>")]
    pub duration: Option<i64>,
    /// Where the freeze is in its life.
    pub status: FreezeState,
}

impl Freeze {
    /// FreezeSubscriptionBase.
    pub fn view(&self) -> FreezeSubscriptionBase<'_> {
        FreezeSubscriptionBase {
            created_at: self.created_at,
            updated_at: self.updated_at,
            id: self.id,
            freeze_start_datetime: self.start,
            freeze_end_datetime: self.end,
            notes: self.notes.as_deref(),
            subscription_id: self.subscription_id,
            invoice_id: self.invoice_id,
            duration: self.duration_days(),
            status: self.state,
        }
    }
}

impl Consumer {
    /// app__subscription__v2__dtos__OrganizationConsumer.
    pub fn subscription_summary(&self) -> SubscriptionConsumer<'_> {
        SubscriptionConsumer {
            id: self.id,
            name: &self.name,
            alias: self.alias.as_deref(),
            email: self.email.as_ref(),
            phone_number: self.phone_number.as_ref(),
            preferred_language: self.preferred_language,
            consumer_type: self.consumer_type,
            address: self.address.as_ref(),
            vat_number: self.vat_number.as_deref(),
            commercial_registration: self.commercial_registration.as_deref(),
            is_deleted: self.is_deleted,
            communication_methods: &self.communication_methods,
        }
    }
}

impl SubscriptionDetail {
    /// Whole days left in the current period (rounded up; 0 once it ended or the subscription
    /// is over).
    fn remaining_days(&self) -> i64 {
        let s = &self.subscription;
        if s.status.is_terminal() || s.current_period_end <= self.as_of {
            return 0;
        }
        let us = (s.current_period_end - self.as_of).num_microseconds().unwrap_or(i64::MAX);
        let day = 86_400_000_000i64;
        (us + day - 1) / day
    }

    fn item<'a>(&'a self, it: &'a SubscriptionItem, cx: ViewContext<'_>) -> SubscriptionItemDto<'a> {
        let line = &it.line;
        SubscriptionItemDto {
            created_at: line.created_at,
            updated_at: it.updated_at,
            id: it.id,
            product_id: line.product_id,
            subscription_id: self.subscription.id,
            quantity: line.quantity,
            unit_price: line.unit_price,
            original_amount: line.original_amount,
            discounted_amount: line.discounted_amount,
            vat_amount: line.vat_amount,
            price_excluding_vat: line.excluding_vat,
            coupons: &line.coupon_ids,
            coupon_calculation_metadata: coupon_calculation(&line.coupons),
            product: self.products.iter().find(|p| p.id == line.product_id).map(|p| p.to_json(cx.settings)),
        }
    }

    /// SubscriptionDetailed.
    pub fn response<'a>(&'a self, cx: ViewContext<'a>) -> SubscriptionDetailed<'a> {
        let s = &self.subscription;
        let latest_invoice = self.latest_invoice.as_ref().map(|(inv, payments)| {
            crate::invoice::InvoiceView {
                invoice: inv,
                payments,
                consumer: self.consumer.as_ref(),
                products: &[],
                branch_name: cx.branch_name,
                public_url: cx.public_url,
                settings: cx.settings,
            }
            .list_item(false)
        });
        SubscriptionDetailed {
            created_at: s.created_at,
            updated_at: s.updated_at,
            id: s.id,
            description: s.description.as_deref(),
            amount: s.amount,
            amount_in_smallest_unit: s.amount.minor_units(),
            original_amount: s.original_amount,
            item_level_discounted_amount: s.item_level_discounted_amount,
            total_vat_amount: s.total_vat_amount,
            total_price_excluding_vat: s.total_price_excluding_vat,
            coupon_calculation_metadata: coupon_calculation(&s.coupons),
            coupons: &s.coupon_ids,
            remaining_days: self.remaining_days(),
            currency: s.currency,
            home_currency_amount: None,
            exchange_rate_at_creation: None,
            recurring_interval: s.recurring_interval,
            recurring_interval_count: s.recurring_interval_count,
            status: s.status,
            current_period_start: s.current_period_start,
            current_period_end: s.current_period_end,
            current_cycle_number: s.current_cycle_number,
            until_cycle_number: s.until_cycle_number,
            cancel_at_period_end: s.cancel_at_period_end,
            cancel_at_cycle_number: s.cancel_at_cycle_number(),
            started_at: s.started_at,
            ended_at: s.ended_at,
            user_id: s.user_id,
            organization_id: s.org_id,
            branch_id: s.branch_id,
            organization_consumer_id: s.consumer_id,
            latest_invoice_id: s.latest_invoice_id,
            trial_period_days: self.trial.as_ref().map(Trial::period_days),
            trial_end: self.trial.as_ref().map(|t| t.end),
            organization_consumer: self.consumer.as_ref().map(Consumer::subscription_summary),
            items: s.items.iter().map(|it| self.item(it, cx)).collect(),
            latest_invoice,
            latest_freeze: self.latest_freeze.as_ref().map(Freeze::view),
            override_payment_methods: &s.payment_methods,
            pending_change: self.pending_change.as_ref().map(PlanChange::view),
            notify_consumer: s.notify_consumer,
            exclude_coupons_if_installments: s.exclude_coupons_if_installments,
        }
    }
}
