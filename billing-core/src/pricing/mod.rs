//! Pricing inside an operation's transaction: reading what a priced request names. The pure
//! rules are [`billing_model::pricing`]'s.

pub use billing_model::pricing::*;

mod load;

pub use load::load;
