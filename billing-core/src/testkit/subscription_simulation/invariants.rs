//! The invariants, checked after every step against what the store holds:
//!
//! 1. Exactly one invoice per subscription and cycle: the cycle rows are the cycles billed so
//!    far (1 to the current one, and the next one when prepared), every invoice carrying the
//!    subscription that is not one of them is CANCELED, no invoice is issued for a cycle that
//!    has one; the current cycle's invoice is the subscription's latest invoice and starts its
//!    period, a prepared one starts at the period end.
//! 2. No invoice issued, nor due, inside a freeze.
//! 3. A subscription that is over issues nothing after its end, and leaves no open invoice of
//!    a cycle after it.
//! 4. Previews equal issued invoices, to the minor unit: a plan change's `next_invoice_preview`
//!    and the invoice of its cycle; an open prepared invoice bills the next cycle's plan.
//! 5. No event missing from the outbox: INVOICE_CREATED, INVOICE_COMPLETED, INVOICE_CANCELED,
//!    PAYMENT_SUCCEEDED (or PAYMENT_MARKED_AS_PAID), a failed renewal charge's
//!    SUBSCRIPTION_CYCLE_RENEWAL_FAILED, SUBSCRIPTION_PLAN_CHANGED of each applied change, and
//!    the subscription's events replayed through the spec's transitions lead to its status
//!    ([`super::replay`]).
//! 6. Timeliness: nothing due is skipped — an ACTIVE subscription's period has not ended, a
//!    TRIALING one's trial has not, the next invoice is prepared once its time has come, a
//!    renewal charged to a card that approves is paid, and one whose charges decline is
//!    INACTIVE once its retries are over.
//!
//! Only what changes is read again: invoices until they are final, subscriptions until they
//! are over and checked once more; the organization's new events and invoices since the last
//! check.

use super::replay::{self, Phase};
use super::{Card, Known, Sim, SimSub};
use crate::clock::Timestamp;
use crate::event::{Event, EventType};
use crate::ids::{InvoiceId, PlanChangeId, SubscriptionId};
use crate::invoice::{InvoiceFilter, InvoiceSort, InvoiceStatus};
use crate::list::{Direction, ListQuery};
use crate::payment::PaymentStatus;
use crate::store::{Store, Tx};
use crate::subscription::{Freeze, FreezeState, PlanChange, PlanChangeStatus, Subscription, SubscriptionStatus};
use chrono::Duration;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// What the checks keep between steps.
pub struct Checker {
    /// Per organization: events read so far.
    events_seen: Vec<usize>,
    /// Per organization: invoices created from then on are not read yet.
    invoices_since: Vec<Option<Timestamp>>,
    /// (event type, entity) of every event read.
    said: HashSet<(EventType, uuid::Uuid)>,
    /// Payments named by a SUBSCRIPTION_CYCLE_RENEWAL_FAILED.
    failed_renewals: HashSet<uuid::Uuid>,
    /// Plan changes named by a SUBSCRIPTION_PLAN_CHANGED.
    applied: HashSet<uuid::Uuid>,
    /// The phase each subscription's events lead to.
    phases: HashMap<uuid::Uuid, Phase>,
    /// The subscription each subscription, invoice and payment id is about.
    owner: HashMap<uuid::Uuid, SubscriptionId>,
    /// Each subscription as last read.
    snaps: HashMap<SubscriptionId, Snapshot>,
    /// Events by type, over the run.
    pub counts: BTreeMap<&'static str, usize>,
}

/// One subscription as the store holds it now.
struct Snapshot {
    sub: Subscription,
    cycles: Vec<(u32, InvoiceId)>,
    freezes: Vec<Freeze>,
    scheduled: Option<PlanChange>,
    changes: Vec<PlanChange>,
    /// Invoices read again (those not final).
    read: Vec<(InvoiceId, Known)>,
}

impl Checker {
    pub fn new(orgs: usize) -> Self {
        Checker {
            events_seen: vec![0; orgs],
            invoices_since: vec![None; orgs],
            said: HashSet::new(),
            failed_renewals: HashSet::new(),
            applied: HashSet::new(),
            phases: HashMap::new(),
            owner: HashMap::new(),
            snaps: HashMap::new(),
            counts: BTreeMap::new(),
        }
    }

