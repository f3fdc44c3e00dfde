//! Idempotency keys' operations. The types and the marking of transactions are
//! [`billing_model::idempotency`]'s.

pub use billing_model::idempotency::*;

pub mod ops;
