//! The query parameters of each list, as JSON Schema objects whose properties become the
//! operation's parameters (and a list tool's input). `openapi::tests` checks that each list's
//! reader in billing-core reads exactly these names.
#![allow(dead_code)]

use super::types::*;
use billing_core as core;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

/// A `sort_field` enum from a billing-core sort enum.
macro_rules! sort_enum {
    ($($name:ident = $core:ty;)*) => {$(
        pub struct $name;
        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                let values: Vec<&str> = <$core>::ALL.iter().map(|v| v.as_str()).collect();
                json_schema!({"type": "string", "enum": values, "default": "created_at"})
            }
        }
    )*};
}

sort_enum! {
    ConsumerSortField = core::consumer::ConsumerSort;
    ProductSortField = core::product::ProductSort;
    CouponSortField = core::coupon::CouponSort;
    InvoiceSortField = core::invoice::InvoiceSort;
    PaymentSortField = core::payment::PaymentSort;
    PaymentLinkSortField = core::payment_link::PaymentLinkSort;
    NotificationSortField = core::notification::NotificationSort;
}

/// `asc` or `desc` (default `desc`).
pub struct SortDirection;
impl JsonSchema for SortDirection {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "SortDirection".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "enum": ["asc", "desc"], "default": "desc"})
    }
}

/// A page number or size: a whole number from 1.
pub struct PageNumber;
impl JsonSchema for PageNumber {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "PageNumber".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1, "maximum": 4294967295u64})
    }
}

/// `limit`: 1 to 100 (more is capped at 100).
pub struct PageSize;
impl JsonSchema for PageSize {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "PageSize".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1, "maximum": 100, "default": 10})
    }
}

/// The common list parameters, with the resource's sort fields.
macro_rules! list_query {
    ($($(#[$m:meta])* $name:ident ($sort:ty) { $($(#[$fm:meta])* $field:ident: $ty:ty,)* })*) => {$(
        $(#[$m])*
        #[derive(JsonSchema)]
        pub struct $name {
            /// Page number (from 1).
            pub page: Option<PageNumber>,
            /// Page size (1 to 100, default 10).
            pub limit: Option<PageSize>,
            /// The page size under the name some SDKs send (`limit` wins).
            pub size: Option<PageSize>,
            pub sort_field: Option<$sort>,
            pub sort_direction: Option<SortDirection>,
            /// Case-insensitive partial match on the resource's text fields.
            pub search_term: Option<String>,
            $($(#[$fm])* pub $field: Option<$ty>,)*
        }
    )*};
}

list_query! {
    /// Products. Also `external_metadata.<key>=<value>`.
    ProductListQuery(ProductSortField) {
        /// true: active only; false: inactive only.
        active: bool,
        r#type: ProductType,
        /// Only products with an active price in this currency (3 letters).
        currency: String,
    }
    CouponListQuery(CouponSortField) {
        active: bool,
        is_percentage: bool,
    }
    InvoiceListQuery(InvoiceSortField) {
        include_payments: bool,
        /// Repeated or comma-separated.
        statuses: Vec<InvoiceStatusEnum>,
        /// Invoices having payments in these statuses.
        payment_statuses: Vec<PaymentStatusEnum>,
        /// Comma-separated currency codes.
        currencies: Vec<CurrencyCode>,
        /// Only invoices with a SUCCEEDED card or wallet payment.
        payments_not_settled: bool,
        payment_link_id: Id,
        from_date: DateTime,
        to_date: DateTime,
        due_date_from: DateTime,
        due_date_to: DateTime,
        from_price: Amount,
        to_price: Amount,
        organization_consumer_id: Id,
        subscription_id: Id,
    }
    PaymentListQuery(PaymentSortField) {
        statuses: Vec<PaymentStatusEnum>,
        /// Repeated.
        invoice_id: Vec<Id>,
        from_date: DateTime,
        to_date: DateTime,
    }
    PaymentLinkListQuery(PaymentLinkSortField) {
        statuses: Vec<PaymentLinkStatus>,
        from_date: DateTime,
        to_date: DateTime,
        from_price: Amount,
        to_price: Amount,
        product_ids: Vec<Id>,
        organization_consumer_id: Id,
    }
    NotificationListQuery(NotificationSortField) {
        statuses: Vec<NotificationStatus>,
        status: Vec<NotificationStatus>,
        channels: Vec<NotificationChannel>,
        channel: Vec<NotificationChannel>,
        kinds: Vec<NotificationKind>,
        kind: Vec<NotificationKind>,
        consumer_id: Id,
        created_from: DateTime,
        created_to: DateTime,
    }
}

/// A webhook's delivery log.
#[derive(JsonSchema)]
pub struct DeliveryListQuery {
    pub page: Option<PageNumber>,
    pub limit: Option<PageSize>,
    pub size: Option<PageSize>,
    pub status: Option<WebhookDeliveryStatus>,
    pub event_type: Option<WebhookEventType>,
    pub created_from: Option<DateTime>,
    pub created_to: Option<DateTime>,
}

/// A page of a list without filters.
#[derive(JsonSchema)]
pub struct PageQuery {
    pub page: Option<PageNumber>,
    pub limit: Option<PageSize>,
    pub size: Option<PageSize>,
}