    /// Checks every subscription once more, those over and settled too.
    pub fn check_all<S: Store>(&mut self, sim: &mut Sim<S>) {
        for s in &mut sim.subs {
            s.settled = false;
            s.touched = true;
        }
        self.check(sim, true);
    }

    /// Checks the subscriptions not settled. `ran`: the due work has just run (after an advance
    /// of the clocks): the timeliness checks (6) apply; an action may leave work due for the
    /// next advance (a payment activating a subscription whose period ended while it was
    /// INACTIVE renews it then).
    pub fn check<S: Store>(&mut self, sim: &mut Sim<S>, ran: bool) {
        let when = if ran { "after the clock advance" } else { "after the actions" };
        let ctx = format!("step {} ({when}, {})", sim.step, crate::clock::format_rfc3339(&sim.now));
        for k in 0..sim.orgs.len() {
            self.check_org(sim, k, &ctx, ran);
        }
    }

    fn check_org<S: Store>(&mut self, sim: &mut Sim<S>, k: usize, ctx: &str, ran: bool) {
        let scope = sim.orgs[k].scope(&sim.w);
        let org_id = scope.org_id();
        let branch = scope.branch_id();
        let now = sim.now;
        let mut dirty: HashSet<SubscriptionId> = sim.subs.iter().filter(|s| s.org == k && s.touched).map(|s| s.id).collect();
        // The invoices created since the last check.
        let since = self.invoices_since[k];
        let fresh = sim.w.read(|tx| {
            let q = ListQuery {
                page: 1,
                limit: u32::MAX / 2,
                sort: InvoiceSort::CreatedAt,
                direction: Direction::Asc,
                search: None,
            };
            let f = InvoiceFilter {
                from_date: since,
                ..InvoiceFilter::default()
            };
            Ok(tx.list_invoices(branch, &q, &f)?.items)
        });
        self.invoices_since[k] = Some(now);
        for inv in fresh {
            let Some(sid) = inv.subscription_id else { continue };
            let s = sim
                .subs
                .iter_mut()
                .find(|s| s.id.0 == sid)
                .unwrap_or_else(|| panic!("{ctx}: invoice {} of an unknown subscription {sid}", inv.id));
            if s.invoices.contains_key(&inv.id) {
                continue;
            }
            if let Some(over) = s.over_since {
                panic!(
                    "{ctx}: subscription {} is over since {over} but issued invoice {} at {}",
                    s.id, inv.id, inv.created_at
                );
            }
            self.owner.insert(inv.id.0, s.id);
            s.invoices.insert(
                inv.id,
                Known {
                    invoice: inv,
                    payments: vec![],
                    is_final: false,
                },
            );
            s.settled = false;
            dirty.insert(s.id);
        }
        // The organization's new events, in the order written; a subscription they are about
        // (or about one of its invoices or payments) is read again.
        for s in sim.subs.iter().filter(|s| s.org == k) {
            self.owner.insert(s.id.0, s.id);
        }
        let seen = self.events_seen[k];
        let events: Vec<Event> = sim.w.read(|tx| tx.list_events_from(org_id, seen));
        self.events_seen[k] += events.len();
        for e in &events {
            self.take_event(sim, e, ctx);
            let data = &e.payload["data"];
            let about = [
                Some(e.entity_id),
                data["invoice"]["id"].as_str().and_then(|x| x.parse().ok()),
                data["subscription"]["id"].as_str().and_then(|x| x.parse().ok()),
            ];
            dirty.extend(about.iter().flatten().filter_map(|x| self.owner.get(x).copied()));
        }
        let lead = Duration::days(i64::from(sim.orgs[k].lead_days));
        let last_retry = Duration::days(i64::from(sim.orgs[k].retry_days.iter().copied().max().unwrap_or(0)));
        for i in 0..sim.subs.len() {
            if sim.subs[i].org != k || sim.subs[i].settled {
                continue;
            }
            // Read again when something happened to it, or when its period's end (or the
            // preparation before it) has come: a renewal adopting a prepared invoice may say
            // nothing. Otherwise the rows are as last read, and only time moved on.
            let id = sim.subs[i].id;
            let cached = self
                .snaps
                .remove(&id)
                .filter(|c| !dirty.contains(&id) && (c.sub.status.is_terminal() || c.sub.current_period_end - lead > now));
            let snap = match cached {
                Some(c) => c,
                None => snapshot(sim, &sim.subs[i], branch),
            };
            let m = &mut sim.subs[i];
            m.touched = false;
            for (id, known) in snap.read.iter().cloned() {
                m.invoices.insert(id, known);
            }
            let facts = Facts {
                ctx,
                now,
                lead,
                last_retry,
                ran,
            };
            let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                facts.check_sub(m, &snap);
                // 4. Previews equal the invoices issued for their cycle.
                facts.check_previews(m, &snap);
                self.check_events(&facts, m, &snap);
            }));
            if let Err(e) = checked {
                eprintln!("{}", history(&sim.w, org_id, m, &snap));
                std::panic::resume_unwind(e);
            }
            // Status transitions, as stored from one check to the next.
            let (from, to) = (m.status, snap.sub.status);
            assert!(!from.is_terminal() || from == to, "{ctx}: subscription {} went from {from} to {to}", m.id);
            assert!(
                to != SubscriptionStatus::Trialing || from == SubscriptionStatus::Trialing,
                "{ctx}: subscription {} went from {from} to TRIALING",
                m.id
            );
            m.status = to;
            if to.is_terminal() {
                let ended = snap.sub.ended_at.unwrap_or_else(|| panic!("{ctx}: {} is {to} without ended_at", m.id));
                m.over_since.get_or_insert(now.max(ended));
                m.settled = true;
            }
            self.snaps.insert(id, Snapshot { read: vec![], ..snap });
        }
    }

    fn take_event<S: Store>(&mut self, sim: &Sim<S>, e: &Event, ctx: &str) {
        *self.counts.entry(e.event_type.as_str()).or_default() += 1;
        self.said.insert((e.event_type, e.entity_id));
        let data = &e.payload["data"];
        let named = |k: &str| data[k]["id"].as_str().and_then(|x| x.parse::<uuid::Uuid>().ok());
        match e.event_type {
            EventType::SubscriptionCycleRenewalFailed => {
                if let Some(p) = named("payment") {
                    self.failed_renewals.insert(p);
                }
            }
            EventType::SubscriptionPlanChanged => {
                if let Some(c) = named("pending_change") {
                    self.applied.insert(c);
                }
            }
            _ => {}
        }
        if e.entity_type != crate::event::EntityType::Subscription {
            return;
        }
        let Some(m) = sim.subs.iter().find(|s| s.id.0 == e.entity_id) else {
            panic!("{ctx}: event {} of an unknown subscription {}", e.event_type.as_str(), e.entity_id);
        };
        let from = self.phases.get(&e.entity_id).copied();
        let to = replay::apply(from, m.trial, e).unwrap_or_else(|bad| panic!("{ctx}: subscription {}: event {bad} is not a transition of the spec", m.id));
        if e.event_type != EventType::SubscriptionCycleRenewalFailed {
            let said = e.payload["status"].as_str().and_then(SubscriptionStatus::parse);
            assert_eq!(
                said.map(Phase::of),
                Some(to),
                "{ctx}: subscription {}: {} says status {said:?} where its events lead to {to:?}",
                m.id,
                e.event_type.as_str()
            );
        }
        self.phases.insert(e.entity_id, to);
    }

    /// Invariant 5 for one subscription.
    fn check_events(&self, f: &Facts, m: &SimSub, snap: &Snapshot) {
        let ctx = f.ctx;
        let id = m.id;
        let says = |t: EventType, entity: uuid::Uuid| self.said.contains(&(t, entity));
        for (inv_id, k) in &m.invoices {
            let inv = &k.invoice;
            assert!(
                says(EventType::InvoiceCreated, inv_id.0),
                "{ctx}: {id}: invoice {inv_id} has no INVOICE_CREATED"
            );
            if inv.status == InvoiceStatus::Completed {
                assert!(
                    says(EventType::InvoiceCompleted, inv_id.0),
                    "{ctx}: {id}: invoice {inv_id} has no INVOICE_COMPLETED"
                );
            }
            if inv.status == InvoiceStatus::Canceled {
                assert!(
                    says(EventType::InvoiceCanceled, inv_id.0),
                    "{ctx}: {id}: invoice {inv_id} has no INVOICE_CANCELED"
                );
            }
            for p in &k.payments {
                if p.status.is_paid() && !p.amount.is_zero() {
                    assert!(
                        says(EventType::PaymentSucceeded, p.id.0) || says(EventType::PaymentMarkedAsPaid, p.id.0),
                        "{ctx}: {id}: paid payment {} of invoice {inv_id} has no PAYMENT_SUCCEEDED",
                        p.id
                    );
                }
                if p.status == PaymentStatus::Failed {
                    assert!(
                        says(EventType::PaymentFailed, p.id.0),
                        "{ctx}: {id}: failed payment {} has no PAYMENT_FAILED",
                        p.id
                    );
                    assert!(
                        self.failed_renewals.contains(&p.id.0),
                        "{ctx}: {id}: failed renewal charge {} has no SUBSCRIPTION_CYCLE_RENEWAL_FAILED",
                        p.id
                    );
                }
            }
        }
        for c in &snap.changes {
            if c.status == PlanChangeStatus::Applied {
                assert!(
                    self.applied.contains(&c.id.0),
                    "{ctx}: {id}: applied plan change {} has no SUBSCRIPTION_PLAN_CHANGED",
                    c.id
                );
            }
        }
        if snap.sub.cancel_at_period_end {
            assert!(
                says(EventType::SubscriptionCancelAtPeriodEnd, id.0),
                "{ctx}: {id}: cancel_at_period_end without SUBSCRIPTION_CANCEL_AT_PERIOD_END"
            );
        }
        let phase = self.phases.get(&id.0).copied();
        assert_eq!(
            phase,
            Some(Phase::of(snap.sub.status)),
            "{ctx}: {id} is {} but its events lead to {phase:?}",
            snap.sub.status
        );
    }
}

