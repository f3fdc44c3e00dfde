//! The storage contract. A [`Store`] runs closures in transactions; a [`Tx`] is the set of
//! reads and writes available inside one, made of one slice per resource (each defined in the
//! resource's `store` module and implemented in a file of its own by every store). Every
//! operation of the core is one transaction, and the events and notifications it records are
//! written in that same transaction, so they commit together or not at all.
//!
//! The invariants below are what `billing_core::testkit` checks against every implementation.

use crate::error::Result;
use std::cell::Cell;

pub use crate::error::StoreResult;

/// A transactional store.
///
/// - `write` runs `f` in a read-write transaction. If `f` returns `Err`, nothing it wrote is
///   kept. If it returns `Ok`, the transaction is durable (on disk) before `write` returns. An
///   implementation may commit several concurrent transactions together (group commit), but
///   never answers one before its commit, and a failing one never takes others with it.
/// - `write` may call `f` more than once when the backend reports a serialization conflict, so
///   `f` must not have effects outside the transaction.
/// - `read` runs `f` against a consistent snapshot and never waits for a writer.
/// - While `f` runs, [`transaction_open`] is true on the calling thread (see [`OpenTransaction`]).
/// - A host that serves idempotency keys wraps every write closure with
///   [`marking`] (the server's store does), so that an operation run under a
///   key marks it in each transaction it commits.
pub trait Store: Send + Sync + 'static {
    fn read<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R>;
    fn write<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R>;
    /// Like `write`, for the due-work queue's transactions (claims, and the transactions that
    /// complete or reschedule a claimed item): every row they change is either taken with
    /// `FOR UPDATE SKIP LOCKED` or guarded by the lease check of `complete_work` /
    /// `reschedule_work`, which locks the item's row. Such a transaction is correct with only
    /// row locks, so a store may run it with weaker isolation than `write` (PostgreSQL: READ
    /// COMMITTED rather than SERIALIZABLE, where a busy queue's neighbouring index entries
    /// would make concurrent claims and attempts abort each other). A store may also commit it
    /// without waiting for the disk: losing such a commit in a crash only makes the work run
    /// again (claims lapse, completions are redone), which at-least-once work allows. What the
    /// work produces for clients (a delivery log entry) becomes durable with the next commit.
    /// Its closure ends at its first failed statement (it returns the error rather than carry
    /// on), so a store need not make each write recoverable (PostgreSQL: no savepoints).
    fn write_leased<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.write(f)
    }
    /// Like `write` (and as durable), for a transaction that only inserts new rows and whose
    /// every rule is kept by a unique index (its reads, such as a duplicate check that makes a
    /// friendlier error, may miss a concurrent insert: the index then refuses the row with a
    /// `UniqueViolation`). A store may run it with weaker isolation than `write` (PostgreSQL:
    /// READ COMMITTED, where concurrent inserts into one branch would otherwise abort each
    /// other on shared index pages). Like `write_leased`, its closure ends at its first failed
    /// statement.
    fn write_inserts<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.write(f)
    }
    /// Runs `f` once for each of `items`, as `write` would run it alone (as durable, as
    /// isolated, and with a failing `f` keeping nothing of its own writes), but lets the store
    /// run them together in one transaction with a savepoint per item: an item whose `f`
    /// fails is rolled back to its savepoint and does not affect the others. Returns each
    /// item's result, in `items`' order, once the kept writes are durable; when the shared
    /// commit fails, every item fails. The items run one after another on the calling thread,
    /// in order, and a later item sees what an earlier one wrote. Like `write`, a store may run
    /// `f` for an item more than once. Due work claimed in a batch runs its items this way
    /// (a renewal day: one commit per claim instead of one per subscription). The default
    /// runs one `write` per item.
    fn write_each<T, R>(&self, items: &[T], mut f: impl FnMut(&mut dyn Tx, &T) -> Result<R>) -> Vec<Result<R>> {
        items.iter().map(|item| self.write(|tx| f(tx, item))).collect()
    }
    /// Like `read`, for a closure that normally runs a single statement (a lookup by id). A
    /// store may run it without an explicit transaction, one statement being its own snapshot;
    /// one that does must notice when the closure ran more than one statement after all and then
    /// run it again in a transaction, so the answer is always from one snapshot.
    fn read_one<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.read(f)
    }
    /// A counter that moves whenever an organization, branch, user or API key changes, in this
    /// process (before the changing `write` returns) or in any other process on the same
    /// database (soon after its commit), or `None` when the store cannot tell right now. The
    /// engine keeps authentications only while it stays the same (see `auth::cache`); stores
    /// whose lookups are cheap answer `None` and are asked every time.
    fn auth_generation(&self) -> Option<u64> {
        None
    }
    /// Returns once every other process on the database has had time to hear of the auth
    /// changes committed so far (PostgreSQL: twice the feed's poll interval), so that an
    /// operation such as a key revocation is in force everywhere when it answers. Stores of one
    /// process return at once.
    fn await_auth_propagation(&self) {}
}

