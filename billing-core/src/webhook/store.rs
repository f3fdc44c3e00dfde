//! What a store offers for webhooks and background work (part of [`crate::store::Tx`]).

/// Webhook and due-work reads and writes inside one transaction.
pub trait WebhookTx {}
