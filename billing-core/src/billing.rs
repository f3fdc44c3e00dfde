//! [`Billing`]: the composition root. It makes the [`Engine`] (store, clock, outside services)
//! and wires into it what every resource contributes: the handlers of each kind of due work.
//! The HTTP server, the background worker and embedders all hold one and call the same
//! operations through it.
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

    /// Consumers: create, get, list, update, delete.
    pub fn consumers(&self) -> crate::consumer::ops::Consumers<'_, S> {
        crate::consumer::ops::Consumers::new(&self.engine)
    }

    /// A subscription's freeze periods: create, list, update, delete.
    pub fn freezes(&self) -> crate::subscription::freeze::Freezes<'_, S> {
        crate::subscription::freeze::Freezes::new(&self.engine)
    }

    /// Subscriptions: create, get, list, invoices, cancel, uncancel, update,
    /// cancel_pending_change.
    pub fn subscriptions(&self) -> crate::subscription::ops::Subscriptions<'_, S> {
        crate::subscription::ops::Subscriptions::new(&self.engine)
    }

    /// The engine the operations run on.
    pub fn engine(&self) -> &Engine<S> {
        &self.engine
    }
}

impl<S> std::ops::Deref for Billing<S> {
    type Target = Engine<S>;

    fn deref(&self) -> &Engine<S> {
        &self.engine
    }
}
