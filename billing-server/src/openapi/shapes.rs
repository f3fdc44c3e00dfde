//! The request and response shapes of the API, named as the public API names them. Each is a
//! JSON Schema (derived); they are never built: requests are parsed by billing-core's readers
//! and responses written by its views, and the tests in `openapi::tests` hold the two together
//! (every field a reader reads is here and nothing else; every example parses; real responses
//! validate).
#![allow(dead_code)]

use super::types::*;
use schemars::JsonSchema;

/// The model's own types that shapes still written here embed.
pub use billing_core::payment::PaymentMethodDto;

/// app__subscription__v2__dtos__OrganizationConsumer.
#[derive(JsonSchema)]
#[schemars(rename = "app__subscription__v2__dtos__OrganizationConsumer")]
pub struct SubscriptionV2OrganizationConsumer {
    pub id: Id,
    pub name: String,
    pub alias: Option<String>,
    pub email: Option<String>,
    pub phone_number: Option<String>,
    pub preferred_language: Option<Language>,
    pub consumer_type: Option<OrganizationConsumerType>,
    pub address: Option<AddressResponse>,
    pub vat_number: Option<String>,
    pub commercial_registration: Option<String>,
}

/// BaseConsumerResponse.
#[derive(JsonSchema)]
pub struct BaseConsumerResponse {
    pub id: Id,
    pub name: String,
    pub phone_number: Option<String>,
    pub email: Option<String>,
    pub external_id: Option<String>,
    pub consumer: Option<ConsumerV2Consumer>,
    pub iban: Option<String>,
    pub is_deleted: bool,
    pub alias: Option<String>,
    pub created_at: DateTime,
    pub branch: Option<Branch>,
    pub comment: Option<String>,
    pub communication_methods: Vec<ConsumerCommunicationMethod>,
    pub preferred_language: Option<Language>,
    pub consumer_type: Option<OrganizationConsumerType>,
    pub address: Option<AddressResponse>,
    pub vat_number: Option<String>,
    pub commercial_registration: Option<String>,
}

/// FreezeSubscriptionBase.
#[derive(JsonSchema)]
pub struct FreezeSubscriptionBase {
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    pub id: Id,
    pub freeze_start_datetime: DateTime,
    pub freeze_end_datetime: Option<DateTime>,
    pub notes: Option<String>,
    pub subscription_id: Id,
    pub invoice_id: Id,
    pub duration: Option<Integer>,
}

/// FreezeSubscriptionCreateRequest.
#[derive(JsonSchema)]
pub struct FreezeSubscriptionCreateRequest {
    pub freeze_start_datetime: DateTime,
    pub freeze_end_datetime: Option<DateTime>,
    pub notes: Option<String>,
}

/// FreezeSubscriptionUpdateRequest.
#[derive(JsonSchema)]
pub struct FreezeSubscriptionUpdateRequest {
    pub freeze_start_datetime: DateTime,
    /// `null`: open-ended.
    pub freeze_end_datetime: NullableDateTime,
    pub notes: Option<String>,
}

/// HTTPValidationError.
#[derive(JsonSchema)]
pub struct HTTPValidationError {
    pub detail: Vec<ValidationError>,
}

/// InvoiceBase.
#[derive(JsonSchema)]
pub struct InvoiceBase {
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    pub id: Id,
    pub payment_link_id: Option<Id>,
    pub user_id: Id,
    pub organization_id: Id,
    pub organization_consumer_id: Id,
    pub account_id: Option<Id>,
    pub branch_id: Id,
    pub org_invoice_number: Integer,
    pub description: Option<String>,
    pub total_amount: String,
    pub original_amount: String,
    pub item_level_discounted_amount: String,
    pub total_vat_amount: Option<String>,
    pub total_price_excluding_vat: Option<String>,
    pub coupon_calculation_metadata: Option<billing_core::pricing::CouponCalculation<'static>>,
    pub currency: Option<CurrencyCode>,
    pub home_currency_amount: Option<String>,
    pub home_currency_amount_actual: Option<String>,
    pub exchange_rate_at_creation: Option<String>,
    pub consumer_message: Option<String>,
    pub status: Option<InvoiceStatusEnum>,
    pub payment_method: Option<PaymentMethodEnum>,
    pub allowed_payment_flow: Option<PaymentFlow>,
    pub current_payment_flow: Option<PaymentFlow>,
    pub period_start: Option<DateTime>,
    pub period_end: Option<DateTime>,
    pub recurring_interval: Option<RecurringInterval>,
    pub recurring_interval_count: Option<Integer>,
    pub r#type: InvoiceType,
}

