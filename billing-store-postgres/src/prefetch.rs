//! A renewal batch's reads, made together (`SubscriptionTx::prefetch_renewals`): the
//! subscriptions with their items, their freezes, scheduled plan changes and cycles, and their
//! consumers' latest active cards, in six statements for the whole batch instead of six per
//! renewal. Each renewal then takes its part. And an outcome batch's
//! (`InvoiceTx::prefetch_invoices`): the invoices with their lines, their payments and their
//! consumers, and what marking their subscriptions paid looks at, in four.
//!
//! What a read then answers must be what the database would answer at that moment, so what was
//! read is forgotten:
//! - all of it, on any write that is not marked apart (`PgTx::write`, `change`) and when a
//!   batch rolls an item back (`forget_reads`);
//! - a subscription's, when it is written apart (`update_subscription_row`,
//!   `mark_latest_invoice_paid`) or a cycle of it is recorded; an invoice's row, when it is
//!   written apart (`update_invoice_row`); an invoice's payments, when one of them is;
//! - a subscription's row, freezes and plan change, an invoice, its payments and a consumer once
//!   taken (a second read goes to the database).
//!
//! A row taken in a batch's first pass is also kept as it was read (`originals`), so that its
//! update, sent at the end with the others, sets only the columns that changed (`deferred`,
//! `send_updates`): fewer values for PostgreSQL to parse and convert, none of the JSON columns
//! a renewal leaves alone. An original stays true until the row is written: every write of a
//! subscription's, invoice's or payment's row apart takes it (`take_original`: the row updates
//! and `mark_latest_invoice_paid`), and any other write forgets all of them with the rest.

use crate::consumer::{consumers, ConsumerRow};
use crate::invoice::{invoices, InvoiceRow};
use crate::payment::{payments, tokenized_cards, CardRow, PaymentRow};
use crate::subscription::{subscription_cycles, subscription_plan_changes, subscriptions, PlanChangeRow, SubRow};
use crate::subscription_freeze::{subscription_freezes, FreezeRow};
use crate::support::*;
use billing_model::consumer::Consumer;
use billing_model::ids::{BranchId, ConsumerId, InvoiceId, SubscriptionId};
use billing_model::invoice::Invoice;
use billing_model::payment::{Payment, TokenizedCard};
use billing_model::subscription::{Freeze, PlanChange, PlanChangeStatus, Subscription};
use diesel::prelude::*;
use std::collections::HashMap;

/// What a renewal batch read ahead, by subscription (cards by consumer).
#[derive(Debug, Default)]
pub(crate) struct Prefetched {
    subs: HashMap<Uuid, Subscription>,
    freezes: HashMap<Uuid, Vec<Freeze>>,
    changes: HashMap<Uuid, Option<PlanChange>>,
    cycles: HashMap<Uuid, Vec<(u32, InvoiceId)>>,
    cards: HashMap<Uuid, Option<TokenizedCard>>,
    /// An outcome batch's invoices (with their lines), their payments (by invoice) and
    /// consumers.
    invoices: HashMap<Uuid, Invoice>,
    payments: HashMap<Uuid, Vec<Payment>>,
    consumers: HashMap<Uuid, Consumer>,
    /// What marking a subscription's latest invoice paid looks at, for the subscriptions of
    /// an outcome batch's invoices.
    marks: HashMap<Uuid, MarkState>,
    /// Subscriptions', invoices' and payments' rows as this pass read them (see the module),
    /// by the row's id, as the JSON of their row types.
    originals: HashMap<Uuid, serde_json::Map<String, serde_json::Value>>,
}

/// The columns of a subscription's row that `mark_latest_invoice_paid` reads.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = subscriptions)]
pub(crate) struct MarkState {
    id: Uuid,
    branch_id: Uuid,
    latest_invoice_id: Option<Uuid>,
    latest_invoice_paid: bool,
    status: String,
}

impl MarkState {
    /// Whether marking `invoice` paid, for `branch` and in one of `statuses`, would change it.
    pub(crate) fn marks(&self, branch: BranchId, invoice: InvoiceId, statuses: &[&str]) -> bool {
        self.branch_id == branch.0 && self.latest_invoice_id == Some(invoice.0) && !self.latest_invoice_paid && statuses.contains(&self.status.as_str())
    }
}

impl Prefetched {
    fn is_empty(&self) -> bool {
        self.subs.is_empty()
            && self.freezes.is_empty()
            && self.changes.is_empty()
            && self.cycles.is_empty()
            && self.cards.is_empty()
            && self.invoices.is_empty()
            && self.payments.is_empty()
            && self.consumers.is_empty()
            && self.marks.is_empty()
            && self.originals.is_empty()
    }
}

