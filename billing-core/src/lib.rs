//! billing-core: the storage-agnostic billing engine.
//!
//! - [`engine::Billing`] owns a [`store::Store`] and a [`clock::Clock`]; every operation is a
//!   method on it, taking a [`auth::Scope`] (organization, branch, actor).
//! - Requests are parsed into typed values at the edge ([`wire`], [`fields`], `parse` functions
//!   of each resource) and the operations only see valid data.
//! - Money is exact ([`money`]); time is injected ([`clock`]).
//! - [`testkit`] (feature `testkit`) is the conformance suite every store runs.

pub mod auth;
pub mod branch;
pub mod clock;
pub mod consumer;
pub mod coupon;
pub mod engine;
pub mod error;
pub mod event;
pub mod fields;
pub mod ids;
pub mod invoice;
pub mod list;
pub mod money;
pub mod notification;
pub mod org;
pub mod product;
pub mod sandbox;
pub mod store;
pub mod webhook;
pub mod wire;
pub mod work;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use engine::Billing;
pub use error::{Code, Error, Result};
pub use store::{Store, Tx};
