//! Payments' operations: recorded gateway attempts, charges, installments, refunds, the card
//! testing limit. The types and the gateway trait are [`billing_model::payment`]'s.

pub use billing_model::payment::*;

pub(crate) mod attempt;
pub mod charge;
pub(crate) mod installment;
pub mod limits;
pub mod ops;

pub(crate) use attempt::{org_now, work_handlers};
pub use attempt::{ATTEMPT_TIMEOUT, CHARGES_ABANDONED, CHARGE_KIND, REFUNDS_RECOVERED, REFUND_KIND, VOID_RETRY};
