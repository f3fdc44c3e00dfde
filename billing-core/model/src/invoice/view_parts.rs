//! The parts an invoice's views embed: InvoiceItemDto (a line), InvoicePaymentMethodDto (the
//! methods the payer may use; also the create request's) and InvoiceListSubscrptionDto.

use super::InvoiceItem;
use crate::clock::Timestamp;
use crate::ids::{InvoiceItemId, PriceId, ProductId};
use crate::money::{Currency, Money};
use crate::org::PaymentMethods;
use crate::pricing::view::{coupon_calculation, CouponCalculation};
use crate::schema::{DateTime, Id, Integer, ProductDtoRef, SubscriptionRecurringInterval, SubscriptionStatusRef};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// InvoiceItemDto: one line of an invoice.
#[derive(Debug, Serialize, JsonSchema)]
pub struct InvoiceItemDto<'a> {
    /// When the line was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// Lines do not change; always `null`.
    #[schemars(with = "Option<DateTime>")]
    pub updated_at: Option<()>,
    /// The line's id.
    pub id: InvoiceItemId,
    /// The product sold.
    pub product_id: ProductId,
    /// The product as it is now; `null` in lists or if it is gone.
    #[schemars(with = "Option<ProductDtoRef>")]
    pub product: Option<Value>,
    /// How many.
    #[schemars(with = "Integer")]
    pub quantity: u32,
    /// `unit_price` times `quantity`, before discounts (a decimal string).
    #[schemars(with = "String")]
    pub original_amount: Money,
    /// After the line's own coupons.
    #[schemars(with = "String")]
    pub discounted_amount: Money,
    /// The line's coupons, in order (an empty list if none).
    #[schemars(with = "Option<CouponCalculation<'static>>")]
    pub coupon_calculation_metadata: CouponCalculation<'a>,
    /// The line's currency (the invoice's).
    #[schemars(with = "Option<Currency>")]
    pub currency: Currency,
    /// The price of one unit when the invoice was made.
    #[schemars(with = "Option<String>")]
    pub unit_price: Money,
    /// The product price the line was priced from.
    pub product_price_id: Option<PriceId>,
    /// The VAT in the line's discounted amount.
    #[schemars(with = "String")]
    pub vat_amount: Money,
    /// The line's discounted amount without VAT.
    #[schemars(with = "String")]
    pub price_excluding_vat: Money,
}

/// InvoicePaymentMethodDto: the methods the payer of an invoice may pay with.
#[derive(Debug, Serialize, JsonSchema)]
pub struct InvoicePaymentMethodDto {
    /// mada debit cards.
    #[schemars(with = "Option<bool>")]
    pub mada: bool,
    /// Visa cards.
    #[schemars(with = "Option<bool>")]
    pub visa: bool,
    /// Mastercard cards.
    #[schemars(with = "Option<bool>")]
    pub mastercard: bool,
    /// American Express cards.
    #[schemars(with = "Option<bool>")]
    pub amex: bool,
    /// Bank transfer.
    #[schemars(with = "Option<bool>")]
    pub bank_transfer: bool,
    /// Paying in 2, 3 or 4 installments (one-time products only).
    #[schemars(with = "Option<bool>")]
    pub installment: bool,
    /// Qurrah.
    #[schemars(with = "Option<bool>")]
    pub qurrah: bool,
}

impl From<&PaymentMethods> for InvoicePaymentMethodDto {
    fn from(m: &PaymentMethods) -> Self {
        InvoicePaymentMethodDto {
            mada: m.mada,
            visa: m.visa,
            mastercard: m.mastercard,
            amex: m.amex,
            bank_transfer: m.bank_transfer,
            installment: m.installment,
            qurrah: m.qurrah,
        }
    }
}

/// InvoiceListSubscrptionDto (the public API's spelling): the subscription of an invoice in a
/// list. Not embedded yet: lists answer `subscription: null`.
#[derive(JsonSchema)]
pub struct InvoiceListSubscrptionDto {
    /// The subscription's id.
    pub id: Id,
    /// The interval between renewals.
    pub recurring_interval: Option<SubscriptionRecurringInterval>,
    /// How many intervals make one period.
    pub recurring_interval_count: Integer,
    /// The subscription's status.
    pub status: Option<SubscriptionStatusRef>,
    /// When the current period started.
    pub current_period_start: DateTime,
    /// When the current period ends.
    pub current_period_end: Option<DateTime>,
    /// Whether the subscription ends at the end of the current period.
    pub cancel_at_period_end: bool,
}

impl InvoiceItem {
    /// InvoiceItemDto of a line of an invoice in `currency`, with its product's view if known.
    pub fn dto(&self, currency: Currency, product: Option<Value>) -> InvoiceItemDto<'_> {
        InvoiceItemDto {
            created_at: self.created_at,
            updated_at: None,
            id: self.id,
            product_id: self.product_id,
            product,
            quantity: self.quantity,
            original_amount: self.original_amount,
            discounted_amount: self.discounted_amount,
            coupon_calculation_metadata: coupon_calculation(&self.coupons),
            currency,
            unit_price: self.unit_price,
            product_price_id: self.price_id,
            vat_amount: self.vat_amount,
            price_excluding_vat: self.excluding_vat,
        }
    }
}
