//! What a store offers for notifications (part of [`crate::store::Tx`]).

use super::Notification;
use crate::ids::OrgId;
use crate::store::StoreResult;

pub trait NotificationTx {
    fn insert_notification(&mut self, n: &Notification) -> StoreResult<()>;
    /// The organization's notifications, oldest first.
    fn list_notifications(&mut self, org: OrgId) -> StoreResult<Vec<Notification>>;
}
