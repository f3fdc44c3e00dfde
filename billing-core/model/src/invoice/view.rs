//! What the API answers of an invoice: InvoiceDetailed (one invoice with its items, payments and
//! consumer) and InvoiceListItem (an invoice in a list), borrowed from an [`InvoiceDetail`], with
//! the parts they embed in [`super::view_parts`].

use super::view_parts::{InvoiceItemDto, InvoiceListSubscrptionDto, InvoicePaymentMethodDto};
use super::{Invoice, InvoiceDetail, InvoiceStatus};
use crate::branch::BranchDto;
use crate::clock::Timestamp;
use crate::consumer::{Consumer, OrganizationConsumer};
use crate::ids::{BranchId, ConsumerId, InvoiceId, OrgId, UserId};
use crate::money::{Currency, Money};
use crate::org::OrgSettings;
use crate::payment::{Payment, PaymentDto};
use crate::pricing::view::{coupon_calculation, CouponCalculation};
use crate::product::RecurringInterval;
use crate::schema::{DateTime, Id, Integer, InvoiceType, JsonObject, Number, PaymentFlow, PaymentMethodEnum, RecurrencePattern, SubscriptionDetailedRef};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

/// The fields InvoiceDetailed and InvoiceListItem share, in the public schema's order.
macro_rules! invoice_view {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Serialize, JsonSchema)]
        pub struct $name<'a> {
            /// When the invoice was created.
            #[serde(with = "crate::clock::wire_time")]
            #[schemars(with = "Timestamp")]
            pub created_at: Timestamp,
            /// When the invoice last changed; `null` if never.
            #[serde(with = "crate::clock::wire_time::option")]
            #[schemars(with = "Option<Timestamp>")]
            pub updated_at: Option<Timestamp>,
            /// The invoice's id.
            pub id: InvoiceId,
            /// The payment link the invoice was paid through; `null` for an invoice made directly.
            pub payment_link_id: Option<Uuid>,
            /// The user (or the API key's creator) who made the invoice.
            pub user_id: UserId,
            /// The organization's id.
            pub organization_id: OrgId,
            /// The consumer the invoice bills.
            pub organization_consumer_id: ConsumerId,
            /// The account paid into; not tracked yet, always `null`.
            #[schemars(with = "Option<Id>")]
            pub account_id: Option<()>,
            /// The branch the invoice belongs to.
            pub branch_id: BranchId,
            /// The invoice's number in the organization: 1, 2, 3, … without gaps.
            #[schemars(with = "Integer")]
            pub org_invoice_number: i64,
            /// The merchant's description of the invoice.
            pub description: Option<&'a str>,
            /// What the payer owes: a decimal string with the currency's minor digits (`"115.00"`),
            /// VAT included, after every discount.
            #[schemars(with = "String")]
            pub total_amount: Money,
            /// The items' prices times their quantities, before any discount.
            #[schemars(with = "String")]
            pub original_amount: Money,
            /// The items' total after their own coupons, before the invoice's coupons.
            #[schemars(with = "String")]
            pub item_level_discounted_amount: Money,
            /// The VAT included in `total_amount`.
            #[schemars(with = "Option<String>")]
            pub total_vat_amount: Money,
            /// `total_amount` without VAT.
            #[schemars(with = "Option<String>")]
            pub total_price_excluding_vat: Money,
            /// The coupons applied to the whole invoice, in order (an empty list if none).
            #[schemars(with = "Option<CouponCalculation<'static>>")]
            pub coupon_calculation_metadata: CouponCalculation<'a>,
            /// The invoice's currency.
            #[schemars(with = "Option<Currency>")]
            pub currency: Currency,
            /// The total in the organization's home currency; not computed yet, always `null`.
            #[schemars(with = "Option<String>")]
            pub home_currency_amount: Option<()>,
            /// What was received in the home currency; not computed yet, always `null`.
            #[schemars(with = "Option<String>")]
            pub home_currency_amount_actual: Option<()>,
            /// The exchange rate to the home currency when the invoice was made; always `null`.
            #[schemars(with = "Option<String>")]
            pub exchange_rate_at_creation: Option<()>,
            /// A message to the consumer; not supported yet, always `null`.
            #[schemars(with = "Option<String>")]
            pub consumer_message: Option<()>,
            $($(#[$fm])* pub $field: $ty,)*
        }
    };
}

