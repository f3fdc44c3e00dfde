//! Invoices' operations: create, update, send, void, accept, pay, decline, settle, and their
//! events. The types and pure rules are [`billing_model::invoice`]'s.

pub use billing_model::invoice::*;

mod accept;
pub mod events;
pub mod ops;
pub mod pay;
mod settle;
