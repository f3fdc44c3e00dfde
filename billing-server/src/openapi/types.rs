//! The wire's scalar kinds as JSON Schema (ids, date-times, money) and the closed sets of values
//! (enums), each enum's values taken from billing-core's own `wire_enum!` so that a value added
//! there is documented at once.

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
    /// A language code: any case in requests (`AR`, `en`).
    LanguageInput => {"type": "string", "pattern": "^([aA][rR]|[eE][nN])$", "examples": ["ar", "EN"]};
}

/// An enum schema whose values are a billing-core `wire_enum!`'s, under its public name.
macro_rules! core_enum {
    ($($(#[$m:meta])* $name:ident = $core:ty;)*) => {$(
        $(#[$m])*
        pub struct $name;
        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                let values: Vec<&str> = <$core>::ALL.iter().map(|v| v.as_str()).collect();
                json_schema!({"type": "string", "enum": values})
            }
        }
    )*};
}

use billing_core as core;

core_enum! {
    ConsumerCommunicationMethod = core::consumer::CommunicationMethod;
    OrganizationConsumerType = core::consumer::ConsumerType;
    ContactInformationType = core::payment_link::ContactInformationType;
    PaymentLinkStatus = core::payment_link::PaymentLinkStatus;
    InvoiceStatusEnum = core::invoice::InvoiceStatus;
    PaymentStatusEnum = core::payment::PaymentStatus;
    PaymentTypeEnum = core::payment::PaymentType;
    PaymentMethod = core::payment::PaymentMethod;
    PaymentRefundReason = core::payment::RefundReason;
    PendingPlanChangeDiffKind = core::subscription::plan_change::DiffKind;
    PendingPlanChangeStatus = core::subscription::PlanChangeStatus;
    ProductType = core::product::ProductType;
    RecurringInterval = core::product::RecurringInterval;
    SubscriptionStatus = core::subscription::SubscriptionStatus;
    UserRolesEnum = core::org::Role;
    WebhookDeliveryStatus = core::webhook::DeliveryStatus;
    WebhookEventType = core::event::EventType;
    NotificationKind = core::notification::Kind;
    NotificationStatus = core::notification::Status;
    NotificationChannel = core::notification::Channel;
    FreezeState = core::subscription::FreezeState;
}

/// CurrencyCode: the currencies the engine keeps (`billing_core::money::Currency`).
pub struct CurrencyCode;
impl JsonSchema for CurrencyCode {
    fn schema_name() -> Cow<'static, str> {
        "CurrencyCode".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let values: Vec<String> = core::money::Currency::ALL.iter().map(|c| c.to_string()).collect();
        json_schema!({"type": "string", "enum": values})
    }
}

/// Language as returned: lowercase.
pub struct Language;
impl JsonSchema for Language {
    fn schema_name() -> Cow<'static, str> {
        "Language".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let values: Vec<&str> = [core::fields::Language::Ar, core::fields::Language::En].iter().map(|l| l.as_str()).collect();
        json_schema!({"type": "string", "enum": values})
    }
}

/// The values of a sort-field enum, for a list's `sort_field` parameter.
pub fn sort_values<T: Copy>(all: &[T], text: fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|v| text(*v)).collect()
}

/// An enum schema with fixed values, for the public shapes billing-core has no enum of (their
/// values are what the public API names; responses are checked against them).
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
pub(crate) use literal_enum;
