//! [`Engine`]: what every operation runs with. It owns the store, the clock and the outside
//! services the operations call (the payment gateways, the webhook transport, the notification
//! senders), the engine's settings, and the handlers of every kind of due work. The operations
//! of each resource are defined in the resource's modules on it; [`crate::Billing`], the
//! composition root, makes one and wires the handlers of every resource into it.
//!
//! This file names no operation: operations import it, never the other way round.

use crate::auth::Scope;
use crate::clock::{Clock, Timestamp};
use crate::error::{Error, Result, StoreError};
use crate::org::Organization;
use crate::payment::gateway::{PaymentGateway, SandboxGateway, UnconfiguredGateway};
use crate::store::{Store, StoreResult, Tx};
use crate::webhook::WebhookTransport;
use std::sync::{Arc, RwLock};

pub struct Engine<S> {
    pub store: S,
    clock: Arc<dyn Clock>,
    pub(crate) jwt_secret: Vec<u8>,
    public_url: String,
    /// What sandbox organizations' card and wallet payments go through (the simulation of the
    /// sandbox tables unless replaced).
    sandbox_gateway: RwLock<Arc<dyn PaymentGateway>>,
    /// What live organizations' payments go through (none configured: every call fails).
    live_gateway: RwLock<Arc<dyn PaymentGateway>>,
    /// What webhook deliveries are sent with (worker runs, sandbox clock advances, manual
    /// retries). Without one, events are still fanned out to deliveries, but nothing is sent.
    webhook_transport: RwLock<Option<Arc<dyn WebhookTransport>>>,
    /// Webhook attempts in flight read their deliveries and record their outcomes together
    /// ([`crate::webhook::record`]).
    pub(crate) attempt_batches: crate::webhook::batches::AttemptBatches,
    /// The handlers of every kind of due work (set by [`crate::Billing::new`]).
    pub(crate) work: Vec<crate::work::Handler<Engine<S>>>,
    /// Whether webhook endpoints may point to loopback, private and other non-public addresses
    /// ([`crate::webhook::destination`]); off unless a host turns it on for development.
    allow_private_webhooks: std::sync::atomic::AtomicBool,
    /// Where long clock advances report progress, and how often.
    advance_progress: RwLock<Option<(std::time::Duration, crate::sandbox::ProgressReporter)>>,
    /// API-key authentications, kept while the store's auth generation holds
    /// ([`crate::auth::cache`]).
    pub(crate) auth_cache: crate::auth::cache::AuthCache,
    /// Failed pay attempts allowed per link or invoice and client within
    /// [`crate::payment::limits::WINDOW`] ([`crate::payment::limits::MAX_FAILED`] unless set).
    failed_attempts_allowed: std::sync::atomic::AtomicU64,
    /// What notifications are sent with, by channel ([`crate::notification::send`]).
    pub(crate) notifications: crate::notification::senders::Senders,
}

impl<S: Store> Engine<S> {
    /// An engine with no due-work handlers (see [`crate::Billing::new`]).
    pub fn new(store: S, clock: Arc<dyn Clock>) -> Self {
        Engine {
            store,
            clock,
            jwt_secret: Vec::new(),
            public_url: "http://127.0.0.1:8080".into(),
            sandbox_gateway: RwLock::new(Arc::new(SandboxGateway)),
            live_gateway: RwLock::new(Arc::new(UnconfiguredGateway)),
            webhook_transport: Default::default(),
            attempt_batches: Default::default(),
            work: Vec::new(),
            allow_private_webhooks: Default::default(),
            advance_progress: Default::default(),
            auth_cache: Default::default(),
            failed_attempts_allowed: std::sync::atomic::AtomicU64::new(crate::payment::limits::MAX_FAILED),
            notifications: Default::default(),
        }
    }

