//! `GET /notifications` and `GET /notifications/{id}` ([`Notifications`]): the notifications of
//! the request's branch (organization admins also see the organization-level ones:
//! invitations), with their status and attempts.

use super::{Notification, NotificationDetail, NotificationFilter, NotificationQuery, NotificationScope};
use crate::auth::Scope;
use crate::error::{Error, Result};
use crate::ids::NotificationId;
use crate::lane::Lane;
use crate::list::Page;
use crate::store::Store;

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const LIST: Lane = Lane::Read;
    pub const GET: Lane = Lane::Read;
}

fn notification_scope(scope: &Scope) -> NotificationScope {
    NotificationScope {
        org_id: scope.org_id(),
        branch_id: scope.branch_id(),
        with_org_level: scope.actor.is_org_admin(),
    }
}

crate::service!(
    /// Notifications: list and get (the sending is [`super::send`]'s due work).
    Notifications
);

impl<S: Store> Notifications<'_, S> {
    /// A page of the branch's notifications, filtered and sorted, each with its subject.
    pub fn list(&self, scope: &Scope, f: &NotificationFilter, q: &NotificationQuery) -> Result<Page<NotificationDetail>> {
        let ns = notification_scope(scope);
        let page = self.store.read(|tx| Ok(tx.list_notifications_page(&ns, f, q)?))?;
        Ok(page.map(|n| self.detail(n)))
    }

    /// One notification of the branch (or, for organization admins, of the organization).
    pub fn get(&self, scope: &Scope, id: NotificationId) -> Result<NotificationDetail> {
        let ns = notification_scope(scope);
        let n = self
            .read_found("Notification", id, |tx| tx.notification(id))
            .ok()
            .filter(|n| n.org_id == ns.org_id && (n.branch_id == Some(ns.branch_id) || (n.branch_id.is_none() && ns.with_org_level)))
            .ok_or_else(|| Error::not_found("Notification", id))?;
        Ok(self.detail(n))
    }

    /// The notification with its subject as sent.
    fn detail(&self, notification: Notification) -> NotificationDetail {
        let subject = self.notification_texts(&notification).subject;
        NotificationDetail { notification, subject }
    }
}
