//! `billing_core::webhook::WebhookTx` for this store.

use crate::tx::PgTx;

impl billing_core::webhook::WebhookTx for PgTx<'_> {}
