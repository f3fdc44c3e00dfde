//! The wire's kinds as JSON Schema, for `/openapi.json` and the MCP tools: the model's own types
//! (ids, money, currencies, languages and every closed set of values, under the names the public
//! API gives them) and marker types for what only a request's documentation names (an amount
//! as sent, a language in any case, a page number).
//!
//! Views and requests derive `JsonSchema`; their doc comments are the fields' descriptions.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

/// A scalar written inline wherever it is used (no component of its own).
macro_rules! inline_scalar {
    ($($(#[$m:meta])* $name:ident => $schema:tt;)*) => {$(
        $(#[$m])*
        pub struct $name;
        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    )*};
}

/// A decimal written as a JSON string: what money looks like in responses.
pub const DECIMAL_PATTERN: &str = "^-?[0-9]+(\\.[0-9]+)?$";

inline_scalar! {
    /// A UUID (every id).
    Id => {"type": "string", "format": "uuid"};
    /// An RFC 3339 date-time (responses: UTC with microseconds).
    DateTime => {"type": "string", "format": "date-time"};
    /// A date-time or `null`, to be sent either way.
    NullableDateTime => {"type": ["string", "null"], "format": "date-time"};
    /// A calendar date.
    Date => {"type": "string", "format": "date"};
    /// An absolute URL.
    Url => {"type": "string", "format": "uri"};
    /// A JSON number that is not money (counts, rates).
    Number => {"type": "number"};
    /// A whole number.
    Integer => {"type": "integer"};
    /// Money in a response: a decimal string with the currency's minor digits (`"115.00"`).
    Decimal => {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?$", "examples": ["115.00"]};
    /// Money in a request: a number or a numeric string (`99`, `"99.50"`).
    Amount => {"anyOf": [{"type": "number"}, {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?$"}], "examples": ["99.50"]};
    /// A free JSON object (metadata).
    JsonObject => {"type": "object"};
    /// Any JSON value.
    Any => true;
    /// A text.
    Text => {"type": "string"};
    /// A language code: any case in requests (`AR`, `en`).
    LanguageInput => {"type": "string", "pattern": "^([aA][rR]|[eE][nN])$", "examples": ["ar", "EN"]};
}

/// A scalar model type written inline, as `$marker` is.
macro_rules! inline_as {
    ($($ty:ty => $marker:ty;)*) => {$(
        impl JsonSchema for $ty {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                <$marker>::schema_name()
            }
            fn json_schema(g: &mut SchemaGenerator) -> Schema {
                <$marker>::json_schema(g)
            }
        }
    )*};
}

inline_as! {
    crate::money::Money => Decimal;
    crate::fields::Email => Text;
    crate::fields::PhoneNumber => Text;
    crate::fields::Iban => Text;
}

/// An enum schema whose values are a model `wire_enum!`'s, under its public name.
macro_rules! public_enum {
    ($($ty:ty => $name:literal;)*) => {$(
        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                let values: Vec<&str> = <$ty>::ALL.iter().map(|v| v.as_str()).collect();
                json_schema!({"type": "string", "enum": values})
            }
        }
    )*};
}

public_enum! {
    crate::consumer::CommunicationMethod => "ConsumerCommunicationMethod";
    crate::consumer::ConsumerType => "OrganizationConsumerType";
    crate::payment_link::ContactInformationType => "ContactInformationType";
    crate::payment_link::PaymentLinkStatus => "PaymentLinkStatus";
    crate::invoice::InvoiceStatus => "InvoiceStatusEnum";
    crate::payment::PaymentStatus => "PaymentStatusEnum";
    crate::payment::PaymentType => "PaymentTypeEnum";
    crate::payment::PaymentMethod => "PaymentMethod";
    crate::payment::RefundReason => "PaymentRefundReason";
    crate::subscription::plan_change::DiffKind => "PendingPlanChangeDiffKind";
    crate::subscription::PlanChangeStatus => "PendingPlanChangeStatus";
    crate::product::ProductType => "ProductType";
    crate::product::RecurringInterval => "RecurringInterval";
    crate::subscription::SubscriptionStatus => "SubscriptionStatus";
    crate::org::Role => "UserRolesEnum";
    crate::webhook::DeliveryStatus => "WebhookDeliveryStatus";
    crate::event::EventType => "WebhookEventType";
    crate::notification::Kind => "NotificationKind";
    crate::notification::Status => "NotificationStatus";
    crate::notification::Channel => "NotificationChannel";
    crate::subscription::FreezeState => "FreezeState";
}

/// CurrencyCode: the currencies the engine keeps.
impl JsonSchema for crate::money::Currency {
    fn schema_name() -> Cow<'static, str> {
        "CurrencyCode".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let values: Vec<String> = crate::money::Currency::ALL.iter().map(|c| c.to_string()).collect();
        json_schema!({"type": "string", "enum": values})
    }
}

/// Language as returned: lowercase.
impl JsonSchema for crate::fields::Language {
    fn schema_name() -> Cow<'static, str> {
        "Language".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let values: Vec<&str> = [crate::fields::Language::Ar, crate::fields::Language::En].iter().map(|l| l.as_str()).collect();
        json_schema!({"type": "string", "enum": values})
    }
}

/// An enum schema with fixed values, for the public shapes the model has no enum of.
#[macro_export]
macro_rules! literal_enum {
    ($($name:ident = [$($v:literal),* $(,)?];)*) => {$(
        pub struct $name;
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "enum": [$($v),*]})
            }
        }
    )*};
}

