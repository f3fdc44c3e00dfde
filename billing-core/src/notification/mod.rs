//! Notifications' operations: recording them, reminders, sending them through the senders.
//! The types and templates are [`billing_model::notification`]'s.

pub use billing_model::notification::*;

pub mod ops;
pub mod queue;
pub mod reminder;
pub mod send;
pub mod senders;

pub use senders::Senders;
