//! The conformance suite: behavioural tests of the core, generic over [`Store`], that every
//! store crate runs from its own tests with one line:
//!
//! ```ignore
//! struct MyHarness;
//! impl billing_core::testkit::Harness for MyHarness {
//!     type S = MyStore;
//!     fn store() -> MyStore { /* a fresh, empty store */ }
//! }
//! billing_core::conformance_suite!(MyHarness);
//! ```
//!
//! The macro expands to one `#[test]` per case, so failures are reported separately.

use crate::auth::{Credential, Scope};
use crate::clock::{ManualClock, Timestamp};
use crate::engine::{Billing, BootstrapRequest};
use crate::fields::Email;
use crate::store::Store;
use std::sync::Arc;

pub mod branches;
pub mod catalog;
pub mod consumers;
pub mod tx;

/// Builds fresh stores for the suite.
pub trait Harness {
    type S: Store;
    /// A store with no data in it, not shared with any other call.
    fn store() -> Self::S;
    /// Whether the backend can run here (a database server configured). When it cannot, each
    /// case prints a loud SKIPPED line instead of running.
    fn available() -> bool {
        true
    }
}

/// A store, a manual clock and one bootstrapped sandbox organization, ready to call.
pub struct World<S: Store> {
    pub billing: Billing<S>,
    pub clock: Arc<ManualClock>,
    /// The organization admin's scope in the default branch.
    pub admin: Scope,
    pub boot: crate::engine::Bootstrap,
}

pub const JWT_SECRET: &[u8] = b"testkit-secret";

pub fn start() -> Timestamp {
    crate::clock::parse_datetime("2026-01-15T09:00:00Z").unwrap()
}

impl<S: Store> World<S> {
    pub fn new(store: S) -> Self {
        let clock = Arc::new(ManualClock::new(start()));
        let billing = Billing::new(store, clock.clone()).with_jwt_secret(JWT_SECRET);
        let boot = billing
            .bootstrap(&BootstrapRequest { org_name: "Testkit Org".into(), admin_email: Email::parse("admin@example.com").unwrap(), sandbox: true })
            .expect("bootstrap");
        let admin = billing.authenticate(&Credential::ApiKey { key: boot.api_key.key.clone(), secret: boot.api_key.secret.clone() }, None).expect("admin scope");
        World { billing, clock, admin, boot }
    }

    /// The admin's scope in another branch.
    pub fn in_branch(&self, branch: crate::ids::BranchId) -> Scope {
        let cred = Credential::ApiKey { key: self.boot.api_key.key.clone(), secret: self.boot.api_key.secret.clone() };
        self.billing.authenticate(&cred, Some(branch)).expect("branch scope")
    }
}

/// One `#[test]` per conformance case, for the harness `$h`.
#[macro_export]
macro_rules! conformance_suite {
    ($h:ty) => {
        $crate::conformance_cases!($h;
            tx::org_round_trip,
            tx::missing_rows_are_none,
            branches::bootstrap_creates_default_branch,
            consumers::create_and_get,
            catalog::product_prices_round_trip,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! conformance_cases {
    ($h:ty; $($module:ident :: $case:ident),* $(,)?) => {
        /// Case names are unique across the suite's modules, so each is a test of its own here.
        mod conformance {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $case() {
                    if !<$h as $crate::testkit::Harness>::available() {
                        eprintln!("SKIPPED conformance::{}::{}: backend not configured", stringify!($module), stringify!($case));
                        return;
                    }
                    $crate::testkit::$module::$case::<$h>();
                }
            )*
        }
    };
}
