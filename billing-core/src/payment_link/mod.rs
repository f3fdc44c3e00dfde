//! Payment links' operations: manage them, the hosted checkout, pay and subscribe through
//! them. The types are [`billing_model::payment_link`]'s.

pub use billing_model::payment_link::*;

mod attempt;
pub mod checkout;
pub mod ops;
pub mod page;
pub mod pay;
mod subscribe;

pub(crate) use attempt::work_handlers;
pub use attempt::{LINK_CHARGES_ABANDONED, LINK_CHARGE_KIND};
