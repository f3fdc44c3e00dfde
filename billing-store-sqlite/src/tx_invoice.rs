//! `billing_core::invoice::InvoiceTx` for this store.

use crate::tx::SqliteTx;

impl billing_core::invoice::InvoiceTx for SqliteTx<'_> {}