invoice_view! {
    /// InvoiceDetailed: one invoice with its items, payments and consumer.
    InvoiceDetailed {
        /// The invoice's status.
        status: InvoiceStatus,
        /// How the invoice is collected: always `PAYMENTGATEWAY`.
        #[schemars(with = "Option<PaymentMethodEnum>")]
        payment_method: &'static str,
        /// The payment flows the invoice allows: always `ALL`.
        #[schemars(with = "Option<PaymentFlow>")]
        allowed_payment_flow: &'static str,
        /// The payment flow in use: always `ALL`.
        #[schemars(with = "Option<PaymentFlow>")]
        current_payment_flow: &'static str,
        /// The start of the period a recurring invoice bills; not set on invoices, always `null`.
        #[schemars(with = "Option<DateTime>")]
        period_start: Option<()>,
        /// The end of that period; always `null`.
        #[schemars(with = "Option<DateTime>")]
        period_end: Option<()>,
        /// The recurring interval; always `null` (a subscription's invoices show it there).
        #[schemars(with = "Option<RecurringInterval>")]
        recurring_interval: Option<()>,
        /// The number of intervals per period; always `null`.
        #[schemars(with = "Option<Integer>")]
        recurring_interval_count: Option<()>,
        /// `INSTALLMENTS` once the payer chose installments, else `ONE_OFF`.
        #[schemars(with = "InvoiceType")]
        r#type: &'static str,
        /// The invoice's number in the organization (the same as `org_invoice_number`).
        #[schemars(with = "Integer")]
        invoice_number: i64,
        /// What is still owed: the sum of the unpaid payments (a decimal string).
        #[schemars(with = "String")]
        remaining_amount: Money,
        /// What the payer has paid and kept (refunds are taken back off).
        #[schemars(with = "String")]
        paid_amount: Money,
        /// Whether paying in installments drops the coupons (the total is recomputed without
        /// them when the payer chooses installments).
        exclude_coupons_if_installments: bool,
        /// The consumer the invoice bills; `null` only if the consumer is gone.
        organization_consumer: Option<OrganizationConsumer<'a>>,
        /// The invoice's lines, in order.
        items: Vec<InvoiceItemDto<'a>>,
        /// The branch the invoice belongs to.
        #[schemars(with = "Option<BranchDto<'static>>")]
        branch: BranchDto<'a>,
        /// The invoice's payments, by number: one, or one per installment.
        payments: Vec<PaymentDto<'a>>,
        /// The subscription the invoice bills, if any.
        subscription_id: Option<Uuid>,
        /// The subscription; not embedded, always `null` (see `subscription_id`).
        #[schemars(with = "Option<SubscriptionDetailedRef>")]
        subscription: Option<()>,
        /// The methods the payer may pay with.
        #[schemars(with = "Option<InvoicePaymentMethodDto>")]
        payment_methods: InvoicePaymentMethodDto,
        /// How a recurring invoice repeats; not supported, always `null`.
        #[schemars(with = "Option<RecurrencePattern>")]
        recurrence_pattern: Option<()>,
        /// The invoice this one was made from; always `null`.
        #[schemars(with = "Option<Id>")]
        parent_id: Option<()>,
        /// Answers to the merchant's custom fields; always empty.
        #[schemars(with = "JsonObject")]
        custom_field_answers: Map<String, Value>,
        /// The invoice's hosted page, where the payer pays or declines it.
        url: String,
        /// When the invoice is due (UTC).
        #[serde(with = "crate::clock::wire_time")]
        #[schemars(with = "Timestamp")]
        scheduled_on: Timestamp,
    }
}