/// What happened to a subscription, for a failure's message: its events, cycles, freezes and
/// plan changes.
fn history<S: Store>(w: &super::World<S>, org: crate::ids::OrgId, m: &SimSub, snap: &Snapshot) -> String {
    let mut out = format!("subscription {} ({:?}):\n{:#?}\n", m.id, m.card, snap.sub);
    let invoices: BTreeSet<uuid::Uuid> = m.invoices.keys().map(|i| i.0).collect();
    for e in w.read(|tx| tx.list_events(org)) {
        if e.entity_id == m.id.0
            || invoices.contains(&e.entity_id)
            || e.payload["data"]["invoice"]["id"]
                .as_str()
                .is_some_and(|i| invoices.iter().any(|x| x.to_string() == i))
        {
            out += &format!(
                "  {} {} {} status={} cycle={} period={}..{} {}\n",
                crate::clock::format_rfc3339(&e.created_at),
                e.event_type.as_str(),
                e.entity_id,
                e.payload["status"],
                e.payload["data"]["current_cycle_number"],
                e.payload["data"]["current_period_start"],
                e.payload["data"]["current_period_end"],
                e.payload["data"]["freeze"]
            );
        }
    }
    out += &format!("cycles: {:?}\n", snap.cycles);
    for (i, k) in &m.invoices {
        out += &format!(
            "  invoice {i}: {} {} due {} made {} payments {:?}\n",
            k.invoice.status,
            k.invoice.total_amount,
            k.invoice.scheduled_on,
            k.invoice.created_at,
            k.payments.iter().map(|p| (p.status, p.method)).collect::<Vec<_>>()
        );
    }
    out += &format!(
        "freezes: {:#?}\nscheduled change: {:?}\n",
        snap.freezes,
        snap.scheduled.as_ref().map(|c| (c.effective_cycle, c.effective_at))
    );
    out
}

