//! Coupons' operations. The types are [`billing_model::coupon`]'s.

pub use billing_model::coupon::*;

pub mod ops;