invoice_view! {
    /// InvoiceListItem: an invoice in a list.
    InvoiceListItem {
        /// The invoice's status.
        status: InvoiceStatus,
        /// How the invoice is collected: always `PAYMENTGATEWAY`.
        #[schemars(with = "Option<PaymentMethodEnum>")]
        payment_method: &'static str,
        /// The payment flows the invoice allows: always `ALL`.
        #[schemars(with = "Option<PaymentFlow>")]
        allowed_payment_flow: &'static str,
        /// The payment flow in use: always `ALL`.
        #[schemars(with = "Option<PaymentFlow>")]
        current_payment_flow: &'static str,
        /// The start of the period a recurring invoice bills; not set on invoices, always `null`.
        #[schemars(with = "Option<DateTime>")]
        period_start: Option<()>,
        /// The end of that period; always `null`.
        #[schemars(with = "Option<DateTime>")]
        period_end: Option<()>,
        /// The recurring interval; always `null`.
        #[schemars(with = "Option<RecurringInterval>")]
        recurring_interval: Option<()>,
        /// The number of intervals per period; always `null`.
        #[schemars(with = "Option<Integer>")]
        recurring_interval_count: Option<()>,
        /// `INSTALLMENTS` once the payer chose installments, else `ONE_OFF`.
        #[schemars(with = "InvoiceType")]
        r#type: &'static str,
        /// What is still owed: the sum of the unpaid payments (a decimal string).
        #[schemars(with = "Option<String>")]
        remaining_amount: Money,
        /// What the payer has paid and kept (refunds are taken back off).
        #[schemars(with = "String")]
        paid_amount: Money,
        /// The consumer the invoice bills; `null` only if the consumer is gone.
        organization_consumer: Option<OrganizationConsumer<'a>>,
        /// The subscription; not embedded in lists, always `null` (see `subscription_id`).
        #[schemars(with = "Option<InvoiceListSubscrptionDto>")]
        subscription: Option<()>,
        /// The invoice's payments by number, with `include_payments=true`; else `null`.
        payments: Option<Vec<PaymentDto<'a>>>,
        /// How many payments the invoice has.
        #[schemars(with = "Number")]
        total_number_of_payments: usize,
        /// When the latest payment was paid; `null` if none is.
        #[serde(with = "crate::clock::wire_time::option")]
        #[schemars(with = "Option<Timestamp>")]
        last_payment_paid_at: Option<Timestamp>,
        /// `remaining_amount` in the currency's smallest unit (halalas, cents).
        #[schemars(with = "Option<Number>")]
        remaining_amount_in_smallest_unit: i64,
        /// When the invoice is due (UTC).
        #[serde(with = "crate::clock::wire_time")]
        #[schemars(with = "Timestamp")]
        scheduled_on: Timestamp,
        /// The subscription the invoice bills, if any.
        subscription_id: Option<Uuid>,
        /// The invoice's hosted page, where the payer pays or declines it.
        url: String,
    }
}

fn invoice_type(i: &Invoice) -> &'static str {
    if i.installments.is_some() {
        "INSTALLMENTS"
    } else {
        "ONE_OFF"
    }
}

impl InvoiceDetail {
    /// InvoiceDetailed, borrowed from the detail: `branch` is the invoice's (the request's),
    /// `public_url` the base of the hosted page's address, `settings` the organization's (the
    /// products' prices show its VAT rate and default currency).
    pub fn detailed<'a>(&'a self, branch_name: &'a str, public_url: &str, settings: &OrgSettings) -> InvoiceDetailed<'a> {
        detailed(
            &self.invoice,
            &self.payments,
            self.consumer.as_ref(),
            &self.products,
            branch_name,
            public_url,
            settings,
        )
    }

    /// InvoiceListItem, borrowed from the detail; its payments only when asked for.
    pub fn list_item(&self, public_url: &str, include_payments: bool) -> InvoiceListItem<'_> {
        list_item(&self.invoice, &self.payments, self.consumer.as_ref(), public_url, include_payments)
    }
}

