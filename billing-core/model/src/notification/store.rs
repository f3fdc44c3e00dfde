//! What a store offers for notifications (part of [`crate::store::Tx`]).

use super::{Notification, NotificationFilter, NotificationQuery, NotificationScope};
use crate::error::StoreResult;
use crate::ids::{NotificationId, OrgId};
use crate::list::Page;

pub trait NotificationTx {
    /// Inserts a notification; an existing id is a `UniqueViolation`.
    fn insert_notification(&mut self, n: &Notification) -> StoreResult<()>;
    /// The notification with this id, of any organization.
    fn notification(&mut self, id: NotificationId) -> StoreResult<Option<Notification>>;
    /// Replaces its status, attempts, next attempt, `updated_at` and `sent_at`.
    fn update_notification(&mut self, n: &Notification) -> StoreResult<()>;
    /// The organization's notifications, oldest first (ties by id).
    fn list_notifications(&mut self, org: OrgId) -> StoreResult<Vec<Notification>>;
    /// The notifications of `scope` (its branch's; with `with_org_level`, also those of no
    /// branch) that match the filter, sorted by the query's field and direction (ties by id in
    /// the same direction), one page of them, with the total across pages.
    fn list_notifications_page(&mut self, scope: &NotificationScope, f: &NotificationFilter, q: &NotificationQuery) -> StoreResult<Page<Notification>>;
}
