//! billing-core: the storage-agnostic billing engine.
//!
//! - [`Billing`] owns a [`store::Store`], a [`clock::Clock`] and the outside services it calls;
//!   every operation is a method on it, taking an [`auth::Scope`] (organization, branch,
//!   actor), and declares its [`Lane`].
//! - Every resource is a folder of the same shape: `mod.rs` (types and pure rules), `store.rs`
//!   (its slice of the [`Tx`] contract), `ops.rs` (its operations and their lanes), `wire.rs`
//!   (request parsing and views).
//! - Requests are parsed into typed values at the edge ([`wire`], [`fields`], `parse` functions
//!   of each resource) and the operations only see valid data.
//! - Money is exact ([`money`], [`pricing`]); time is injected ([`clock`]); background work is
//!   claimed from one queue ([`work`]).
//! - [`testkit`] (feature `testkit`) is the conformance suite every store runs.

pub mod auth;
pub mod billing;
pub mod branch;
pub mod consumer;
pub mod coupon;
pub mod engine;
pub mod event;
pub mod idempotency;
pub mod invoice;
pub mod notification;
pub mod org;
pub mod payment;
pub mod payment_link;
pub mod pricing;
pub mod product;
pub mod sandbox;
pub mod subscription;
pub mod webhook;
pub mod work;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use billing_model::{clock, error, fields, ids, lane, list, literal_enum, money, schema, store, wire, wire_enum};

pub use billing::Billing;
pub use engine::Engine;
pub use error::{Code, Error, Result};
pub use lane::Lane;
pub use store::{Store, Tx};
