//! [`Billing`]: the composition root. It makes the [`Engine`] (store, clock, outside services)
//! and wires into it what every resource contributes: the handlers of each kind of due work.
//! The HTTP server, the background worker and embedders all hold one and call the same
//! operations through it: each resource's service (`billing.invoices().create(…)`). What is
//! not an operation — the store, the clock, the gateways and transports, the engine's settings,
//! the due-work runner, idempotency keys — is the engine's, reached as `billing.engine()`.
//!
//! Nothing in the engine imports this file: a new kind of due work is a handler in its
//! resource's module and a line in [`work_handlers`].

use crate::clock::Clock;
use crate::engine::Engine;
use crate::store::Store;
use crate::work::Handler;
use std::sync::Arc;

pub struct Billing<S> {
    engine: Engine<S>,
}

/// The handlers of every kind of due work, in the order a claim's jobs are started.
pub fn work_handlers<S: Store>() -> Vec<Handler<Engine<S>>> {
    let mut all = Vec::new();
    all.extend(crate::webhook::work_handlers());
    all.extend(crate::payment::work_handlers());
    all.extend(crate::payment::installment::work_handlers());
    all.extend(crate::payment_link::work_handlers());
    all.extend(crate::subscription::work_handlers());
    all.extend(crate::notification::send::work_handlers());
    all
}

impl<S: Store> Billing<S> {
    pub fn new(store: S, clock: Arc<dyn Clock>) -> Self {
        let mut engine = Engine::new(store, clock);
        engine.work = work_handlers();
        Billing { engine }
    }

    /// The HS256 secret for bearer tokens; without one, bearer tokens are refused.
    pub fn with_jwt_secret(self, secret: impl Into<Vec<u8>>) -> Self {
        Billing {
            engine: self.engine.with_jwt_secret(secret),
        }
    }

    /// The address clients reach this service at (no trailing slash): the base of the API
    /// addresses in webhook payloads and of hosted pages.
    pub fn with_public_url(self, url: impl Into<String>) -> Self {
        Billing {
            engine: self.engine.with_public_url(url),
        }
    }

    /// API keys: list, create, revoke, rotate (and the command line's, by organization).
    pub fn api_keys(&self) -> crate::auth::keys::ApiKeys<'_, S> {
        crate::auth::keys::ApiKeys::new(&self.engine)
    }

    /// Authentication: credentials into scopes, bearer tokens.
    pub fn auth(&self) -> crate::auth::ops::Auth<'_, S> {
        crate::auth::ops::Auth::new(&self.engine)
    }

    /// Branches: list, create, get, update, delete.
    pub fn branches(&self) -> crate::branch::ops::Branches<'_, S> {
        crate::branch::ops::Branches::new(&self.engine)
    }

    /// The public checkout of payment links: the hosted page, paying a link.
    pub fn checkout(&self) -> crate::payment_link::checkout::Checkout<'_, S> {
        crate::payment_link::checkout::Checkout::new(&self.engine)
    }

    /// Consumers: create, get, list, update, delete.
    pub fn consumers(&self) -> crate::consumer::ops::Consumers<'_, S> {
        crate::consumer::ops::Consumers::new(&self.engine)
    }

    /// Coupons: create, get, list, update, delete.
    pub fn coupons(&self) -> crate::coupon::ops::Coupons<'_, S> {
        crate::coupon::ops::Coupons::new(&self.engine)
    }

    /// A subscription's freeze periods: create, list, update, delete.
    pub fn freezes(&self) -> crate::subscription::freeze::Freezes<'_, S> {
        crate::subscription::freeze::Freezes::new(&self.engine)
    }

    /// Invoices: create, get, list, update, void, send, accept; the pay page, pay, decline.
    pub fn invoices(&self) -> crate::invoice::ops::Invoices<'_, S> {
        crate::invoice::ops::Invoices::new(&self.engine)
    }

    /// Notifications: list, get.
    pub fn notifications(&self) -> crate::notification::ops::Notifications<'_, S> {
        crate::notification::ops::Notifications::new(&self.engine)
    }

    /// The organization: bootstrap, the current user, invitations, settings.
    pub fn org(&self) -> crate::org::ops::Organizations<'_, S> {
        crate::org::ops::Organizations::new(&self.engine)
    }

    /// Payment links: create, get, list, change status, change coupons.
    pub fn payment_links(&self) -> crate::payment_link::ops::PaymentLinks<'_, S> {
        crate::payment_link::ops::PaymentLinks::new(&self.engine)
    }

    /// Payments: get, list, mark-paid, refund, card charges, saved cards, auto-charge.
    pub fn payments(&self) -> crate::payment::ops::Payments<'_, S> {
        crate::payment::ops::Payments::new(&self.engine)
    }

    /// Products and their prices: create, get, list, update, delete, add_price, update_price,
    /// delete_price.
    pub fn products(&self) -> crate::product::ops::Products<'_, S> {
        crate::product::ops::Products::new(&self.engine)
    }

    /// The sandbox test clock: read it, advance it.
    pub fn sandbox(&self) -> crate::sandbox::ops::Sandbox<'_, S> {
        crate::sandbox::ops::Sandbox::new(&self.engine)
    }

    /// Subscriptions: create, get, list, invoices, cancel, uncancel, update,
    /// cancel_pending_change.
    pub fn subscriptions(&self) -> crate::subscription::ops::Subscriptions<'_, S> {
        crate::subscription::ops::Subscriptions::new(&self.engine)
    }

    /// Webhook endpoints and their delivery log: create, get, list, update, delete,
    /// rotate_secret, list_deliveries, get_delivery, retry_delivery.
    pub fn webhooks(&self) -> crate::webhook::ops::Webhooks<'_, S> {
        crate::webhook::ops::Webhooks::new(&self.engine)
    }

    /// The engine the operations run on.
    pub fn engine(&self) -> &Engine<S> {
        &self.engine
    }
}
