//! The query parameters of each list, as JSON Schema objects whose properties become the
//! operation's parameters (and a list tool's input). `openapi::tests` checks that each list's
//! reader in billing-core reads exactly these names.
#![allow(dead_code)]

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

list_query! {}

/// A page of a list without filters.
#[derive(JsonSchema)]
pub struct PageQuery {
    pub page: Option<PageNumber>,
    pub limit: Option<PageSize>,
    pub size: Option<PageSize>,
}
