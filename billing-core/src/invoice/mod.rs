//! Invoices, their items and payments (including installments), and the events they emit.

mod store;

pub use store::InvoiceTx;
