//! The sandbox test clock's operations. The types are [`billing_model::sandbox`]'s.

pub use billing_model::sandbox::*;

pub mod ops;