/// Reads what the checks need of one subscription in one transaction.
fn snapshot<S: Store>(sim: &Sim<S>, m: &SimSub, branch: crate::ids::BranchId) -> Snapshot {
    let id = m.id;
    sim.w.read(|tx: &mut dyn Tx| {
        let sub = tx.subscription(branch, id)?.expect("the subscription");
        let cycles = tx.subscription_cycles(id)?;
        let freezes = tx.subscription_freezes(id)?;
        let scheduled = tx.scheduled_plan_change(id)?;
        let changes = tx.plan_changes(id)?;
        let mut read = vec![];
        let mut wanted: BTreeSet<InvoiceId> = m.invoices.iter().filter(|(_, k)| !k.is_final).map(|(i, _)| *i).collect();
        wanted.extend(cycles.iter().map(|(_, i)| *i).filter(|i| !m.invoices.contains_key(i)));
        for inv_id in wanted {
            let invoice = tx.invoice(branch, inv_id)?.expect("an invoice of the subscription");
            let payments = tx.invoice_payments(inv_id)?;
            let is_final = matches!(invoice.status, InvoiceStatus::Completed | InvoiceStatus::Canceled);
            read.push((inv_id, Known { invoice, payments, is_final }));
        }
        Ok(Snapshot {
            sub,
            cycles,
            freezes,
            scheduled,
            changes,
            read,
        })
    })
}