/// ListResource_FreezeSubscriptionBase_.
#[derive(JsonSchema)]
#[schemars(rename = "ListResource_FreezeSubscriptionBase_")]
pub struct ListResourceFreezeSubscriptionBase {
    pub data: Vec<FreezeSubscriptionBase>,
    pub pagination: Pagination,
}

/// ListResource_SubscriptionDetailed_.
#[derive(JsonSchema)]
#[schemars(rename = "ListResource_SubscriptionDetailed_")]
pub struct ListResourceSubscriptionDetailed {
    pub data: Vec<SubscriptionDetailed>,
    pub pagination: Pagination,
}

/// MultiplePaymentsInTransactionErrorResponse.
#[derive(JsonSchema)]
pub struct MultiplePaymentsInTransactionErrorResponse {
    pub error: StreamError,
    pub payment_ids: Vec<String>,
    pub total_amount: String,
}

/// NextInvoicePreview.
#[derive(JsonSchema)]
pub struct NextInvoicePreview {
    pub period_start: DateTime,
    pub period_end: DateTime,
    pub issue_at: DateTime,
    pub due_at: DateTime,
    pub subtotal: String,
    pub discount_total: String,
    pub total_amount: String,
    pub currency: Option<CurrencyCode>,
}

/// PendingPlanChange.
#[derive(JsonSchema)]
pub struct PendingPlanChange {
    pub id: Id,
    pub effective_at: DateTime,
    pub invoice_was_reissued: bool,
    pub target_items: Vec<PendingPlanChangeItemPreview>,
    pub target_subscription_coupon_ids: Vec<String>,
    pub target_recurring_interval: Option<SubscriptionRecurringInterval>,
    pub target_recurring_interval_count: Number,
    pub target_amount: String,
    pub currency: Option<CurrencyCode>,
    pub current_amount: String,
    pub delta_amount: String,
    pub delta_amount_per_month: Option<String>,
    pub changes: Vec<PendingPlanChangeDiffEntry>,
    pub next_invoice_preview: Option<NextInvoicePreview>,
}

/// PendingPlanChangeDiffEntry.
#[derive(JsonSchema)]
pub struct PendingPlanChangeDiffEntry {
    pub kind: Option<PendingPlanChangeDiffKind>,
    pub label: String,
    pub product_id: Option<Id>,
    pub from_value: Option<String>,
    pub to_value: Option<String>,
}

/// PendingPlanChangeItemPreview.
#[derive(JsonSchema)]
pub struct PendingPlanChangeItemPreview {
    pub product_id: Id,
    pub product_name: String,
    pub quantity: Integer,
    pub original_amount: String,
    pub discounted_amount: String,
}

/// ServiceBaseResponse: the envelope of every handled error.
#[derive(JsonSchema)]
pub struct ServiceBaseResponse {
    pub error: StreamError,
}

/// StreamError.
#[derive(JsonSchema)]
pub struct StreamError {
    /// A stable code (`NOT_FOUND`, `DUPLICATE_CONSUMER`, `INVALID_STATUS`, …).
    pub code: String,
    pub message: String,
    pub additional_info: Option<String>,
}

/// SubscriptionCancel.
#[derive(JsonSchema)]
pub struct SubscriptionCancel {
    pub cancel_related_invoices: Option<bool>,
}

/// SubscriptionCreate.
#[derive(JsonSchema)]
pub struct SubscriptionCreate {
    pub notify_consumer: Option<bool>,
    #[schemars(length(max = 2000))]
    pub description: Option<String>,
    pub items: Vec<SubscriptionItemCreateDto>,
    pub coupons: Option<Vec<String>>,
    pub organization_consumer_id: Id,
    pub period_start: DateTime,
    pub until_cycle_number: Option<Integer>,
    pub override_payment_methods: Option<SubscriptionPaymentMethodDto>,
    pub exclude_coupons_if_installments: Option<bool>,
    pub currency: Option<CurrencyCode>,
    pub trial: Option<bool>,
}

