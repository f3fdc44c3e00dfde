//! Plan changes' operations. The types are [`billing_model::subscription::plan_change`]'s.

pub use billing_model::subscription::plan_change::*;

mod ops;
mod target;

pub use ops::lane;