fn detailed<'a>(
    i: &'a Invoice,
    payments: &'a [Payment],
    consumer: Option<&'a Consumer>,
    products: &[crate::product::Product],
    branch_name: &'a str,
    public_url: &str,
    settings: &OrgSettings,
) -> InvoiceDetailed<'a> {
    InvoiceDetailed {
        created_at: i.created_at,
        updated_at: i.updated_at,
        id: i.id,
        payment_link_id: i.payment_link_id,
        user_id: i.user_id,
        organization_id: i.org_id,
        organization_consumer_id: i.consumer_id,
        account_id: None,
        branch_id: i.branch_id,
        org_invoice_number: i.org_invoice_number,
        description: i.description.as_deref(),
        total_amount: i.total_amount,
        original_amount: i.original_amount,
        item_level_discounted_amount: i.item_level_discounted_amount,
        total_vat_amount: i.total_vat_amount,
        total_price_excluding_vat: i.total_price_excluding_vat,
        coupon_calculation_metadata: coupon_calculation(&i.coupons),
        currency: i.currency,
        home_currency_amount: None,
        home_currency_amount_actual: None,
        exchange_rate_at_creation: None,
        consumer_message: None,
        status: i.status,
        payment_method: "PAYMENTGATEWAY",
        allowed_payment_flow: "ALL",
        current_payment_flow: "ALL",
        period_start: None,
        period_end: None,
        recurring_interval: None,
        recurring_interval_count: None,
        r#type: invoice_type(i),
        invoice_number: i.org_invoice_number,
        remaining_amount: i.remaining_amount(payments),
        paid_amount: i.paid_amount,
        exclude_coupons_if_installments: i.exclude_coupons_if_installments,
        organization_consumer: consumer.map(Consumer::organization_consumer),
        items: i
            .items
            .iter()
            .map(|it| {
                let product = products.iter().find(|p| p.id == it.product_id).map(|p| p.to_json(settings));
                it.dto(i.currency, product)
            })
            .collect(),
        branch: BranchDto {
            id: i.branch_id,
            name: branch_name,
        },
        payments: payments.iter().map(Payment::dto).collect(),
        subscription_id: i.subscription_id,
        subscription: None,
        payment_methods: (&i.payment_methods).into(),
        recurrence_pattern: None,
        parent_id: None,
        custom_field_answers: Map::new(),
        url: i.url(public_url),
        scheduled_on: i.scheduled_on,
    }
}

fn list_item<'a>(i: &'a Invoice, payments: &'a [Payment], consumer: Option<&'a Consumer>, public_url: &str, include_payments: bool) -> InvoiceListItem<'a> {
    let remaining = i.remaining_amount(payments);
    InvoiceListItem {
        created_at: i.created_at,
        updated_at: i.updated_at,
        id: i.id,
        payment_link_id: i.payment_link_id,
        user_id: i.user_id,
        organization_id: i.org_id,
        organization_consumer_id: i.consumer_id,
        account_id: None,
        branch_id: i.branch_id,
        org_invoice_number: i.org_invoice_number,
        description: i.description.as_deref(),
        total_amount: i.total_amount,
        original_amount: i.original_amount,
        item_level_discounted_amount: i.item_level_discounted_amount,
        total_vat_amount: i.total_vat_amount,
        total_price_excluding_vat: i.total_price_excluding_vat,
        coupon_calculation_metadata: coupon_calculation(&i.coupons),
        currency: i.currency,
        home_currency_amount: None,
        home_currency_amount_actual: None,
        exchange_rate_at_creation: None,
        consumer_message: None,
        status: i.status,
        payment_method: "PAYMENTGATEWAY",
        allowed_payment_flow: "ALL",
        current_payment_flow: "ALL",
        period_start: None,
        period_end: None,
        recurring_interval: None,
        recurring_interval_count: None,
        r#type: invoice_type(i),
        remaining_amount: remaining,
        paid_amount: i.paid_amount,
        organization_consumer: consumer.map(Consumer::organization_consumer),
        subscription: None,
        payments: include_payments.then(|| payments.iter().map(Payment::dto).collect()),
        total_number_of_payments: payments.len(),
        last_payment_paid_at: payments.iter().filter_map(|p| p.payed_at).max(),
        remaining_amount_in_smallest_unit: remaining.minor_units(),
        scheduled_on: i.scheduled_on,
        subscription_id: i.subscription_id,
        url: i.url(public_url),
    }
}

/// An invoice's views from its parts, for a caller that holds them apart (a subscription's
/// latest invoice). New code reads an [`InvoiceDetail`] and calls its views.
pub struct InvoiceView<'a> {
    pub invoice: &'a Invoice,
    pub payments: &'a [Payment],
    pub consumer: Option<&'a Consumer>,
    pub products: &'a [crate::product::Product],
    pub branch_name: &'a str,
    pub public_url: &'a str,
    pub settings: &'a OrgSettings,
}

impl InvoiceView<'_> {
    /// InvoiceDetailed, as a JSON value.
    pub fn detailed(&self) -> Value {
        let v = detailed(
            self.invoice,
            self.payments,
            self.consumer,
            self.products,
            self.branch_name,
            self.public_url,
            self.settings,
        );
        serde_json::to_value(v).expect("serializable")
    }

    /// InvoiceListItem, as a JSON value; `payments` only when asked for (`include_payments`).
    pub fn list_item(&self, include_payments: bool) -> Value {
        let v = list_item(self.invoice, self.payments, self.consumer, self.public_url, include_payments);
        serde_json::to_value(v).expect("serializable")
    }
}
