//! billing-model: the billing engine's nouns, apart from its verbs.
//!
//! - Every resource is a folder: `mod.rs` (its types and pure rules), `store.rs` (its slice of
//!   the [`Tx`] contract), `wire.rs` (request parsing and the response views), and the files of
//!   its pure rules (a subscription's `cycle`, an invoice's `installments`, …).
//! - The storage contract ([`store`]: [`Store`], [`Tx`], [`store::StoreResult`]), errors
//!   ([`error`]), exact money ([`money`], [`pricing`]), injected time ([`clock`]), ids, the
//!   due-work queue's items ([`work`]), and the traits of what the engine calls outside (the
//!   payment gateway, the webhook transport, the notification senders).
//!
//! This crate knows no operation, no engine and no store implementation: billing-core (the
//! operations) and the stores depend on it, never the other way round, and the compiler keeps
//! it so. billing-core re-exports every module, so embedders see one crate.

pub mod auth;
pub mod branch;
pub mod clock;
pub mod consumer;
pub mod coupon;
pub mod error;
pub mod event;
pub mod fields;
pub mod idempotency;
pub mod ids;
pub mod invoice;
pub mod lane;
pub mod list;
pub mod money;
pub mod notification;
pub mod org;
pub mod payment;
pub mod payment_link;
pub mod pricing;
pub mod product;
pub mod sandbox;
pub mod schema;
pub mod store;
pub mod subscription;
pub mod webhook;
pub mod wire;
pub mod work;

pub use error::{Code, Error, Result};
pub use lane::Lane;
pub use store::{Store, Tx};
