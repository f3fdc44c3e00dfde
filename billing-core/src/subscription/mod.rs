//! Subscriptions' operations: create, cancel, renew, freeze, trial, period end, plan changes.
//! The types and pure rules are [`billing_model::subscription`]'s.

pub use billing_model::subscription::*;

mod activation;
pub mod freeze;
mod issue;
pub mod ops;
mod period_end;
pub mod plan_change;
mod renewal;
mod renewal_charge;
pub mod trial;

pub use period_end::PREPARE_KIND;
pub use renewal::{RENEWAL_KIND, RENEW_CHARGE_KIND};
#[cfg(feature = "testkit")]
pub(crate) use renewal_charge::charge_work_id;

/// Every kind of due work of subscriptions: renewals and their charges, freezes, trials.
pub(crate) fn work_handlers<S: crate::store::Store>() -> Vec<crate::work::Handler<crate::engine::Engine<S>>> {
    let mut all = renewal::work_handlers();
    all.extend(freeze::work_handlers());
    all.extend(trial::work_handlers());
    all
}
