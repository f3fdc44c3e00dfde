//! The server's tests, in one binary (each test binary links the whole workspace): a module per
//! resource for the HTTP mapping, run on SQLite with a PostgreSQL smoke pass, and the
//! process-level tests (the real binary: command line, several processes, crashes, TLS).
//! Store behaviour is owned by billing-core's conformance suite, which both stores run.

#[macro_use]
mod common;

mod branch;
mod checkout_browser;
mod checkout_pages;
mod cli;
mod connections;
mod consumer;
mod coupon;
mod cross_branch;
mod docker_files;
mod fuzz;
mod hostile_input;
mod http_basics;
mod idempotency;
mod invoice;
mod invoice_checkout;
mod invoice_events;
mod lanes;
mod link_checkout;
mod mcp;
mod metrics;
mod multi_process;
mod notifications;
mod openapi;
mod operating;
mod org;
mod payment;
mod payment_links;
mod product;
mod quickstart;
mod renewal_processes;
mod resilience;
mod sandbox;
mod subscription_freezes;
mod subscription_plans;
mod subscription_trials;
mod subscriptions;
mod webhook;
mod webhook_crash;
mod webhook_multi_process;
mod webhook_slow;
mod webhook_tls;
