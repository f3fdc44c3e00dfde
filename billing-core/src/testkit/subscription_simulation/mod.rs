//! The subscription simulation: a hundred subscriptions or more in three sandbox organizations
//! (each with its own invoice lead time and renewal retry schedule), driven for three simulated
//! years through the engine's public operations — the ones the server calls — with random
//! creations, plan changes, freezes, cancellations, uncancels, manual payments and card changes,
//! while the test clocks advance a few days per step and run the due work (preparation,
//! renewal, charges and their retries, freezes, trials). After every step the invariants are
//! checked against what the store holds ([`invariants`]).
//!
//! - [`setup`]: the organizations, their catalog and settings.
//! - [`actions`]: the random actions and what each may be refused with.
//! - [`invariants`]: the checks, over a snapshot of the store's rows.
//! - [`replay`]: the subscription events replayed through the spec's transitions.
//!
//! Deterministic for a seed: `BILLING_SIM_SEED` (default 1; the seed is printed when the case
//! fails, so the failure can be replayed), `BILLING_SIM_SUBSCRIPTIONS` (default 100),
//! `BILLING_SIM_DAYS` (default 1095).

mod actions;
mod invariants;
mod replay;
mod setup;

use super::{Harness, World};
use crate::clock::Timestamp;
use crate::ids::{ConsumerId, InvoiceId, PlanChangeId, SubscriptionId};
use crate::money::Money;
use crate::sandbox::Advance;
use crate::store::Store;
use crate::subscription::SubscriptionStatus;
use chrono::Duration;
use std::collections::BTreeMap;

/// The times of the run are on this grid (see the step).
pub const GRID: Duration = Duration::hours(6);

/// A small, seeded, deterministic generator (splitmix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// The sizes of a run, from the environment.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub seed: u64,
    pub subscriptions: usize,
    pub days: i64,
}

impl Config {
    pub fn from_env() -> Self {
        let var = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(d);
        Config {
            seed: var("BILLING_SIM_SEED", 1),
            subscriptions: var("BILLING_SIM_SUBSCRIPTIONS", 100) as usize,
            days: var("BILLING_SIM_DAYS", 1095) as i64,
        }
    }
}

/// How the consumer's latest card answers a renewal charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Card {
    None,
    Approves,
    Declines,
}

/// A preview shown by a plan change, to compare with the invoice issued for its cycle.
#[derive(Debug, Clone)]
pub struct Preview {
    pub change: PlanChangeId,
    pub cycle: u32,
    pub total: Money,
    pub period_start: Timestamp,
    pub made_at: Timestamp,
    /// A freeze happened since: it moves the period, so only the amount is compared.
    pub moved: bool,
}

/// An invoice of a subscription as last read.
#[derive(Debug, Clone)]
pub struct Known {
    pub invoice: crate::invoice::Invoice,
    pub payments: Vec<crate::payment::Payment>,
    /// COMPLETED or CANCELED: it no longer changes (no refunds in the simulation).
    pub is_final: bool,
}

/// What the simulation knows of one subscription beyond the store's rows.
#[derive(Debug, Clone)]
pub struct SimSub {
    pub id: SubscriptionId,
    pub org: usize,
    pub consumer: ConsumerId,
    pub trial: bool,
    pub card: Card,
    /// The card and auto-renewal were never changed since creation (renewals' outcome is known).
    pub stable: bool,
    pub auto_renewal: bool,
    /// Every invoice carrying the subscription seen so far; once it is final (COMPLETED or
    /// CANCELED) it is not read again.
    pub invoices: BTreeMap<InvoiceId, Known>,
    /// The status seen at the last check.
    pub status: SubscriptionStatus,
    /// When the subscription was first seen over (CANCELED or EXPIRED).
    pub over_since: Option<Timestamp>,
    pub previews: Vec<Preview>,
    /// The last check found nothing more to look at (over, and checked once since).
    pub settled: bool,
    /// An action was done on it since the last check: it is read again.
    pub touched: bool,
}

