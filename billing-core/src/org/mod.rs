//! Organizations' operations: bootstrap, users and invitations, settings. The types are
//! [`billing_model::org`]'s.

pub use billing_model::org::*;

pub mod accept;
pub mod ops;
pub mod settings;

pub use ops::Bootstrap;