/// The values of a sort-field enum, for a list's `sort_field` parameter.
pub fn sort_values<T: Copy>(all: &[T], text: fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|v| text(*v)).collect()
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

/// A page number: a whole number from 1.
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

/// A list's `sort_field`: the values of a model sort enum (default `created_at`).
macro_rules! sort_field {
    ($($ty:ty => $name:literal;)*) => {$(
        impl JsonSchema for $ty {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                let values: Vec<&str> = <$ty>::ALL.iter().map(|v| v.as_str()).collect();
                json_schema!({"type": "string", "enum": values, "default": "created_at"})
            }
        }
    )*};
}

sort_field! {
    crate::consumer::ConsumerSort => "ConsumerSortField";
    crate::product::ProductSort => "ProductSortField";
    crate::coupon::CouponSort => "CouponSortField";
    crate::invoice::InvoiceSort => "InvoiceSortField";
    crate::payment::PaymentSort => "PaymentSortField";
    crate::payment_link::PaymentLinkSort => "PaymentLinkSortField";
    crate::subscription::SubscriptionSort => "SubscriptionSortField";
    crate::subscription::FreezeSort => "FreezeSortField";
    crate::notification::NotificationSort => "NotificationSortField";
}

/// A list's query parameters: the common ones (page, limit, size, sort_field, sort_direction,
/// search_term) and the resource's filters.
#[macro_export]
macro_rules! list_query {
    ($($(#[$m:meta])* $name:ident ($sort:ty) { $($(#[$fm:meta])* $field:ident: $ty:ty,)* })*) => {$(
        $(#[$m])*
        #[derive(schemars::JsonSchema)]
        pub struct $name {
            /// Page number (from 1).
            pub page: Option<$crate::schema::PageNumber>,
            /// Page size (1 to 100, default 10).
            pub limit: Option<$crate::schema::PageSize>,
            /// The page size under the name some SDKs send (`limit` wins).
            pub size: Option<$crate::schema::PageSize>,
            /// The field the list is sorted by.
            pub sort_field: Option<$sort>,
            /// `asc` or `desc` (default `desc`).
            pub sort_direction: Option<$crate::schema::SortDirection>,
            /// Case-insensitive partial match on the resource's text fields.
            pub search_term: Option<String>,
            $($(#[$fm])* pub $field: Option<$ty>,)*
        }
    )*};
}

crate::literal_enum! {
    InvoiceType = ["ONE_OFF", "ONE_OFF_FUTURE", "RECURRING", "INSTALLMENTS", "PRORATION"];
    PaymentFlow = ["ALL", "AUTO", "MANUAL"];
    PaymentMethodEnum = ["OPENBANKING", "PAYMENTGATEWAY"];
    RecurrencePattern = ["Hour", "Day", "Week", "Fortnight", "Month", "Quarter", "Half-Year", "Year"];
    SubscriptionRecurringInterval = ["WEEK", "MONTH", "QUARTER", "YEAR"];
}

/// A component whose view is not yet the model's own type (another resource's, still described
/// by the server's shapes): written as a reference to it by its public name, inline.
macro_rules! component_ref {
    ($($(#[$m:meta])* $name:ident => $component:literal;)*) => {$(
        $(#[$m])*
        pub struct $name;
        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({"$ref": concat!("#/components/schemas/", $component)})
            }
        }
    )*};
}

component_ref! {
    /// ProductDto (the catalog's product view).
    ProductDtoRef => "ProductDto";
    /// SubscriptionDetailed (the subscription's view).
    SubscriptionDetailedRef => "SubscriptionDetailed";
    /// SubscriptionStatus, for the views of resources the subscriptions depend on (an invoice
    /// may not name the subscription module).
    SubscriptionStatusRef => "SubscriptionStatus";
}