    /// The HS256 secret for bearer tokens; without one, bearer tokens are refused.
    pub fn with_jwt_secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.jwt_secret = secret.into();
        self
    }

    /// The address clients reach this service at (no trailing slash): the base of the API
    /// addresses in webhook payloads and of hosted pages.
    pub fn with_public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = url.into().trim_end_matches('/').to_string();
        self
    }

    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    /// Sets the transport webhook deliveries are sent with.
    pub fn set_webhook_transport(&self, transport: Arc<dyn WebhookTransport>) {
        *self.webhook_transport.write().unwrap_or_else(|p| p.into_inner()) = Some(transport);
    }

    pub fn webhook_transport(&self) -> Option<Arc<dyn WebhookTransport>> {
        self.webhook_transport.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Lets webhook endpoints point to loopback, private and other non-public addresses (for
    /// development and tests with local receivers; never in production: an endpoint could then
    /// probe the service's own network).
    pub fn set_allow_private_webhooks(&self, allow: bool) {
        self.allow_private_webhooks.store(allow, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn allows_private_webhooks(&self) -> bool {
        self.allow_private_webhooks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Has sandbox clock advances report their progress to `report` once `every` has passed
    /// since they started or last reported (at most once a stop), and once more at the end if
    /// they reported before.
    pub fn set_advance_progress(&self, every: std::time::Duration, report: crate::sandbox::ProgressReporter) {
        *self.advance_progress.write().unwrap_or_else(|p| p.into_inner()) = Some((every, report));
    }

    pub(crate) fn advance_progress(&self) -> Option<(std::time::Duration, crate::sandbox::ProgressReporter)> {
        self.advance_progress.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sets the gateway of sandbox organizations (default: [`SandboxGateway`]).
    pub fn set_sandbox_gateway(&self, gateway: Arc<dyn PaymentGateway>) {
        *self.sandbox_gateway.write().unwrap_or_else(|p| p.into_inner()) = gateway;
    }

    /// Sets the gateway of live organizations (default: [`UnconfiguredGateway`], which refuses).
    pub fn set_live_gateway(&self, gateway: Arc<dyn PaymentGateway>) {
        *self.live_gateway.write().unwrap_or_else(|p| p.into_inner()) = gateway;
    }

    /// The gateway an organization's card and wallet payments go through.
    pub fn gateway_for(&self, org: &Organization) -> Arc<dyn PaymentGateway> {
        let g = if org.sandbox { &self.sandbox_gateway } else { &self.live_gateway };
        g.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sets how many failed pay attempts a client may make on one link or invoice within
    /// [`crate::payment::limits::WINDOW`] (default [`crate::payment::limits::MAX_FAILED`]).
    pub fn set_failed_attempts_allowed(&self, n: u64) {
        self.failed_attempts_allowed.store(n, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn failed_attempts_allowed(&self) -> u64 {
        self.failed_attempts_allowed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether payers of `org` can pay by card or wallet: a sandbox organization always; a live
    /// one once a live gateway is configured ([`Self::set_live_gateway`]).
    pub fn takes_payments(&self, org: &Organization) -> bool {
        self.gateway_for(org).takes_payments()
    }

    /// Runs `call` (a gateway or webhook request) after checking that no store transaction is
    /// open on this thread: an outside call inside one would hold its locks (and, on SQLite, the
    /// whole write batch of the process) for as long as the other side takes. An operation that
    /// gets here inside a transaction was given the wrong [`crate::Lane`].
    pub(crate) fn call_out<R>(&self, what: &str, call: impl FnOnce() -> R) -> Result<R> {
        if crate::store::transaction_open() {
            return Err(StoreError::backend(format!("{what} was called inside a store transaction")).into());
        }
        Ok(call())
    }

    /// Reads one row with `find` (one statement: see [`Store::read_one`]) and answers it, or the
    /// 404 of `what` `id` when there is none.
    pub(crate) fn read_found<T>(&self, what: &str, id: impl std::fmt::Display, mut find: impl FnMut(&mut dyn Tx) -> StoreResult<Option<T>>) -> Result<T> {
        self.store.read_one(|tx| Ok(find(tx)?))?.ok_or_else(|| Error::not_found(what, id))
    }

    /// Whether the store answers a read (what a readiness probe asks): the database is
    /// reachable and its schema is the one this version reads (migrations run when it opens).
    pub fn check_store(&self) -> Result<()> {
        self.store.read(|tx| {
            tx.org(crate::ids::OrgId(uuid::Uuid::nil()))?;
            Ok(())
        })
    }

    /// The clock, shared.
    pub(crate) fn clock_arc(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    pub fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    /// The organization's current time (its test clock in sandbox).
    pub fn now(&self, scope: &Scope) -> Timestamp {
        scope.org.now(&*self.clock)
    }
}

/// Declares a resource's service: a view of the engine whose methods are the resource's
/// operations (`billing.consumers().create(…)`). It derefs to the [`Engine`], so an operation
/// reaches the store, the clock and the outside services as `self.store`, `self.now(…)`.
#[macro_export]
macro_rules! service {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        pub struct $name<'a, S> {
            engine: &'a $crate::engine::Engine<S>,
        }

        impl<'a, S> $name<'a, S> {
            pub fn new(engine: &'a $crate::engine::Engine<S>) -> Self {
                $name { engine }
            }
        }

        impl<S> std::ops::Deref for $name<'_, S> {
            type Target = $crate::engine::Engine<S>;

            fn deref(&self) -> &Self::Target {
                self.engine
            }
        }
    };
}
