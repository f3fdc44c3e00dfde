//! Webhook endpoints, signed delivery of outbox events, retries and the delivery log.

mod store;

pub use store::WebhookTx;
