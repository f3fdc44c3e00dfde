//! Reads made ahead, together, for a batch: a renewal batch's
//! (`SubscriptionTx::prefetch_renewals`): the subscriptions with their items, their freezes, scheduled plan changes and cycles, and their
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
//!
//! The machinery here knows no resource: each resource keeps what was read ahead of it in a
//! [`ReadAhead`] part of its own (in its file, with the reads that fill it and the lookups that
//! take from it), and the batch's reads install the parts together (`PgTx::read_ahead`).

use std::any::Any;
use std::collections::HashMap;
use uuid::Uuid;

/// A row as read, as the JSON object of its row type.
pub(crate) type Original = serde_json::Map<String, serde_json::Value>;

/// A resource's share of what a batch read ahead.
pub(crate) trait ReadAhead: Any {
    /// Whether nothing is kept.
    fn is_empty(&self) -> bool;
    /// Forgets what is kept under `id` (a subscription's parts, an invoice with its payments).
    fn forget(&mut self, id: Uuid);
}

/// What a batch read ahead: the resources' parts, and the originals of the rows taken.
#[derive(Default)]
pub(crate) struct Prefetched {
    parts: Vec<Box<dyn ReadAhead>>,
    /// Subscriptions', invoices' and payments' rows as this pass read them (see the module),
    /// by the row's id, as the JSON of their row types.
    originals: HashMap<Uuid, Original>,
}

impl Prefetched {
    /// What a batch's reads found, replacing whatever was read ahead before.
    pub(crate) fn new(parts: Vec<Box<dyn ReadAhead>>) -> Self {
        Prefetched {
            parts,
            originals: HashMap::new(),
        }
    }

    /// The part of type `A`, if one was read ahead.
    pub(crate) fn part<A: ReadAhead>(&mut self) -> Option<&mut A> {
        self.parts.iter_mut().find_map(|p| (&mut **p as &mut dyn Any).downcast_mut::<A>())
    }

    /// [`Self::part`], to look at.
    pub(crate) fn part_ref<A: ReadAhead>(&self) -> Option<&A> {
        self.parts.iter().find_map(|p| (&**p as &dyn Any).downcast_ref::<A>())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.parts.iter().all(|p| p.is_empty()) && self.originals.is_empty()
    }

    /// Forgets what was read ahead: all of it (`None`), or what is kept under one id: a
    /// subscription's parts, or an invoice with its payments (ids are never shared between the
    /// two). The rows' originals stay with `Some`: the writes of a row apart take its original
    /// themselves (`take_original`), and a write of a subscription's cycle or an invoice's
    /// payment leaves the subscription's or invoice's row as it was.
    pub(crate) fn forget(&mut self, id: Option<Uuid>) {
        match id {
            None if !self.is_empty() => *self = Prefetched::default(),
            None => {}
            Some(id) => self.parts.iter_mut().for_each(|p| p.forget(id)),
        }
    }

    /// Keeps `row` as the database holds row `id` (read ahead), for its deferred update.
    pub(crate) fn keep_original(&mut self, id: Uuid, row: Original) {
        self.originals.insert(id, row);
    }

    /// The row `id` as read ahead in this pass and not written since, taken.
    pub(crate) fn take_original(&mut self, id: Uuid) -> Option<Original> {
        self.originals.remove(&id)
    }
}