struct Facts<'a> {
    ctx: &'a str,
    now: Timestamp,
    lead: Duration,
    last_retry: Duration,
    ran: bool,
}

fn paid(k: &Known) -> bool {
    k.invoice.status == InvoiceStatus::Completed || k.payments.iter().any(|p| p.status.is_paid())
}

impl Facts<'_> {
    /// Invariants 1 to 4 and 6 for one subscription.
    fn check_sub(&self, m: &SimSub, snap: &Snapshot) {
        let ctx = self.ctx;
        let now = self.now;
        let s = &snap.sub;
        let id = s.id;
        let cur = s.current_cycle_number;
        let known = |i: &InvoiceId| m.invoices.get(i).unwrap_or_else(|| panic!("{ctx}: {id}: cycle invoice {i} was never listed"));
        // 1. The cycle rows: 1..=cur, and cur + 1 when prepared.
        let numbers: Vec<u32> = snap.cycles.iter().map(|(n, _)| *n).collect();
        let expected: Vec<u32> = (1..=cur).collect();
        let prepared = snap.cycles.iter().find(|(n, _)| *n == cur + 1).map(|(_, i)| known(i));
        let with_next: Vec<u32> = (1..=cur + 1).collect();
        assert!(
            numbers == expected || numbers == with_next,
            "{ctx}: {id} ({}) is in cycle {cur} but has invoices for cycles {numbers:?}",
            s.status
        );
        let rows: BTreeSet<InvoiceId> = snap.cycles.iter().map(|(_, i)| *i).collect();
        for (inv_id, k) in &m.invoices {
            if !rows.contains(inv_id) {
                assert_eq!(
                    k.invoice.status,
                    InvoiceStatus::Canceled,
                    "{ctx}: {id}: invoice {inv_id} of no cycle is not canceled (a second invoice for a cycle?)"
                );
            }
        }
        let mut last: Option<Timestamp> = None;
        for (n, i) in &snap.cycles {
            let k = known(i);
            if let Some(prev) = last {
                assert!(
                    k.invoice.scheduled_on > prev,
                    "{ctx}: {id}: cycle {n}'s invoice is due before the previous cycle's"
                );
            }
            last = Some(k.invoice.scheduled_on);
        }
        if cur >= 1 {
            let (_, current) = snap.cycles.iter().find(|(n, _)| *n == cur).expect("checked");
            assert_eq!(s.latest_invoice_id, Some(*current), "{ctx}: {id}: the latest invoice is not cycle {cur}'s");
            let k = known(current);
            // Paid ahead, a prepared invoice is kept as it is when a freeze then moves the period
            // end (the cycle it paid for starts later): only an open one is issued again.
            let paid_ahead = paid(k) && k.invoice.scheduled_on < s.current_period_start && k.invoice.created_at < s.current_period_start;
            assert!(
                k.invoice.scheduled_on == s.current_period_start || paid_ahead,
                "{ctx}: {id}: cycle {cur}'s invoice is due at {}, not at its start {}",
                k.invoice.scheduled_on,
                s.current_period_start
            );
            if k.invoice.status != InvoiceStatus::Canceled {
                assert_eq!(
                    s.latest_invoice_paid,
                    paid(k),
                    "{ctx}: {id}: latest_invoice_paid disagrees with invoice {current}"
                );
            }
        }
        if let Some(p) = prepared {
            if !paid(p) && p.invoice.status != InvoiceStatus::Canceled {
                assert_eq!(
                    p.invoice.scheduled_on, s.current_period_end,
                    "{ctx}: {id}: the prepared invoice {} is not due at the period end",
                    p.invoice.id
                );
                // 4. An open prepared invoice bills the next cycle's plan; or the plan of a
                // change it was issued (or issued again) for and that was then withdrawn by
                // DELETE pending-change, which leaves that invoice as it is (as the spec says of
                // a re-issued one).
                let plan = snap
                    .scheduled
                    .as_ref()
                    .filter(|c| c.effective_cycle == cur + 1)
                    .map(|c| c.target.amount)
                    .unwrap_or(s.amount);
                let withdrawn = snap.changes.iter().any(|c| {
                    c.status == PlanChangeStatus::Canceled
                        && c.effective_cycle == cur + 1
                        && c.target.amount == p.invoice.total_amount
                        && c.updated_at.is_some_and(|at| p.invoice.created_at <= at)
                });
                assert!(
                    p.invoice.total_amount == plan || withdrawn,
                    "{ctx}: {id}: the prepared invoice bills {}, the next cycle's plan {plan}",
                    p.invoice.total_amount
                );
            }
        }
        // 2. No invoice of a period inside a freeze: none due in one (its start excluded: a
        // freeze starting now follows what was issued now), none issued during one for a
        // period starting in it. (An invoice issued during a freeze for a period that began
        // before it is a late renewal at a boundary before the freeze: a subscription
        // reactivated by paying an overdue invoice is billed the cycles it missed.)
        let happened: Vec<&Freeze> = snap.freezes.iter().filter(|f| f.state != FreezeState::Scheduled).collect();
        for (n, i) in &snap.cycles {
            let k = known(i);
            if k.invoice.status == InvoiceStatus::Canceled {
                continue;
            }
            let (made, due) = (k.invoice.created_at, k.invoice.scheduled_on);
            for f in &happened {
                assert!(
                    !(f.start < made && f.covers(made) && due >= f.start),
                    "{ctx}: {id}: cycle {n}'s invoice {i}, due {due}, was issued at {made} during freeze {} ({} to {:?})",
                    f.id,
                    f.start,
                    f.end
                );
                if !paid(k) {
                    assert!(
                        !(f.start < due && f.covers(due)),
                        "{ctx}: {id}: cycle {n}'s invoice {i} is due at {due} during freeze {} ({} to {:?})",
                        f.id,
                        f.start,
                        f.end
                    );
                }
            }
        }
        // 3. Over: nothing after the end. An invoice issued after the end is one of a cycle
        // before it (a subscription reactivated by paying an overdue invoice is billed the
        // cycles it missed, then ends where it was due to); nothing is issued once it was seen
        // over (the scan of new invoices).
        if s.status.is_terminal() {
            let ended = s.ended_at.expect("an end");
            for (inv_id, k) in &m.invoices {
                let (made, due) = (k.invoice.created_at, k.invoice.scheduled_on);
                assert!(
                    made <= ended || due < ended,
                    "{ctx}: {id} ended at {ended} but invoice {inv_id}, due {due}, was issued at {made}"
                );
            }
            if let Some(p) = prepared {
                assert!(
                    paid(p) || p.invoice.status == InvoiceStatus::Canceled,
                    "{ctx}: {id} is over but the invoice of cycle {} (after its end) is open",
                    cur + 1
                );
            }
            assert!(snap.scheduled.is_none(), "{ctx}: {id} is over with a SCHEDULED plan change");
            assert!(
                snap.freezes.iter().all(|f| f.state == FreezeState::Ended),
                "{ctx}: {id} is over with a freeze not ended"
            );
        }
        if let Some(u) = s.until_cycle_number {
            // The last cycle may be lowered below the cycles already prepared only with one paid.
            if cur > u {
                panic!("{ctx}: {id} is in cycle {cur} beyond until_cycle_number {u}");
            }
        }
        // 6. Nothing due skipped.
        if !self.ran {
            return;
        }
        match s.status {
            SubscriptionStatus::Active => {
                assert!(
                    s.current_period_end > now,
                    "{ctx}: {id} is ACTIVE but its period ended at {}",
                    s.current_period_end
                );
            }
            SubscriptionStatus::Trialing => {
                assert!(
                    s.current_period_end > now,
                    "{ctx}: {id} is TRIALING but its trial ended at {}",
                    s.current_period_end
                );
                assert!(snap.cycles.is_empty(), "{ctx}: {id} is TRIALING with an invoice");
            }
            _ => {}
        }
        let ends = s.cancel_at_period_end || s.until_cycle_number.is_some_and(|u| cur >= u);
        let frozen_ahead = snap.freezes.iter().any(|f| f.state != FreezeState::Ended && f.start <= s.current_period_end);
        if s.status == SubscriptionStatus::Active && self.lead > Duration::zero() && !ends && !frozen_ahead && now >= s.current_period_end - self.lead {
            assert!(
                prepared.is_some(),
                "{ctx}: {id}: the invoice of cycle {} is due to be prepared since {}",
                cur + 1,
                s.current_period_end - self.lead
            );
        }
        if m.stable && m.auto_renewal && matches!(s.status, SubscriptionStatus::Active | SubscriptionStatus::Frozen) && (cur >= 2 || m.trial) {
            let current = snap.cycles.iter().find(|(n, _)| *n == cur).map(|(_, i)| known(i)).expect("checked");
            let due = current.invoice.scheduled_on;
            let open = !paid(current) && current.invoice.status != InvoiceStatus::Canceled;
            match m.card {
                Card::Approves if open && now > due + Duration::minutes(5) => {
                    panic!("{ctx}: {id}: cycle {cur}'s invoice, due {due}, is not paid though the card approves")
                }
                Card::Declines | Card::None if open && now > due + self.last_retry + Duration::days(1) => {
                    panic!(
                        "{ctx}: {id} is {} though cycle {cur}'s invoice, due {due}, is unpaid after every retry",
                        s.status
                    )
                }
                _ => {}
            }
        }
    }

    fn check_previews(&self, m: &mut SimSub, snap: &Snapshot) {
        let ctx = self.ctx;
        let id = m.id;
        let status_of = |c: PlanChangeId| snap.changes.iter().find(|x| x.id == c).map(|x| x.status);
        let mut keep = vec![];
        for mut p in std::mem::take(&mut m.previews) {
            if snap.freezes.iter().any(|f| f.start < p.period_start && f.end.is_none_or(|e| e >= p.made_at)) {
                p.moved = true;
            }
            let status = status_of(p.change);
            if !matches!(status, Some(PlanChangeStatus::Applied | PlanChangeStatus::Scheduled)) || snap.sub.status.is_terminal() {
                continue;
            }
            // A later change in force by the preview's cycle bills that cycle instead.
            let superseded = snap.changes.iter().any(|c| {
                c.id != p.change
                    && c.created_at >= p.made_at
                    && matches!(c.status, PlanChangeStatus::Applied | PlanChangeStatus::Scheduled)
                    && c.effective_cycle <= p.cycle
            });
            if superseded {
                continue;
            }
            let issued = snap.cycles.iter().find(|(n, _)| *n == p.cycle).and_then(|(_, i)| m.invoices.get(i));
            match issued {
                Some(k) if k.invoice.status != InvoiceStatus::Canceled => {
                    assert_eq!(
                        k.invoice.total_amount.minor_units(),
                        p.total.minor_units(),
                        "{ctx}: {id}: the invoice of cycle {} does not bill the preview of change {}",
                        p.cycle,
                        p.change
                    );
                    if !p.moved {
                        assert_eq!(
                            k.invoice.scheduled_on, p.period_start,
                            "{ctx}: {id}: the invoice of cycle {} does not start when change {}'s preview said",
                            p.cycle, p.change
                        );
                    }
                    if status != Some(PlanChangeStatus::Applied) {
                        keep.push(p);
                    }
                }
                _ => keep.push(p),
            }
        }
        m.previews = keep;
    }
}

