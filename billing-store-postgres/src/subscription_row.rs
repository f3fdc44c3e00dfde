//! A subscription's row (`subscriptions`) and its conversions; its items are
//! `subscription`'s (priced lines).

use crate::support::*;
use billing_model::money::Money;
use billing_model::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_model::product::RecurringInterval;
use billing_model::subscription::{Subscription, SubscriptionItem, SubscriptionStatus};
use diesel::prelude::*;

diesel::table! {
    subscriptions (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        user_id -> Uuid,
        consumer_id -> Uuid,
        description -> Nullable<Text>,
        currency -> Text,
        status -> Text,
        recurring_interval -> Text,
        recurring_interval_count -> Int8,
        period_anchor -> Timestamptz,
        current_cycle_number -> Int8,
        current_period_start -> Timestamptz,
        current_period_end -> Timestamptz,
        cancel_at_period_end -> Bool,
        until_cycle_number -> Nullable<Int8>,
        started_at -> Nullable<Timestamptz>,
        ended_at -> Nullable<Timestamptz>,
        latest_invoice_id -> Nullable<Uuid>,
        latest_invoice_paid -> Bool,
        renewal_failures -> Int8,
        options -> Jsonb,
        payment_methods -> Jsonb,
        coupon_ids -> Jsonb,
        coupons -> Jsonb,
        original_amount -> Int8,
        item_level_discounted_amount -> Int8,
        total_vat_amount -> Int8,
        total_price_excluding_vat -> Int8,
        amount -> Int8,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset, Debug, serde::Serialize)]
#[diesel(table_name = subscriptions, treat_none_as_null = true, treat_none_as_default_value = false)]
pub struct SubRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub user_id: Uuid,
    pub consumer_id: Uuid,
    pub description: Option<String>,
    pub currency: String,
    pub status: String,
    pub recurring_interval: String,
    pub recurring_interval_count: i64,
    pub period_anchor: Ts,
    pub current_cycle_number: i64,
    pub current_period_start: Ts,
    pub current_period_end: Ts,
    pub cancel_at_period_end: bool,
    pub until_cycle_number: Option<i64>,
    pub started_at: Option<Ts>,
    pub ended_at: Option<Ts>,
    pub latest_invoice_id: Option<Uuid>,
    pub latest_invoice_paid: bool,
    pub renewal_failures: i64,
    pub options: Value,
    pub payment_methods: Value,
    pub coupon_ids: Value,
    pub coupons: Value,
    pub original_amount: i64,
    pub item_level_discounted_amount: i64,
    pub total_vat_amount: i64,
    pub total_price_excluding_vat: i64,
    pub amount: i64,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl SubRow {
    pub(crate) fn new(v: &Subscription) -> StoreResult<Self> {
        Ok(SubRow {
            id: v.id.0,
            org_id: v.org_id.0,
            branch_id: v.branch_id.0,
            user_id: v.user_id.0,
            consumer_id: v.consumer_id.0,
            description: v.description.clone(),
            currency: v.currency.code().into(),
            status: v.status.as_str().into(),
            recurring_interval: v.recurring_interval.as_str().into(),
            recurring_interval_count: i64::from(v.recurring_interval_count),
            period_anchor: v.period_anchor,
            current_cycle_number: i64::from(v.current_cycle_number),
            current_period_start: v.current_period_start,
            current_period_end: v.current_period_end,
            cancel_at_period_end: v.cancel_at_period_end,
            until_cycle_number: v.until_cycle_number.map(i64::from),
            started_at: v.started_at,
            ended_at: v.ended_at,
            latest_invoice_id: v.latest_invoice_id.map(|x| x.0),
            latest_invoice_paid: v.latest_invoice_paid,
            renewal_failures: i64::from(v.renewal_failures),
            options: serde_json::json!({
                "notify_consumer": v.notify_consumer,
                "exclude_coupons_if_installments": v.exclude_coupons_if_installments,
                "anchor_cycle": v.anchor_cycle,
            }),
            payment_methods: to_json("payment_methods", &v.payment_methods),
            coupon_ids: to_json("coupon_ids", &v.coupon_ids),
            coupons: lines_to_stored(&v.coupons)?,
            original_amount: m(v.original_amount)?,
            item_level_discounted_amount: m(v.item_level_discounted_amount)?,
            total_vat_amount: m(v.total_vat_amount)?,
            total_price_excluding_vat: m(v.total_price_excluding_vat)?,
            amount: m(v.amount)?,
            created_at: v.created_at,
            updated_at: v.updated_at,
        })
    }

    pub(crate) fn into_domain(self, items: Vec<SubscriptionItem>) -> StoreResult<Subscription> {
        let c = currency(&self.currency)?;
        let mo = |x: i64| Money::from_stored(x, c);
        Ok(Subscription {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            user_id: self.user_id.into(),
            consumer_id: self.consumer_id.into(),
            description: self.description,
            currency: c,
            status: parsed("subscription status", &self.status, SubscriptionStatus::parse)?,
            recurring_interval: parsed("recurring interval", &self.recurring_interval, RecurringInterval::parse)?,
            recurring_interval_count: count_of("recurring_interval_count", self.recurring_interval_count)?,
            period_anchor: self.period_anchor,
            // Absent in rows written before plan changes: cycle 1.
            anchor_cycle: match self.options.get("anchor_cycle") {
                None => 1,
                Some(v) => v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| unreadable("options", &self.options))?,
            },
            current_cycle_number: count_of("current_cycle_number", self.current_cycle_number)?,
            current_period_start: self.current_period_start,
            current_period_end: self.current_period_end,
            cancel_at_period_end: self.cancel_at_period_end,
            until_cycle_number: self.until_cycle_number.map(|n| count_of("until_cycle_number", n)).transpose()?,
            started_at: self.started_at,
            ended_at: self.ended_at,
            latest_invoice_id: self.latest_invoice_id.map(Into::into),
            latest_invoice_paid: self.latest_invoice_paid,
            renewal_failures: count_of("renewal_failures", self.renewal_failures)?,
            notify_consumer: self.options["notify_consumer"].as_bool().ok_or_else(|| unreadable("options", &self.options))?,
            exclude_coupons_if_installments: self.options["exclude_coupons_if_installments"]
                .as_bool()
                .ok_or_else(|| unreadable("options", &self.options))?,
            payment_methods: from_json("payment methods", self.payment_methods)?,
            coupon_ids: from_json("coupon ids", self.coupon_ids)?,
            coupons: lines_from_stored(&self.coupons, c),
            original_amount: mo(self.original_amount),
            item_level_discounted_amount: mo(self.item_level_discounted_amount),
            total_vat_amount: mo(self.total_vat_amount),
            total_price_excluding_vat: mo(self.total_price_excluding_vat),
            amount: mo(self.amount),
            items,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}
