//! The request and response shapes of the API, named as the public API names them. Each is a
//! JSON Schema (derived); they are never built: requests are parsed by billing-core's readers
//! and responses written by its views, and the tests in `openapi::tests` hold the two together
//! (every field a reader reads is here and nothing else; every example parses; real responses
//! validate).
#![allow(dead_code)]

use super::types::*;
use schemars::JsonSchema;

/// app__common__dtos__shared__Consumer.
#[derive(JsonSchema)]
#[schemars(rename = "app__common__dtos__shared__Consumer")]
pub struct CommonDtosConsumer {
    pub id: Id,
    pub phone_number: Option<String>,
    pub email: Option<String>,
    pub preferred_language: Option<Language>,
}

/// app__common__dtos__shared__OrganizationConsumer.
#[derive(JsonSchema)]
#[schemars(rename = "app__common__dtos__shared__OrganizationConsumer")]
pub struct CommonDtosOrganizationConsumer {
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
    pub consumer: Option<CommonDtosConsumer>,
    pub is_deleted: Option<bool>,
    pub communication_methods: Option<Vec<ConsumerCommunicationMethod>>,
}

/// AutoChargeOnDemandResponse.
#[derive(JsonSchema)]
pub struct AutoChargeOnDemandResponse {
    pub payment_id: Id,
    pub invoice_id: Id,
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

/// BranchDto.
#[derive(JsonSchema)]
pub struct BranchDto {
    pub id: Id,
    pub name: String,
}

/// BranchItem.
#[derive(JsonSchema)]
pub struct BranchItem {
    pub id: Id,
    pub name: String,
    pub user_count: Option<Integer>,
    pub created_at: DateTime,
}

/// BranchListResponse.
#[derive(JsonSchema)]
pub struct BranchListResponse {
    pub data: Vec<BranchItem>,
}

/// CouponCreate.
#[derive(JsonSchema)]
pub struct CouponCreate {
    #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
    pub name: String,
    pub discount_value: Amount,
    pub currency: Option<CurrencyCode>,
    pub is_percentage: Option<bool>,
    pub is_active: Option<bool>,
}

/// CouponDetailed.
#[derive(JsonSchema)]
pub struct CouponDetailed {
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    pub id: Id,
    pub name: String,
    pub discount_value: String,
    pub currency: Option<CurrencyCode>,
    pub is_percentage: bool,
    pub is_active: bool,
    pub redemptions: Integer,
}

/// CouponDto.
#[derive(JsonSchema)]
pub struct CouponDto {
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    pub id: Id,
    pub name: String,
    pub discount_value: String,
    pub currency: Option<CurrencyCode>,
    pub is_percentage: bool,
    pub is_active: bool,
}

/// CouponUpdate.
#[derive(JsonSchema)]
pub struct CouponUpdate {
    #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
    pub name: Option<String>,
    pub discount_value: Option<Amount>,
    pub currency: Option<CurrencyCode>,
    pub is_percentage: Option<bool>,
    pub is_active: Option<bool>,
}

/// CreateBranchRequest.
#[derive(JsonSchema)]
pub struct CreateBranchRequest {
    #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
    pub name: String,
}

/// CreatePaymentLinkDto.
#[derive(JsonSchema)]
pub struct CreatePaymentLinkDto {
    #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
    pub name: String,
    #[schemars(length(max = 2000))]
    pub description: Option<String>,
    pub currency: Option<CurrencyCode>,
    pub items: Vec<CreatePaymentLinkItemDto>,
    pub coupons: Option<Vec<String>>,
    pub max_number_of_payments: Option<Integer>,
    pub valid_until: Option<DateTime>,
    pub confirmation_message: Option<String>,
    pub payment_methods: Option<PaymentMethodDto>,
    pub trial_period_days: Option<Integer>,
    pub custom_fields: Option<JsonObject>,
    pub success_redirect_url: Option<Url>,
    pub failure_redirect_url: Option<Url>,
    pub organization_consumer_id: Option<Id>,
    pub custom_metadata: Option<JsonObject>,
    pub contact_information_type: Option<ContactInformationType>,
}

/// CreatePaymentLinkItemDto.
#[derive(JsonSchema)]
pub struct CreatePaymentLinkItemDto {
    pub product_id: Id,
    pub quantity: Option<Integer>,
    pub coupons: Option<Vec<String>>,
    pub allow_custom_quantity: Option<bool>,
    pub min_quantity: Option<Integer>,
    pub max_quantity: Option<Integer>,
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

/// InvoiceCreate.
#[derive(JsonSchema)]
pub struct InvoiceCreate {
    pub notify_consumer: Option<bool>,
    #[schemars(length(max = 2000))]
    pub description: Option<String>,
    pub items: Vec<InvoiceItemCreateDto>,
    /// Default: the organization's payment methods.
    pub payment_methods: Option<InvoicePaymentMethodDto>,
    pub coupons: Option<Vec<String>>,
    pub organization_consumer_id: Id,
    /// Default: now.
    pub scheduled_on: Option<DateTime>,
    pub exclude_coupons_if_installments: Option<bool>,
    pub currency: Option<CurrencyCode>,
}

/// InvoiceDetailed.
#[derive(JsonSchema)]
pub struct InvoiceDetailed {
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
    pub status: InvoiceStatusEnum,
    pub payment_method: Option<PaymentMethodEnum>,
    pub allowed_payment_flow: Option<PaymentFlow>,
    pub current_payment_flow: Option<PaymentFlow>,
    pub period_start: Option<DateTime>,
    pub period_end: Option<DateTime>,
    pub recurring_interval: Option<RecurringInterval>,
    pub recurring_interval_count: Option<Integer>,
    pub r#type: InvoiceType,
    pub invoice_number: Integer,
    pub remaining_amount: String,
    pub paid_amount: String,
    pub exclude_coupons_if_installments: bool,
    pub organization_consumer: Option<CommonDtosOrganizationConsumer>,
    pub items: Vec<InvoiceItemDto>,
    pub branch: Option<BranchDto>,
    pub payments: Vec<PaymentDto>,
    pub subscription_id: Option<Id>,
    pub subscription: Option<SubscriptionDetailed>,
    pub payment_methods: Option<InvoicePaymentMethodDto>,
    pub recurrence_pattern: Option<RecurrencePattern>,
    pub parent_id: Option<Id>,
    pub custom_field_answers: JsonObject,
    pub url: String,
}

/// InvoiceInPlaceUpdate.
#[derive(JsonSchema)]
pub struct InvoiceInPlaceUpdate {
    pub scheduled_on: Option<DateTime>,
    #[schemars(length(max = 2000))]
    pub description: Option<String>,
}

/// InvoiceItemCreateDto.
#[derive(JsonSchema)]
pub struct InvoiceItemCreateDto {
    pub product_id: Id,
    pub quantity: Integer,
    pub coupons: Option<Vec<String>>,
}

/// InvoiceItemDto.
#[derive(JsonSchema)]
pub struct InvoiceItemDto {
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    pub id: Id,
    pub product_id: Id,
    pub product: Option<ProductDto>,
    pub quantity: Integer,
    pub original_amount: String,
    pub discounted_amount: String,
    pub coupon_calculation_metadata: Option<billing_core::pricing::CouponCalculation<'static>>,
    pub currency: Option<CurrencyCode>,
    pub unit_price: Option<String>,
    pub product_price_id: Option<Id>,
}

/// InvoiceListItem.
#[derive(JsonSchema)]
pub struct InvoiceListItem {
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
    pub status: InvoiceStatusEnum,
    pub payment_method: Option<PaymentMethodEnum>,
    pub allowed_payment_flow: Option<PaymentFlow>,
    pub current_payment_flow: Option<PaymentFlow>,
    pub period_start: Option<DateTime>,
    pub period_end: Option<DateTime>,
    pub recurring_interval: Option<RecurringInterval>,
    pub recurring_interval_count: Option<Integer>,
    pub r#type: InvoiceType,
    pub remaining_amount: Option<String>,
    pub paid_amount: String,
    pub organization_consumer: Option<CommonDtosOrganizationConsumer>,
    pub subscription: Option<InvoiceListSubscrptionDto>,
    pub payments: Option<Vec<PaymentDto>>,
    pub total_number_of_payments: Number,
    pub last_payment_paid_at: Option<DateTime>,
    pub remaining_amount_in_smallest_unit: Option<Number>,
}

/// InvoiceListSubscrptionDto.
#[derive(JsonSchema)]
pub struct InvoiceListSubscrptionDto {
    pub id: Id,
    pub recurring_interval: Option<SubscriptionRecurringInterval>,
    pub recurring_interval_count: Integer,
    pub status: Option<SubscriptionStatus>,
    pub current_period_start: DateTime,
    pub current_period_end: Option<DateTime>,
    pub cancel_at_period_end: bool,
}

/// InvoicePaymentMethodDto.
#[derive(JsonSchema)]
pub struct InvoicePaymentMethodDto {
    pub mada: Option<bool>,
    pub visa: Option<bool>,
    pub mastercard: Option<bool>,
    pub amex: Option<bool>,
    pub bank_transfer: Option<bool>,
    pub installment: Option<bool>,
    pub qurrah: Option<bool>,
}

/// ListResource_CouponDetailed_.
#[derive(JsonSchema)]
#[schemars(rename = "ListResource_CouponDetailed_")]
pub struct ListResourceCouponDetailed {
    pub data: Vec<CouponDetailed>,
    pub pagination: Pagination,
}

/// ListResource_InvoiceListItem_.
#[derive(JsonSchema)]
#[schemars(rename = "ListResource_InvoiceListItem_")]
pub struct ListResourceInvoiceListItem {
    pub data: Vec<InvoiceListItem>,
    pub pagination: Pagination,
}

/// ListResource_PaymentLinkDetailed_.
#[derive(JsonSchema)]
#[schemars(rename = "ListResource_PaymentLinkDetailed_")]
pub struct ListResourcePaymentLinkDetailed {
    pub data: Vec<PaymentLinkDetailed>,
    pub pagination: Pagination,
}

/// ListResource_PaymentResponse_.
#[derive(JsonSchema)]
#[schemars(rename = "ListResource_PaymentResponse_")]
pub struct ListResourcePaymentResponse {
    pub data: Vec<PaymentResponse>,
    pub pagination: Pagination,
}

/// ListResource_ProductDto_.
#[derive(JsonSchema)]
#[schemars(rename = "ListResource_ProductDto_")]
pub struct ListResourceProductDto {
    pub data: Vec<ProductDto>,
    pub pagination: Pagination,
}

/// MeOrganizationInfo.
#[derive(JsonSchema)]
pub struct MeOrganizationInfo {
    pub id: Id,
    pub name: String,
    pub name_en: Option<String>,
    pub sandbox: bool,
    pub created_at: DateTime,
    pub currency_config: Option<OrganizationCurrencyConfigDTO>,
}

/// MeResponse.
#[derive(JsonSchema)]
pub struct MeResponse {
    pub user: Option<MeUserInfo>,
    pub organization: Option<MeOrganizationInfo>,
}

/// MeUserInfo.
#[derive(JsonSchema)]
pub struct MeUserInfo {
    pub id: Id,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    pub en_first_name: Option<String>,
    pub en_last_name: Option<String>,
    pub created_at: DateTime,
}

/// MultiplePaymentsInTransactionErrorResponse.
#[derive(JsonSchema)]
pub struct MultiplePaymentsInTransactionErrorResponse {
    pub error: StreamError,
    pub payment_ids: Vec<String>,
    pub total_amount: String,
}

/// OrganizationCurrencyConfigDTO.
#[derive(JsonSchema)]
pub struct OrganizationCurrencyConfigDTO {
    pub home_currency: Option<CurrencyCode>,
    pub default_currency: Option<CurrencyCode>,
    pub enabled_currencies: Vec<CurrencyCode>,
}

/// OrganizationInviteCreate.
#[derive(JsonSchema)]
pub struct OrganizationInviteCreate {
    pub email: String,
    pub role: UserRolesEnum,
    pub branches: Vec<String>,
}

/// OrganizationInviteResponse.
#[derive(JsonSchema)]
pub struct OrganizationInviteResponse {
    pub id: Id,
    pub email: String,
    pub organization_id: Id,
    pub expire_at: DateTime,
    pub created_by: Id,
    pub role: Option<UserRolesEnum>,
    pub branches: Vec<String>,
}

/// PaymentDto.
#[derive(JsonSchema)]
pub struct PaymentDto {
    pub id: Id,
    pub amount: String,
    pub currency: Option<CurrencyCode>,
    pub scheduled_on: DateTime,
    pub invoice_payment_number: Number,
    pub r#type: PaymentTypeEnum,
    pub payment_method: Option<PaymentMethod>,
    pub current_status: Option<PaymentStatusEnum>,
    pub payed_at: Option<DateTime>,
    pub settled_at: Option<DateTime>,
    pub refunded_at: Option<DateTime>,
    pub pdf_link: Option<String>,
    pub paid_to_account_id: Option<Id>,
}

/// PaymentLinkDetailed.
#[derive(JsonSchema)]
pub struct PaymentLinkDetailed {
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    pub id: Id,
    pub name: String,
    pub description: Option<String>,
    pub amount: String,
    pub original_amount: String,
    pub item_level_discounted_amount: String,
    pub coupon_calculation_metadata: Option<billing_core::pricing::CouponCalculation<'static>>,
    pub currency: Option<CurrencyCode>,
    pub home_currency_amount: Option<String>,
    pub exchange_rate_at_creation: Option<String>,
    pub max_number_of_payments: Option<Integer>,
    pub valid_until: Option<DateTime>,
    pub confirmation_message: Option<String>,
    pub recurring_interval: Option<SubscriptionRecurringInterval>,
    pub recurring_interval_count: Option<Integer>,
    pub trial_period_days: Option<Integer>,
    pub status: PaymentLinkStatus,
    pub organization_id: Id,
    pub user_id: Id,
    pub organization_consumer_id: Option<Id>,
    pub deactivate_message: Option<String>,
    pub custom_fields: Option<JsonObject>,
    pub success_redirect_url: Option<String>,
    pub failure_redirect_url: Option<String>,
    pub custom_metadata: JsonObject,
    pub contact_information_type: Option<ContactInformationType>,
    pub items: Vec<PaymentLinkItemDto>,
    pub coupons: Vec<CouponDto>,
    pub override_payment_methods: Option<PaymentMethodDto>,
    pub url: String,
    pub amount_collected: String,
}

/// PaymentLinkItemDto.
#[derive(JsonSchema)]
pub struct PaymentLinkItemDto {
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    pub id: Id,
    pub product_id: Id,
    pub quantity: Integer,
    pub original_amount: String,
    pub discounted_amount: String,
    pub coupon_calculation_metadata: Option<billing_core::pricing::CouponCalculation<'static>>,
    pub product: Option<ProductDto>,
    pub allow_custom_quantity: bool,
    pub min_quantity: Option<Integer>,
    pub max_quantity: Option<Integer>,
    pub currency: Option<CurrencyCode>,
    pub product_price_id: Option<Id>,
}

/// PaymentMarkPaidRequest.
#[derive(JsonSchema)]
pub struct PaymentMarkPaidRequest {
    pub payment_method: PaymentMethod,
    pub note: Option<String>,
}

/// PaymentMethodDto.
#[derive(JsonSchema)]
pub struct PaymentMethodDto {
    pub mada: Option<bool>,
    pub visa: Option<bool>,
    pub mastercard: Option<bool>,
    pub amex: Option<bool>,
    pub bank_transfer: Option<bool>,
    pub installment: Option<bool>,
}

/// PaymentRefundRequest.
#[derive(JsonSchema)]
pub struct PaymentRefundRequest {
    pub refund_reason: PaymentRefundReason,
    pub refund_note: Option<String>,
    pub allow_refund_multiple_related_payments: Option<bool>,
}

/// PaymentResponse.
#[derive(JsonSchema)]
pub struct PaymentResponse {
    pub id: Id,
    pub amount: String,
    pub currency: Option<CurrencyCode>,
    pub scheduled_on: String,
    pub r#type: PaymentTypeEnum,
    pub payment_method: Option<PaymentMethod>,
    pub current_status: Option<PaymentStatusEnum>,
    pub payed_at: Option<DateTime>,
    pub refunded_at: Option<DateTime>,
    pub refund_reason: Option<PaymentRefundReason>,
    pub refund_note: Option<String>,
    pub latest_pgw_message: Option<String>,
}

/// ProductCreate.
#[derive(JsonSchema)]
pub struct ProductCreate {
    pub is_active: Option<bool>,
    pub external_metadata: Option<JsonObject>,
    #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
    pub name: String,
    #[schemars(length(max = 2000))]
    pub description: Option<String>,
    pub price: Option<Amount>,
    pub prices: Option<Vec<ProductPriceInlineCreate>>,
    pub is_one_time: Option<bool>,
    pub r#type: ProductType,
    pub recurring_interval: Option<RecurringInterval>,
    pub recurring_interval_count: Option<Integer>,
    pub is_price_exempt_from_vat: Option<bool>,
    pub is_price_inclusive_of_vat: Option<bool>,
}

/// ProductDto.
#[derive(JsonSchema)]
pub struct ProductDto {
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    pub id: Id,
    pub name: String,
    pub description: Option<String>,
    pub r#type: ProductType,
    pub recurring_interval: Option<RecurringInterval>,
    pub recurring_interval_count: Integer,
    /// The price in the default currency, `null` without one.
    pub price: Option<String>,
    pub currency: Option<CurrencyCode>,
    pub is_price_exempt_from_vat: bool,
    pub is_price_inclusive_of_vat: bool,
    pub price_excluding_vat: Option<String>,
    pub vat_amount: Option<String>,
    pub prices: Vec<ProductPriceInlineDto>,
    pub is_active: bool,
    pub is_one_time: bool,
    pub is_used_in_finalized_invoice: bool,
}

/// ProductPriceInlineCreate.
#[derive(JsonSchema)]
pub struct ProductPriceInlineCreate {
    pub currency: CurrencyCode,
    pub amount: Amount,
    pub is_price_inclusive_of_vat: Option<bool>,
    pub is_price_exempt_from_vat: Option<bool>,
}

/// ProductPriceInlineDto.
#[derive(JsonSchema)]
pub struct ProductPriceInlineDto {
    pub id: Id,
    pub currency: Option<CurrencyCode>,
    pub amount: String,
    pub is_active: bool,
    pub is_price_inclusive_of_vat: bool,
    pub is_price_exempt_from_vat: bool,
    pub price_excluding_vat: String,
    pub vat_amount: String,
}

/// ProductUpdate.
#[derive(JsonSchema)]
pub struct ProductUpdate {
    /// The older spelling of `type` (true: ONE_OFF).
    pub is_one_time: Option<bool>,
    pub external_metadata: Option<JsonObject>,
    #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
    pub name: Option<String>,
    #[schemars(length(max = 2000))]
    pub description: Option<String>,
    pub price: Option<Amount>,
    pub prices: Option<Vec<ProductPriceInlineCreate>>,
    pub is_active: Option<bool>,
    pub r#type: Option<ProductType>,
    pub recurring_interval: Option<RecurringInterval>,
    pub recurring_interval_count: Option<Integer>,
    pub is_price_exempt_from_vat: Option<bool>,
    pub is_price_inclusive_of_vat: Option<bool>,
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

/// UpdateBranchRequest.
#[derive(JsonSchema)]
pub struct UpdateBranchRequest {
    #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
    pub name: String,
}

/// UpdatePaymentLinkCouponItemDto.
#[derive(JsonSchema)]
pub struct UpdatePaymentLinkCouponItemDto {
    pub payment_link_item_id: Id,
    pub coupons: Option<Vec<String>>,
}

/// UpdatePaymentLinkCouponsDto.
#[derive(JsonSchema)]
pub struct UpdatePaymentLinkCouponsDto {
    pub coupons: Option<Vec<String>>,
    pub items: Option<Vec<UpdatePaymentLinkCouponItemDto>>,
}

/// UpdatePaymentLinkStatusDto.
#[derive(JsonSchema)]
pub struct UpdatePaymentLinkStatusDto {
    pub status: PaymentLinkStatus,
    pub deactivate_message: Option<String>,
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

literal_enum! {
    InvoiceType = ["ONE_OFF", "ONE_OFF_FUTURE", "RECURRING", "INSTALLMENTS", "PRORATION"];
    PaymentFlow = ["ALL", "AUTO", "MANUAL"];
    PaymentMethodEnum = ["OPENBANKING", "PAYMENTGATEWAY"];
    RecurrencePattern = ["Hour", "Day", "Week", "Fortnight", "Month", "Quarter", "Half-Year", "Year"];
    SubscriptionRecurringInterval = ["WEEK", "MONTH", "QUARTER", "YEAR"];
}

// Shapes of the endpoints beyond the public API's named schemas (product prices, keys, webhooks,
// notifications, settings, the sandbox clock, accepting an invitation).

/// ProductPriceCreate.
#[derive(JsonSchema)]
pub struct ProductPriceCreate {
    pub currency: CurrencyCode,
    pub amount: Amount,
    /// Default true.
    pub is_price_inclusive_of_vat: Option<bool>,
    /// Default false; both flags set is a 422.
    pub is_price_exempt_from_vat: Option<bool>,
}

/// ProductPriceUpdate.
#[derive(JsonSchema)]
pub struct ProductPriceUpdate {
    pub amount: Option<Amount>,
    pub is_price_inclusive_of_vat: Option<bool>,
    pub is_price_exempt_from_vat: Option<bool>,
}

/// ApiKeyCreate: a key with `branch_ids` acts as a branch admin of those branches,
/// `is_all_branches: true` as an organization admin.
#[derive(JsonSchema)]
pub struct ApiKeyCreate {
    pub name: Option<String>,
    pub branch_ids: Option<Vec<Id>>,
    pub default_branch_id: Option<Id>,
    pub is_all_branches: Option<bool>,
}

/// ApiKey (never its secret).
#[derive(JsonSchema)]
pub struct ApiKey {
    pub id: Id,
    pub name: Option<String>,
    /// The public half of the key (`ak_…`).
    pub api_key: String,
    pub branch_ids: Vec<Id>,
    pub default_branch_id: Option<Id>,
    pub is_all_branches: bool,
    pub created_at: DateTime,
    pub revoked_at: Option<DateTime>,
}

/// ApiKeyCreated: the key with its secret, shown this once (`null` on an idempotent replay).
#[derive(JsonSchema)]
pub struct ApiKeyCreated {
    #[serde(flatten)]
    pub key: Option<ApiKey>,
    pub api_secret: Option<String>,
    /// The `x-api-key` header value: base64 of `api_key:api_secret`.
    pub x_api_key: Option<String>,
}

/// ApiKeyList.
#[derive(JsonSchema)]
pub struct ApiKeyList {
    pub data: Vec<ApiKey>,
}

/// WebhookCreate: `event_types` is a list of event types, or `"all"`.
#[derive(JsonSchema)]
pub struct WebhookCreate {
    pub url: Url,
    pub event_types: Option<WebhookEventTypes>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
}

/// WebhookUpdate: the given fields change.
#[derive(JsonSchema)]
pub struct WebhookUpdate {
    pub url: Option<Url>,
    pub event_types: Option<WebhookEventTypes>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
}

/// Event types of an endpoint: a non-empty list, or `"all"`.
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum WebhookEventTypes {
    List(Vec<WebhookEventType>),
    All(AllEvents),
}

/// `"all"`.
#[derive(JsonSchema)]
pub enum AllEvents {
    #[serde(rename = "all")]
    All,
}

/// Webhook: an endpoint (`secret_key` on create and rotation only).
#[derive(JsonSchema)]
pub struct Webhook {
    pub id: Id,
    pub url: String,
    pub event_types: Vec<WebhookEventType>,
    pub all_event_types: bool,
    pub description: Option<String>,
    pub enabled: bool,
    pub branch_id: Id,
    pub created_at: DateTime,
    pub updated_at: Option<DateTime>,
    /// The HMAC key of the signatures (create and rotate-secret only).
    pub secret_key: Option<String>,
}

/// ListResource_Webhook_.
#[derive(JsonSchema)]
#[schemars(rename = "ListResource_Webhook_")]
pub struct ListResourceWebhook {
    pub data: Vec<Webhook>,
    pub pagination: Pagination,
}

/// WebhookDelivery: one event sent to one endpoint, with its attempts.
#[derive(JsonSchema)]
pub struct WebhookDelivery {
    pub id: Id,
    pub endpoint_id: Id,
    pub event_id: Id,
    pub event_type: WebhookEventType,
    pub event: Option<JsonObject>,
    pub status: WebhookDeliveryStatus,
    pub attempt_count: Integer,
    pub next_attempt_at: Option<DateTime>,
    pub attempts: Vec<JsonObject>,
    pub created_at: DateTime,
    pub updated_at: DateTime,
}

/// ListResource_WebhookDelivery_.
#[derive(JsonSchema)]
#[schemars(rename = "ListResource_WebhookDelivery_")]
pub struct ListResourceWebhookDelivery {
    pub data: Vec<WebhookDelivery>,
    pub pagination: Pagination,
}

/// NotificationView: a customer notification, its status and attempts.
#[derive(JsonSchema)]
pub struct NotificationView {
    pub id: Id,
    pub kind: NotificationKind,
    pub channel: NotificationChannel,
    pub recipient: String,
    pub language: Option<Language>,
    pub status: NotificationStatus,
    pub subject: Option<String>,
    pub consumer_id: Option<Id>,
    pub branch_id: Option<Id>,
    pub data: JsonObject,
    pub attempt_count: Integer,
    pub attempts: Vec<JsonObject>,
    pub next_attempt_at: Option<DateTime>,
    pub sent_at: Option<DateTime>,
    pub created_at: DateTime,
    pub updated_at: DateTime,
}

/// ListResource_NotificationView_.
#[derive(JsonSchema)]
#[schemars(rename = "ListResource_NotificationView_")]
pub struct ListResourceNotificationView {
    pub data: Vec<NotificationView>,
    pub pagination: Pagination,
}

/// OrganizationSettingsUpdate: only the given fields change.
#[derive(JsonSchema)]
pub struct OrganizationSettingsUpdate {
    pub default_currency: Option<CurrencyCode>,
    pub enabled_currencies: Option<Vec<CurrencyCode>>,
    /// A percentage (`15`) or a fraction below 1 (`0.15`).
    pub vat_rate: Option<Amount>,
    /// `{card, wallet, bank_transfer, installment}` switches.
    pub default_payment_methods: Option<JsonObject>,
    /// Per-kind switches and `installment_reminder_days`.
    pub notifications: Option<JsonObject>,
    /// `{event_types}` given to new webhook endpoints.
    pub webhook_defaults: Option<JsonObject>,
    /// Days before a period end that the next invoice is prepared.
    pub subscription_invoice_lead_days: Option<Integer>,
    /// Days between a failed renewal charge's retries.
    pub subscription_renewal_retry_days: Option<Integer>,
}

/// OrganizationSettings.
#[derive(JsonSchema)]
pub struct OrganizationSettings {
    pub organization_id: Id,
    pub home_currency: Option<CurrencyCode>,
    pub default_currency: Option<CurrencyCode>,
    pub enabled_currencies: Vec<CurrencyCode>,
    pub vat_rate: String,
    pub default_payment_methods: JsonObject,
    pub auto_charge_on_demand: bool,
    pub installment_minimums: JsonObject,
    pub installment_split_months: Integer,
    pub consumer_notifications: bool,
    pub notifications: JsonObject,
    pub webhook_defaults: JsonObject,
}

/// SandboxClock: the sandbox organization's test-clock time.
#[derive(JsonSchema)]
pub struct SandboxClock {
    pub now: DateTime,
    pub organization_id: Id,
}

/// SandboxClockAdvance: exactly one of `seconds` (≥ 0) or `to` (a date-time, never backwards).
#[derive(JsonSchema)]
#[schemars(extend("x-exactly-one-of" = ["seconds", "to"]))]
pub struct SandboxClockAdvance {
    pub seconds: Option<Integer>,
    pub to: Option<DateTime>,
}

/// InviteAccept: the token of the invitation e-mail and the new user's name.
#[derive(JsonSchema)]
pub struct InviteAccept {
    pub token: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
}

/// InviteAccepted: the new user and a bearer token.
#[derive(JsonSchema)]
pub struct InviteAccepted {
    pub user: JsonObject,
    pub role: Option<UserRolesEnum>,
    pub branches: Vec<Id>,
    pub organization: JsonObject,
    pub access_token: String,
    pub token_type: String,
    pub expires_at: DateTime,
}

/// An empty object (`{}`): the spec's "empty success body".
#[derive(JsonSchema)]
pub struct Empty {}

pub type Branch = billing_core::consumer::BranchSummary<'static>;
pub type AddressResponse = billing_core::consumer::Address;
pub type AddressCreate = billing_core::consumer::wire::request::AddressCreate;
pub type ConsumerV2Consumer = billing_core::consumer::ConsumerIdentity<'static>;
pub type LastInvoiceActivity = billing_core::consumer::view::LastInvoiceActivity;
pub type Pagination = billing_core::list::Pagination;
pub type SubscriptionDetailed = billing_core::subscription::view::SubscriptionDetailed<'static>;
