//! The storage contract. A [`Store`] runs closures in transactions; a [`Tx`] is the set of
//! reads and writes available inside one. Every operation of the core is one transaction, and
//! the events and notifications it records are written in that same transaction, so they
//! commit together or not at all.
//!
//! The invariants below are what `billing_core::testkit` checks against every implementation.

use crate::auth::ApiKey;
use crate::branch::Branch;
use crate::consumer::{Consumer, ConsumerFilter, ConsumerSort};
use crate::coupon::{Coupon, CouponFilter, CouponSort};
use crate::error::{Result, StoreError};
use crate::event::Event;
use crate::ids::{BranchId, ConsumerId, CouponId, OrgId, ProductId, UserId};
use crate::list::{ListQuery, Page};
use crate::money::Currency;
use crate::notification::Notification;
use crate::org::{Invitation, Organization, User};
use crate::product::{Product, ProductFilter, ProductSort};

pub type StoreResult<T> = std::result::Result<T, StoreError>;

/// A transactional store.
///
/// - `write` runs `f` in a read-write transaction. If `f` returns `Err`, nothing it wrote is
///   kept. If it returns `Ok`, the transaction is durable (on disk) before `write` returns. An
///   implementation may commit several concurrent transactions together (group commit), but
///   never answers one before its commit, and a failing one never takes others with it.
/// - `write` may call `f` more than once when the backend reports a serialization conflict, so
///   `f` must not have effects outside the transaction.
/// - `read` runs `f` against a consistent snapshot and never waits for a writer.
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
    fn write_leased<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.write(f)
    }
    /// Like `write` (and as durable), for a transaction that only inserts new rows and whose
    /// every rule is kept by a unique index (its reads, such as a duplicate check that makes a
    /// friendlier error, may miss a concurrent insert: the index then refuses the row with a
    /// `UniqueViolation`). A store may run it with weaker isolation than `write` (PostgreSQL:
    /// READ COMMITTED, where concurrent inserts into one branch would otherwise abort each
    /// other on shared index pages).
    fn write_inserts<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        self.write(f)
    }
}

/// Reads and writes inside one transaction.
///
/// List ordering, the same on every backend: rows sort by the requested field, ties broken by
/// id in the same direction; a missing (NULL) value sorts first ascending and last descending;
/// text sorts in byte order (so case-sensitively). Prices come back ordered by
/// (created_at, id). Searches are case-insensitive for all of Unicode, not only ASCII.
///
/// Conventions: lookups return `Ok(None)` for a missing row; a row of another organization or
/// branch than the one asked for is missing. `insert_*` of an existing id is a
/// `StoreError::UniqueViolation`. `update_*` replaces every stored field of the row with the
/// given value (derived fields such as `Branch::user_count` and `Coupon::redemptions` are not
/// written). Timestamps round-trip with microsecond precision; money round-trips exactly.
///
/// The trait is split by resource: [`crate::invoice::InvoiceTx`] and [`crate::webhook::WebhookTx`]
/// hold those resources' methods, each implemented in its own file by every store.
pub trait Tx: crate::invoice::InvoiceTx + crate::webhook::WebhookTx + crate::work::WorkTx {
    // Organizations, users, keys.
    fn insert_org(&mut self, org: &Organization) -> StoreResult<()>;
    fn org(&mut self, id: OrgId) -> StoreResult<Option<Organization>>;
    fn update_org(&mut self, org: &Organization) -> StoreResult<()>;
    /// All organizations, oldest first.
    fn list_orgs(&mut self) -> StoreResult<Vec<Organization>>;
    /// Inserts the user and its branch assignments.
    fn insert_user(&mut self, user: &User) -> StoreResult<()>;
    fn user(&mut self, org: OrgId, id: UserId) -> StoreResult<Option<User>>;
    /// The organization's oldest user with the `organization_admin` role.
    fn first_org_admin(&mut self, org: OrgId) -> StoreResult<Option<User>>;
    fn insert_api_key(&mut self, key: &ApiKey) -> StoreResult<()>;
    /// The key whose public part is `key`, revoked or not.
    fn api_key_by_key(&mut self, key: &str) -> StoreResult<Option<ApiKey>>;
    /// What authenticating a request with an API key needs, in one lookup: the key (revoked or
    /// not), its organization, and the live branch of that organization with id `branch` (the
    /// key's default branch when `None`), if there is one.
    fn api_key_context(&mut self, key: &str, branch: Option<BranchId>) -> StoreResult<Option<(ApiKey, Organization, Option<Branch>)>> {
        let Some(k) = self.api_key_by_key(key)? else { return Ok(None) };
        let Some(org) = self.org(k.org_id)? else { return Ok(None) };
        let b = self.branch(k.org_id, branch.unwrap_or(k.default_branch_id))?;
        Ok(Some((k, org, b)))
    }
    /// Unrevoked keys whose default branch is `branch`.
    fn count_api_keys_defaulting_to(&mut self, branch: BranchId) -> StoreResult<u64>;

