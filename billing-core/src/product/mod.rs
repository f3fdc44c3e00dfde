//! Products' operations. The types are [`billing_model::product`]'s.

pub use billing_model::product::*;

pub mod ops;
