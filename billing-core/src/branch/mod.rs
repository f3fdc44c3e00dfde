//! Branches' operations. The types are [`billing_model::branch`]'s.

pub use billing_model::branch::*;

pub mod ops;