/// SubscriptionDetailed.
#[derive(JsonSchema)]
pub struct SubscriptionDetailed {
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    pub id: Id,
    pub description: Option<String>,
    pub amount: String,
    pub original_amount: String,
    pub item_level_discounted_amount: String,
    pub coupon_calculation_metadata: Option<billing_core::pricing::CouponCalculation<'static>>,
    pub remaining_days: Number,
    pub currency: Option<CurrencyCode>,
    pub home_currency_amount: Option<String>,
    pub exchange_rate_at_creation: Option<String>,
    pub recurring_interval: Option<SubscriptionRecurringInterval>,
    pub recurring_interval_count: Integer,
    pub status: SubscriptionStatus,
    pub current_period_start: DateTime,
    pub current_period_end: DateTime,
    pub current_cycle_number: Integer,
    pub cancel_at_period_end: bool,
    pub cancel_at_cycle_number: Option<Number>,
    pub started_at: Option<DateTime>,
    pub ended_at: Option<DateTime>,
    pub user_id: Id,
    pub organization_consumer_id: Id,
    pub latest_invoice_id: Option<Id>,
    pub trial_period_days: Option<Integer>,
    pub trial_end: Option<DateTime>,
    pub organization_consumer: Option<SubscriptionV2OrganizationConsumer>,
    pub items: Option<Vec<SubscriptionItemDto>>,
    pub latest_invoice: Option<InvoiceBase>,
    pub latest_freeze: Option<FreezeSubscriptionBase>,
    pub override_payment_methods: Option<SubscriptionPaymentMethodDto>,
    pub pending_change: Option<PendingPlanChange>,
}

/// SubscriptionItemCreateDto.
#[derive(JsonSchema)]
pub struct SubscriptionItemCreateDto {
    pub product_id: Id,
    pub quantity: Integer,
    pub coupons: Option<Vec<String>>,
}

/// SubscriptionItemDto.
#[derive(JsonSchema)]
pub struct SubscriptionItemDto {
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    pub id: Id,
    pub product_id: Id,
    pub subscription_id: Id,
    pub quantity: Integer,
    pub original_amount: String,
    pub discounted_amount: String,
    pub coupon_calculation_metadata: Option<billing_core::pricing::CouponCalculation<'static>>,
    pub product: Option<ProductDto>,
}

/// SubscriptionPaymentMethodDto.
#[derive(JsonSchema)]
pub struct SubscriptionPaymentMethodDto {
    pub visa: Option<bool>,
    pub mastercard: Option<bool>,
    pub amex: Option<bool>,
    pub bank_transfer: Option<bool>,
    pub installment: Option<bool>,
    pub qurrah: Option<bool>,
    pub subscription_auto_renewal: Option<bool>,
}

/// SubscriptionUpdate.
#[derive(JsonSchema)]
pub struct SubscriptionUpdate {
    #[schemars(length(max = 2000))]
    pub description: Option<String>,
    /// The items from the next period (a change is a plan change at the period end).
    pub items: Vec<SubscriptionItemCreateDto>,
    /// The coupons from the next period.
    pub coupons: Vec<String>,
    pub until_cycle_number: Option<Integer>,
    pub override_payment_methods: Option<SubscriptionPaymentMethodDto>,
    pub recurring_interval: Option<SubscriptionRecurringInterval>,
    pub recurring_interval_count: Option<Integer>,
    pub exclude_coupons_if_installments: Option<bool>,
    /// Must be the subscription's own (a subscription keeps its consumer: cancel and create another).
    pub organization_consumer_id: Option<Id>,
    /// Must be the subscription's own currency.
    pub currency: Option<CurrencyCode>,
}

/// ValidationError.
#[derive(JsonSchema)]
pub struct ValidationError {
    /// Where: `["body", "phone_number"]`, `["query", "limit"]`, `["path", "consumer_id"]`.
    pub loc: Vec<LocPart>,
    pub msg: String,
    /// The kind: `missing`, `value_error`, `string_type`, …
    pub r#type: String,
}

/// One step of a `loc`: a field name or an array index.
pub struct LocPart;
impl JsonSchema for LocPart {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LocPart".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    }
}

// Shapes of the endpoints beyond the public API's named schemas (product prices, keys, webhooks,
// notifications, settings, the sandbox clock, accepting an invitation).

/// An empty object (`{}`): the spec's "empty success body".
#[derive(JsonSchema)]
pub struct Empty {}

pub type Branch = billing_core::consumer::BranchSummary<'static>;
pub type AddressResponse = billing_core::consumer::Address;
pub type AddressCreate = billing_core::consumer::wire::request::AddressCreate;
pub type ConsumerV2Consumer = billing_core::consumer::ConsumerIdentity<'static>;
pub type LastInvoiceActivity = billing_core::consumer::view::LastInvoiceActivity;
pub type Pagination = billing_core::list::Pagination;
pub type CouponDto = billing_core::coupon::CouponView<'static>;
pub type ProductDto = billing_core::product::ProductView<'static>;