impl Checker {
    /// Prints what the run did, and (for a run of the default size or larger) fails when it
    /// did not exercise what it is about.
    pub fn assert_coverage<S: Store>(&self, sim: &Sim<S>) {
        eprintln!(
            "subscription simulation: {} subscriptions, {} steps, events {:?}",
            sim.subs.len(),
            sim.step,
            self.counts
        );
        if sim.cfg.subscriptions < 100 || sim.cfg.days < 365 {
            return;
        }
        for t in [
            EventType::SubscriptionActivated,
            EventType::PaymentSucceeded,
            EventType::PaymentMarkedAsPaid,
            EventType::SubscriptionCycleRenewalFailed,
            EventType::SubscriptionInactivated,
            EventType::SubscriptionPlanChangeScheduled,
            EventType::SubscriptionPlanChanged,
            EventType::SubscriptionPlanChangeCanceled,
            EventType::SubscriptionFreezeNow,
            EventType::SubscriptionUnfreezeNow,
            EventType::SubscriptionCancelAtPeriodEnd,
            EventType::SubscriptionCanceled,
            EventType::InvoiceCanceled,
        ] {
            assert!(self.counts.get(t.as_str()).copied().unwrap_or(0) > 0, "the run had no {}", t.as_str());
        }
    }
}
