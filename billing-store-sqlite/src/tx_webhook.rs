//! `billing_core::webhook::WebhookTx` for this store.

use crate::tx::SqliteTx;

impl billing_core::webhook::WebhookTx for SqliteTx<'_> {}