impl PgTx<'_> {
    pub(crate) fn prefetch_renewals(&mut self, ids: &[SubscriptionId]) -> StoreResult<()> {
        // Its reads see what the transaction has written, sent or not (at a batch's start,
        // nothing is pending).
        self.flush()?;
        let ids: Vec<Uuid> = ids.iter().map(|x| x.0).collect();
        let rows: Vec<SubRow> = self.read_apart(|c| {
            use subscriptions::dsl as v;
            v::subscriptions.filter(v::id.eq_any(&ids)).select(SubRow::as_select()).load(c)
        })?;
        let subs = self.sub_items_of(rows)?;
        let freezes: Vec<FreezeRow> = self.read_apart(|c| {
            use subscription_freezes::dsl as f;
            f::subscription_freezes
                .filter(f::subscription_id.eq_any(&ids))
                .filter(f::deleted_at.is_null())
                .order_by((f::subscription_id, f::starts_at, f::id))
                .select(FreezeRow::as_select())
                .load(c)
        })?;
        let changes: Vec<PlanChangeRow> = self.read_apart(|c| {
            use subscription_plan_changes::dsl as pc;
            pc::subscription_plan_changes
                .filter(pc::subscription_id.eq_any(&ids))
                .filter(pc::status.eq(PlanChangeStatus::Scheduled.as_str()))
                .select(PlanChangeRow::as_select())
                .load(c)
        })?;
        let cycles: Vec<(Uuid, i64, Uuid)> = self.read_apart(|c| {
            use subscription_cycles::dsl as y;
            y::subscription_cycles
                .filter(y::subscription_id.eq_any(&ids))
                .order_by((y::subscription_id, y::cycle_number))
                .select((y::subscription_id, y::cycle_number, y::invoice_id))
                .load(c)
        })?;
        let consumers: Vec<Uuid> = subs.iter().map(|s| s.consumer_id.0).collect();
        let cards: Vec<CardRow> = self.read_apart(|c| {
            use tokenized_cards::dsl as t;
            t::tokenized_cards
                .filter(t::consumer_id.eq_any(&consumers))
                .filter(t::is_active.eq(true))
                .distinct_on(t::consumer_id)
                .order_by((t::consumer_id, t::created_at.desc(), t::id.desc()))
                .select(CardRow::as_select())
                .load(c)
        })?;
        let mut p = Prefetched::default();
        for id in &ids {
            p.freezes.insert(*id, vec![]);
            p.changes.insert(*id, None);
            p.cycles.insert(*id, vec![]);
        }
        for f in freezes {
            let f = f.into_domain()?;
            p.freezes.entry(f.subscription_id.0).or_default().push(f);
        }
        for c in changes {
            let c = c.into_domain()?;
            p.changes.insert(c.subscription_id.0, Some(c));
        }
        for (s, n, i) in cycles {
            let n = u32::try_from(n).map_err(|_| unreadable("cycle number", n))?;
            p.cycles.entry(s).or_default().push((n, i.into()));
        }
        for consumer in &consumers {
            p.cards.insert(*consumer, None);
        }
        for c in cards {
            let c = c.into_domain();
            p.cards.insert(c.consumer_id.0, Some(c));
        }
        p.subs = subs.into_iter().map(|s| (s.id.0, s)).collect();
        self.prefetched = p;
        Ok(())
    }

    pub(crate) fn prefetch_invoices(&mut self, ids: &[InvoiceId]) -> StoreResult<()> {
        // Its reads see what the transaction has written, sent or not (at a batch's start,
        // nothing is pending).
        self.flush()?;
        let ids: Vec<Uuid> = ids.iter().map(|x| x.0).collect();
        let rows: Vec<InvoiceRow> = self.read_apart(|c| {
            use invoices::dsl as i;
            i::invoices.filter(i::id.eq_any(&ids)).select(InvoiceRow::as_select()).load(c)
        })?;
        let invoices = self.items_of(rows)?;
        let payments: Vec<PaymentRow> = self.read_apart(|c| {
            use payments::dsl as p;
            p::payments
                .filter(p::invoice_id.eq_any(&ids))
                .order_by((p::invoice_id, p::number, p::id))
                .select(PaymentRow::as_select())
                .load(c)
        })?;
        let consumer_ids: Vec<Uuid> = invoices.iter().map(|i| i.consumer_id.0).collect();
        let consumers: Vec<ConsumerRow> = self.read_apart(|c| {
            use consumers::dsl as k;
            k::consumers.filter(k::id.eq_any(&consumer_ids)).select(ConsumerRow::as_select()).load(c)
        })?;
        let subscription_ids: Vec<Uuid> = invoices.iter().filter_map(|i| i.subscription_id).collect();
        let marks: Vec<MarkState> = match subscription_ids.is_empty() {
            true => vec![],
            false => self.read_apart(|c| {
                use subscriptions::dsl as v;
                v::subscriptions.filter(v::id.eq_any(&subscription_ids)).select(MarkState::as_select()).load(c)
            })?,
        };
        let mut p = Prefetched {
            marks: marks.into_iter().map(|m| (m.id, m)).collect(),
            ..Default::default()
        };
        for inv in &invoices {
            p.payments.insert(inv.id.0, vec![]);
        }
        for row in payments {
            let x = row.into_domain()?;
            if let Some(list) = p.payments.get_mut(&x.invoice_id.0) {
                list.push(x);
            }
        }
        for row in consumers {
            let c = row.into_domain()?;
            p.consumers.insert(c.id.0, c);
        }
        p.invoices = invoices.into_iter().map(|i| (i.id.0, i)).collect();
        self.prefetched = p;
        Ok(())
    }

    /// The invoice as read ahead, once, when it is of `branch` (any, for `None`).
    pub(crate) fn take_prefetched_invoice(&mut self, branch: Option<BranchId>, id: InvoiceId) -> Option<Invoice> {
        match self.prefetched.invoices.get(&id.0) {
            Some(i) if branch.is_none_or(|b| i.branch_id == b) => {
                let inv = self.prefetched.invoices.remove(&id.0)?;
                self.keep_original(inv.id.0, InvoiceRow::new(&inv));
                Some(inv)
            }
            _ => None,
        }
    }

    /// An invoice's payments as read ahead, once.
    pub(crate) fn take_prefetched_payments(&mut self, invoice: InvoiceId) -> Option<Vec<Payment>> {
        let found = self.prefetched.payments.remove(&invoice.0)?;
        for p in &found {
            self.keep_original(p.id.0, PaymentRow::new(p));
        }
        Some(found)
    }

    /// What `mark_latest_invoice_paid` looks at of subscription `id`, as read ahead, once.
    pub(crate) fn take_prefetched_mark(&mut self, id: Uuid) -> Option<MarkState> {
        self.prefetched.marks.remove(&id)
    }

    /// The consumer as read ahead, once, when it is of `branch`.
    pub(crate) fn take_prefetched_consumer(&mut self, branch: BranchId, id: ConsumerId) -> Option<Consumer> {
        match self.prefetched.consumers.get(&id.0) {
            Some(c) if c.branch_id == branch => self.prefetched.consumers.remove(&id.0),
            _ => None,
        }
    }

    /// Forgets what was read ahead: all of it (`None`), or what is kept under one id: a
    /// subscription's parts, or an invoice with its payments (ids are never shared between the
    /// two). The rows' originals stay with `Some`: the writes of a row apart take its original
    /// themselves (`take_original`), and a write of a subscription's cycle or an invoice's
    /// payment leaves the subscription's or invoice's row as it was.
    pub(crate) fn forget_prefetched(&mut self, id: Option<Uuid>) {
        match id {
            None if !self.prefetched.is_empty() => self.prefetched = Prefetched::default(),
            None => {}
            Some(id) => {
                let p = &mut self.prefetched;
                p.subs.remove(&id);
                p.freezes.remove(&id);
                p.changes.remove(&id);
                p.cycles.remove(&id);
                p.invoices.remove(&id);
                p.payments.remove(&id);
                p.marks.remove(&id);
            }
        }
    }

    /// The subscription as read ahead, once, when it is of `branch`.
    pub(crate) fn take_prefetched_subscription(&mut self, branch: BranchId, id: SubscriptionId) -> Option<Subscription> {
        let s = match self.prefetched.subs.get(&id.0) {
            Some(s) if s.branch_id == branch => self.prefetched.subs.remove(&id.0)?,
            _ => return None,
        };
        self.keep_original(s.id.0, SubRow::new(&s));
        Some(s)
    }

    /// Keeps `row` (of a row read ahead) as the database holds it, for its deferred update.
    fn keep_original<R: serde::Serialize>(&mut self, id: Uuid, row: StoreResult<R>) {
        if self.deferred.is_none() {
            return;
        }
        // A row that does not map is simply not kept: its update then sets every column.
        if let Some(serde_json::Value::Object(o)) = row.ok().and_then(|r| serde_json::to_value(r).ok()) {
            self.prefetched.originals.insert(id, o);
        }
    }

    /// The row `id` as read ahead in this pass and not written since, taken: a write of the
    /// row apart calls this first (its deferred update compares with it; any other write of it
    /// makes it stale).
    pub(crate) fn take_original(&mut self, id: Uuid) -> Option<serde_json::Map<String, serde_json::Value>> {
        self.prefetched.originals.remove(&id)
    }

    pub(crate) fn take_prefetched_freezes(&mut self, id: SubscriptionId) -> Option<Vec<Freeze>> {
        self.prefetched.freezes.remove(&id.0)
    }

    pub(crate) fn take_prefetched_plan_change(&mut self, id: SubscriptionId) -> Option<Option<PlanChange>> {
        self.prefetched.changes.remove(&id.0)
    }

    /// The invoice of a subscription's cycle as read ahead (`None`: not read ahead).
    pub(crate) fn prefetched_cycle_invoice(&self, id: SubscriptionId, cycle: u32) -> Option<Option<InvoiceId>> {
        let cycles = self.prefetched.cycles.get(&id.0)?;
        Some(cycles.iter().find(|(n, _)| *n == cycle).map(|(_, i)| *i))
    }

    /// A consumer's latest active card as read ahead (`None`: not read ahead).
    pub(crate) fn prefetched_card(&self, consumer: Uuid) -> Option<Option<TokenizedCard>> {
        self.prefetched.cards.get(&consumer).cloned()
    }
}
