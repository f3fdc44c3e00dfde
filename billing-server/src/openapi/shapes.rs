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

/// MultiplePaymentsInTransactionErrorResponse.
#[derive(JsonSchema)]
pub struct MultiplePaymentsInTransactionErrorResponse {
    pub error: StreamError,
    pub payment_ids: Vec<String>,
    pub total_amount: String,
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

pub type SubscriptionDetailed = billing_core::subscription::view::SubscriptionDetailed<'static>;
