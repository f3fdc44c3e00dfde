//! What a store offers for invoices and payments (part of [`crate::store::Tx`]).

/// Invoice and payment reads and writes inside one transaction.
pub trait InvoiceTx {}
