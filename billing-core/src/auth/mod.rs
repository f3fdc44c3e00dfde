//! Authentication's operations: credentials to scopes, API keys over the API, the cache of
//! authentications. The types (scopes, keys, tokens) are [`billing_model::auth`]'s.

pub use billing_model::auth::*;

pub mod cache;
pub mod keys;
pub mod ops;