/// Declares [`Tx`] from one list of slices: the trait's bounds and the blanket impl (every type
/// with all the slices is a `Tx`) both come from it, so a new resource's slice is one line of
/// the list below.
macro_rules! tx_of_slices {
    ($(#[$meta:meta])* $($slice:path),+ $(,)?) => {
        $(#[$meta])*
        pub trait Tx: $($slice +)+ {}

        impl<T> Tx for T where T: $($slice +)+ ?Sized {}
    };
}

tx_of_slices! {
    /// Reads and writes inside one transaction: every resource's slice.
    ///
    /// List ordering, the same on every backend: rows sort by the requested field, ties broken by
    /// id in the same direction; a missing (NULL) value sorts first ascending and last descending;
    /// text sorts in byte order (so case-sensitively). Searches are case-insensitive for all of
    /// Unicode, not only ASCII.
    ///
    /// Conventions: lookups return `Ok(None)` for a missing row; a row of another organization or
    /// branch than the one asked for is missing. `insert_*` of an existing id is a
    /// `StoreError::UniqueViolation`. `update_*` replaces every stored field of the row with the
    /// given value (derived fields such as `Branch::user_count` and `Coupon::redemptions` are not
    /// written). Timestamps round-trip with microsecond precision; money round-trips exactly
    /// (stored in thousandths, [`crate::money::stored`]).
    crate::org::OrgTx,
    crate::auth::ApiKeyTx,
    crate::branch::BranchTx,
    crate::notification::NotificationTx,
    crate::consumer::ConsumerTx,
    crate::product::ProductTx,
    crate::coupon::CouponTx,
    crate::event::EventTx,
    crate::invoice::InvoiceTx,
    crate::payment::PaymentTx,
    crate::payment_link::PaymentLinkTx,
    crate::subscription::SubscriptionTx,
    crate::subscription::FreezeTx,
    crate::subscription::TrialTx,
    crate::subscription::PlanChangeTx,
    crate::work::WorkTx,
    crate::webhook::WebhookTx,
    crate::idempotency::IdempotencyTx,
}

/// Wraps a write closure so that it [`crate::idempotency::mark`]s the active claim, if any, before it returns.
pub fn marking<R>(mut f: impl FnMut(&mut dyn Tx) -> Result<R>) -> impl FnMut(&mut dyn Tx) -> Result<R> {
    move |tx| {
        let out = f(tx)?;
        crate::idempotency::mark(tx)?;
        Ok(out)
    }
}

thread_local! {
    static OPEN: Cell<u32> = const { Cell::new(0) };
}

/// Marks a store transaction (or a write batch) open on this thread for its lifetime. Stores
/// hold one while they run a caller's closure, so that the core can refuse an outside call
/// (a gateway, a webhook receiver) made inside a transaction: see [`crate::Lane::Io`].
pub struct OpenTransaction(());

impl OpenTransaction {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        OPEN.with(|o| o.set(o.get() + 1));
        OpenTransaction(())
    }
}

impl Drop for OpenTransaction {
    fn drop(&mut self) {
        OPEN.with(|o| o.set(o.get().saturating_sub(1)));
    }
}

/// Whether a store transaction is open on this thread.
pub fn transaction_open() -> bool {
    OPEN.with(|o| o.get() > 0)
}
