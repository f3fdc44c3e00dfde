//! Consumers' operations. The types are [`billing_model::consumer`]'s.

pub use billing_model::consumer::*;

pub mod ops;