    // Branches. Deleted branches (with `deleted_at`) are never returned.
    fn insert_branch(&mut self, b: &Branch) -> StoreResult<()>;
    fn branch(&mut self, org: OrgId, id: BranchId) -> StoreResult<Option<Branch>>;
    /// Case-insensitive match on the trimmed name among the organization's live branches.
    /// Live branch names are unique in this sense (constraint `branches_org_name_key`).
    fn branch_by_name(&mut self, org: OrgId, name: &str) -> StoreResult<Option<Branch>>;
    /// Live branches, oldest first, with `user_count` filled in.
    fn list_branches(&mut self, org: OrgId) -> StoreResult<Vec<Branch>>;
    fn update_branch(&mut self, b: &Branch) -> StoreResult<()>;

    // Invitations and notifications.
    fn insert_invitation(&mut self, i: &Invitation) -> StoreResult<()>;
    fn insert_notification(&mut self, n: &Notification) -> StoreResult<()>;
    /// The organization's notifications, oldest first.
    fn list_notifications(&mut self, org: OrgId) -> StoreResult<Vec<Notification>>;

    // Consumers. Deleted consumers are returned by `consumer` (with `is_deleted`) but never by
    // lists or conflict checks.
    fn insert_consumer(&mut self, c: &Consumer) -> StoreResult<()>;
    fn consumer(&mut self, branch: BranchId, id: ConsumerId) -> StoreResult<Option<Consumer>>;
    fn update_consumer(&mut self, c: &Consumer) -> StoreResult<()>;
    /// A live consumer of `branch` other than `except` with this phone number or this
    /// (lower-cased) e-mail. Unique indexes `consumers_branch_phone_key` and
    /// `consumers_branch_email_key` enforce the same rule.
    fn consumer_conflict(&mut self, branch: BranchId, phone: Option<&str>, email_lower: Option<&str>, except: ConsumerId) -> StoreResult<Option<Consumer>>;
    /// Live consumers of `branch` matching the search (case-insensitive substring of name,
    /// e-mail, phone, alias, external id; or the exact IBAN) and filters, sorted by the field
    /// then by id, one page of them, plus the total count across pages.
    fn list_consumers(&mut self, branch: BranchId, q: &ListQuery<ConsumerSort>, f: &ConsumerFilter) -> StoreResult<Page<Consumer>>;

    // Products with their prices (active and inactive). Deleted products are never returned.
    /// `default_currency` picks the price that `ProductSort::Price` sorts by.
    fn insert_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()>;
    fn product(&mut self, branch: BranchId, id: ProductId) -> StoreResult<Option<Product>>;
    /// Replaces the product row and upserts its prices by id.
    fn update_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()>;
    /// Search is a case-insensitive substring of name or description.
    fn list_products(&mut self, branch: BranchId, q: &ListQuery<ProductSort>, f: &ProductFilter) -> StoreResult<Page<Product>>;

    // Coupons. Deleted coupons are never returned.
    fn insert_coupon(&mut self, c: &Coupon) -> StoreResult<()>;
    fn coupon(&mut self, branch: BranchId, id: CouponId) -> StoreResult<Option<Coupon>>;
    fn update_coupon(&mut self, c: &Coupon) -> StoreResult<()>;
    /// Search is a case-insensitive substring of the name.
    fn list_coupons(&mut self, branch: BranchId, q: &ListQuery<CouponSort>, f: &CouponFilter) -> StoreResult<Page<Coupon>>;

    // The event outbox.
    fn insert_event(&mut self, e: &Event) -> StoreResult<()>;
    /// The organization's events in the order they were written.
    fn list_events(&mut self, org: OrgId) -> StoreResult<Vec<Event>>;
}