/// The whole run: the world, its organizations and what the simulation knows.
pub struct Sim<S: Store> {
    pub w: World<S>,
    pub cfg: Config,
    pub rng: Rng,
    pub orgs: Vec<setup::SimOrg>,
    pub subs: Vec<SimSub>,
    /// The simulated time every organization's test clock is at.
    pub now: Timestamp,
    pub step: usize,
}

impl<S: Store> Sim<S> {
    pub fn sub_mut(&mut self, id: SubscriptionId) -> &mut SimSub {
        self.subs.iter_mut().find(|s| s.id == id).expect("a simulated subscription")
    }

    /// Moves every organization's test clock to `to`, running their due work on the way.
    fn advance_to(&mut self, to: Timestamp) {
        for o in &self.orgs {
            let scope = o.scope(&self.w);
            self.w
                .billing
                .sandbox()
                .advance(&scope, Advance::To(to))
                .unwrap_or_else(|e| panic!("advance {} to {to}: {e:?}", o.name));
        }
        self.now = to;
    }
}

/// Prints the seed (and how to replay it) when the case fails.
struct SeedOnPanic(Config);

impl Drop for SeedOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "subscription simulation failed: replay with BILLING_SIM_SEED={} BILLING_SIM_SUBSCRIPTIONS={} BILLING_SIM_DAYS={}",
                self.0.seed, self.0.subscriptions, self.0.days
            );
        }
    }
}

/// The case: the run described in the module, checked after every step, then once more in full
/// at the end; and the run must have exercised what it is about (renewals approved and declined,
/// plan changes applied, freezes, cancellations, inactivations).
pub fn random_subscriptions_over_three_years<H: Harness>() {
    let cfg = Config::from_env();
    let _seed = SeedOnPanic(cfg);
    eprintln!(
        "subscription simulation: BILLING_SIM_SEED={} BILLING_SIM_SUBSCRIPTIONS={} BILLING_SIM_DAYS={}",
        cfg.seed, cfg.subscriptions, cfg.days
    );
    let w = World::new(H::store());
    let now = w.billing.sandbox().clock(&w.fresh_admin()).expect("sandbox clock");
    let mut sim = Sim {
        orgs: vec![],
        w,
        cfg,
        rng: Rng::new(cfg.seed),
        subs: vec![],
        now,
        step: 0,
    };
    setup::organizations(&mut sim);
    let mut checks = invariants::Checker::new(sim.orgs.len());
    let end = sim.now + Duration::days(cfg.days);
    // Creations are spread over the first two thirds of the run, so most subscriptions live
    // long enough to renew many times.
    let creation_days = (cfg.days * 2 / 3).max(1);
    let mut created = 0usize;
    while sim.now < end {
        sim.step += 1;
        let elapsed = (sim.now - (end - Duration::days(cfg.days))).num_days();
        let due = if elapsed >= creation_days {
            cfg.subscriptions
        } else {
            (cfg.subscriptions as i64 * (elapsed + 1) / creation_days) as usize
        };
        while created < due.min(cfg.subscriptions) {
            actions::create(&mut sim);
            created += 1;
        }
        let n_actions = 1 + sim.rng.below(4 + sim.subs.len() / 40);
        for _ in 0..n_actions {
            actions::random(&mut sim);
        }
        checks.check(&mut sim, false);
        // One to six days and up to 18 hours, so steps do not line up with the
        // cycles. Every time of the run (creations, freezes, steps) is on a grid of 6 hours:
        // due work then falls due at a few times a day, which the clock advance runs together.
        let days = 1 + sim.rng.below(6) as i64;
        let to = (sim.now + Duration::days(days) + GRID * sim.rng.below(4) as i32).min(end);
        sim.advance_to(to.max(sim.now + Duration::seconds(1)));
        checks.check(&mut sim, true);
    }
    checks.check_all(&mut sim);
    checks.assert_coverage(&sim);
}

/// The subscriptions' ids of an organization that are not over, in creation order.
pub(crate) fn live(subs: &[SimSub], org: Option<usize>) -> Vec<SubscriptionId> {
    subs.iter()
        .filter(|s| s.over_since.is_none() && org.is_none_or(|o| s.org == o))
        .map(|s| s.id)
        .collect()
}
