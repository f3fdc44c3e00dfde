//! `billing_core::invoice::InvoiceTx` for this store.

use crate::tx::PgTx;

impl billing_core::invoice::InvoiceTx for PgTx<'_> {}
