//! Rows of the invoice tables and their conversions to billing-core's invoice types.

use crate::schema_invoice::*;
use billing_core::error::StoreError;
use billing_core::invoice::*;
use billing_core::money::{Currency, Money};
use billing_core::payment::*;
use billing_core::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_core::product::VatMode;
use billing_core::store::StoreResult;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::Value;
use uuid::Uuid;

type Ts = DateTime<Utc>;

fn unreadable(what: &str, value: impl std::fmt::Display) -> StoreError {
    StoreError::backend(format!("unreadable stored {what}: {value}"))
}

fn currency(s: &str) -> StoreResult<Currency> {
    s.parse().map_err(|_| unreadable("currency", s))
}

fn parsed<T>(what: &str, s: &str, parse: impl Fn(&str) -> Option<T>) -> StoreResult<T> {
    parse(s).ok_or_else(|| unreadable(what, s))
}

fn from_json<T: serde::de::DeserializeOwned>(what: &str, v: Value) -> StoreResult<T> {
    serde_json::from_value(v).map_err(|e| unreadable(what, e))
}

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("plain data serializes")
}

fn m(v: Money) -> StoreResult<i64> {
    billing_core::money::stored(v.amount())
}

#[derive(Queryable, Selectable, Insertable, AsChangeset, Debug)]
#[diesel(table_name = invoices, treat_none_as_null = true, treat_none_as_default_value = false)]
pub struct InvoiceRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub user_id: Uuid,
    pub consumer_id: Uuid,
    pub org_invoice_number: i64,
    pub description: Option<String>,
    pub currency: String,
    pub status: String,
    pub payment_methods: Value,
    pub coupon_ids: Value,
    pub exclude_coupons_if_installments: bool,
    pub notify_consumer: bool,
    pub scheduled_on: Ts,
    pub original_amount: i64,
    pub item_level_discounted_amount: i64,
    pub total_vat_amount: i64,
    pub total_price_excluding_vat: i64,
    pub total_amount: i64,
    pub paid_amount: i64,
    pub coupons: Value,
    pub installments: Option<i32>,
    pub payment_link_id: Option<Uuid>,
    pub subscription_id: Option<Uuid>,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl InvoiceRow {
    pub fn new(v: &Invoice) -> StoreResult<Self> {
        Ok(InvoiceRow {
            id: v.id.0,
            org_id: v.org_id.0,
            branch_id: v.branch_id.0,
            user_id: v.user_id.0,
            consumer_id: v.consumer_id.0,
            org_invoice_number: v.org_invoice_number,
            description: v.description.clone(),
            currency: v.currency.code().into(),
            status: v.status.as_str().into(),
            payment_methods: to_json(&v.payment_methods),
            coupon_ids: to_json(&v.coupon_ids),
            exclude_coupons_if_installments: v.exclude_coupons_if_installments,
            notify_consumer: v.notify_consumer,
            scheduled_on: v.scheduled_on,
            original_amount: m(v.original_amount)?,
            item_level_discounted_amount: m(v.item_level_discounted_amount)?,
            total_vat_amount: m(v.total_vat_amount)?,
            total_price_excluding_vat: m(v.total_price_excluding_vat)?,
            total_amount: m(v.total_amount)?,
            paid_amount: m(v.paid_amount)?,
            coupons: lines_to_stored(&v.coupons)?,
            installments: v.installments.map(i32::from),
            payment_link_id: v.payment_link_id,
            subscription_id: v.subscription_id,
            created_at: v.created_at,
            updated_at: v.updated_at,
        })
    }

    pub fn into_domain(self, items: Vec<InvoiceItem>) -> StoreResult<Invoice> {
        let c = currency(&self.currency)?;
        let mo = |x: i64| Money::from_stored(x, c);
        Ok(Invoice {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            user_id: self.user_id.into(),
            consumer_id: self.consumer_id.into(),
            org_invoice_number: self.org_invoice_number,
            description: self.description,
            currency: c,
            status: parsed("invoice status", &self.status, InvoiceStatus::parse)?,
            payment_methods: from_json("payment methods", self.payment_methods)?,
            coupon_ids: from_json("coupon ids", self.coupon_ids)?,
            exclude_coupons_if_installments: self.exclude_coupons_if_installments,
            notify_consumer: self.notify_consumer,
            scheduled_on: self.scheduled_on,
            original_amount: mo(self.original_amount),
            item_level_discounted_amount: mo(self.item_level_discounted_amount),
            total_vat_amount: mo(self.total_vat_amount),
            total_price_excluding_vat: mo(self.total_price_excluding_vat),
            total_amount: mo(self.total_amount),
            paid_amount: mo(self.paid_amount),
            coupons: lines_from_stored(&self.coupons, c),
            installments: self.installments.map(|n| n as u8),
            payment_link_id: self.payment_link_id,
            subscription_id: self.subscription_id,
            items,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

#[derive(Queryable, Selectable, Insertable, Debug)]
#[diesel(table_name = invoice_items, treat_none_as_default_value = false)]
pub struct ItemRow {
    pub id: Uuid,
    pub invoice_id: Uuid,
    pub position: i32,
    pub product_id: Uuid,
    pub price_id: Option<Uuid>,
    pub quantity: i64,
    pub unit_price: i64,
    pub vat_mode: String,
    pub one_time: bool,
    pub coupon_ids: Value,
    pub original_amount: i64,
    pub discounted_amount: i64,
    pub coupons: Value,
    pub vat_amount: i64,
    pub excluding_vat: i64,
    pub created_at: Ts,
}

impl ItemRow {
    pub fn new(inv: &Invoice, k: usize, it: &InvoiceItem) -> StoreResult<Self> {
        Ok(ItemRow {
            id: it.id.0,
            invoice_id: inv.id.0,
            position: k as i32,
            product_id: it.product_id.0,
            price_id: it.price_id.map(|p| p.0),
            quantity: i64::from(it.quantity),
            unit_price: m(it.unit_price)?,
            vat_mode: it.vat_mode.as_str().into(),
            one_time: it.one_time,
            coupon_ids: to_json(&it.coupon_ids),
            original_amount: m(it.original_amount)?,
            discounted_amount: m(it.discounted_amount)?,
            coupons: lines_to_stored(&it.coupons)?,
            vat_amount: m(it.vat_amount)?,
            excluding_vat: m(it.excluding_vat)?,
            created_at: it.created_at,
        })
    }

    pub fn into_domain(self, c: Currency) -> StoreResult<InvoiceItem> {
        let mo = |x: i64| Money::from_stored(x, c);
        Ok(InvoiceItem {
            id: self.id.into(),
            product_id: self.product_id.into(),
            price_id: self.price_id.map(Into::into),
            quantity: u32::try_from(self.quantity).map_err(|_| unreadable("quantity", self.quantity))?,
            unit_price: mo(self.unit_price),
            vat_mode: parsed("VAT mode", &self.vat_mode, VatMode::parse)?,
            one_time: self.one_time,
            coupon_ids: from_json("coupon ids", self.coupon_ids)?,
            original_amount: mo(self.original_amount),
            discounted_amount: mo(self.discounted_amount),
            coupons: lines_from_stored(&self.coupons, c),
            vat_amount: mo(self.vat_amount),
            excluding_vat: mo(self.excluding_vat),
            created_at: self.created_at,
        })
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset, Debug)]
#[diesel(table_name = payments, treat_none_as_null = true, treat_none_as_default_value = false)]
pub struct PaymentRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub invoice_id: Uuid,
    pub number: i32,
    pub amount: i64,
    pub currency: String,
    pub payment_type: String,
    pub method: Option<String>,
    pub status: String,
    pub scheduled_on: Ts,
    pub payed_at: Option<Ts>,
    pub refunded_at: Option<Ts>,
    pub refund_reason: Option<String>,
    pub refund_note: Option<String>,
    pub note: Option<String>,
    pub transaction_id: Option<Uuid>,
    pub latest_pgw_message: Option<String>,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl PaymentRow {
    pub fn new(p: &Payment) -> StoreResult<Self> {
        Ok(PaymentRow {
            id: p.id.0,
            org_id: p.org_id.0,
            branch_id: p.branch_id.0,
            invoice_id: p.invoice_id.0,
            number: p.number as i32,
            amount: m(p.amount)?,
            currency: p.amount.currency().code().into(),
            payment_type: p.payment_type.as_str().into(),
            method: p.method.map(|x| x.as_str().into()),
            status: p.status.as_str().into(),
            scheduled_on: p.scheduled_on,
            payed_at: p.payed_at,
            refunded_at: p.refunded_at,
            refund_reason: p.refund_reason.map(|x| x.as_str().into()),
            refund_note: p.refund_note.clone(),
            note: p.note.clone(),
            transaction_id: p.transaction_id,
            latest_pgw_message: p.latest_pgw_message.clone(),
            created_at: p.created_at,
            updated_at: p.updated_at,
        })
    }

    pub fn into_domain(self) -> StoreResult<Payment> {
        let c = currency(&self.currency)?;
        Ok(Payment {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            invoice_id: self.invoice_id.into(),
            number: u32::try_from(self.number).map_err(|_| unreadable("payment number", self.number))?,
            amount: Money::from_stored(self.amount, c),
            payment_type: parsed("payment type", &self.payment_type, PaymentType::parse)?,
            method: self.method.as_deref().map(|x| parsed("payment method", x, PaymentMethod::parse)).transpose()?,
            status: parsed("payment status", &self.status, PaymentStatus::parse)?,
            scheduled_on: self.scheduled_on,
            payed_at: self.payed_at,
            refunded_at: self.refunded_at,
            refund_reason: self
                .refund_reason
                .as_deref()
                .map(|x| parsed("refund reason", x, RefundReason::parse))
                .transpose()?,
            refund_note: self.refund_note,
            note: self.note,
            transaction_id: self.transaction_id,
            latest_pgw_message: self.latest_pgw_message,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

#[derive(Queryable, Selectable, Insertable, Debug)]
#[diesel(table_name = tokenized_cards)]
pub struct CardRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub consumer_id: Uuid,
    pub network: String,
    pub last_four: String,
    pub expiry_month: i32,
    pub expiry_year: i32,
    pub gateway_token: String,
    pub is_active: bool,
    pub consent: bool,
    pub created_at: Ts,
}

impl CardRow {
    pub fn new(c: &TokenizedCard) -> Self {
        CardRow {
            id: c.id,
            org_id: c.org_id.0,
            consumer_id: c.consumer_id.0,
            network: c.network.clone(),
            last_four: c.last_four.clone(),
            expiry_month: c.expiry_month as i32,
            expiry_year: c.expiry_year as i32,
            gateway_token: c.gateway_token.clone(),
            is_active: c.is_active,
            consent: c.consent,
            created_at: c.created_at,
        }
    }

    pub fn into_domain(self) -> TokenizedCard {
        TokenizedCard {
            id: self.id,
            org_id: self.org_id.into(),
            consumer_id: self.consumer_id.into(),
            network: self.network,
            last_four: self.last_four,
            expiry_month: self.expiry_month as u32,
            expiry_year: self.expiry_year as u32,
            gateway_token: self.gateway_token,
            is_active: self.is_active,
            consent: self.consent,
            created_at: self.created_at,
        }
    }
}
