//! `GET /notifications` and `GET /notifications/{id}`: the notifications of the request's
//! branch (organization admins also see the organization-level ones: invitations), with their
//! status and attempts.

use super::{Channel, Kind, Notification, NotificationFilter, NotificationQuery, NotificationScope, NotificationSort, Status};
use crate::auth::Scope;
use crate::clock::format_rfc3339;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::ids::NotificationId;
use crate::lane::Lane;
use crate::list::{Page, Query, QueryParams};
use crate::store::Store;
use serde_json::{json, Value};

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const LIST: Lane = Lane::Read;
    pub const GET: Lane = Lane::Read;
}

/// The list query: `statuses`/`status`, `channels`/`channel`, `kinds`/`kind` (repeated or
/// comma-separated), `consumer_id`, `created_from`/`created_to` (date-times or dates),
/// `page`, `limit`, `sort_field` (created_at, updated_at, status, kind, channel) and
/// `sort_direction` (default `created_at` descending).
pub fn parse_notification_list(params: &QueryParams) -> Result<(NotificationFilter, NotificationQuery)> {
    let mut q = Query::new(params);
    let list = q.list(NotificationSort::CreatedAt, NotificationSort::parse, &NotificationSort::expected());
    let mut f = NotificationFilter::default();
    for name in ["statuses", "status"] {
        f.statuses
            .extend(q.enums(name, |s| Status::parse(&s.to_ascii_lowercase()), &Status::expected()));
    }
    for name in ["channels", "channel"] {
        f.channels
            .extend(q.enums(name, |s| Channel::parse(&s.to_ascii_uppercase()), &Channel::expected()));
    }
    for name in ["kinds", "kind"] {
        f.kinds.extend(q.enums(name, |s| Kind::parse(&s.to_ascii_uppercase()), &Kind::expected()));
    }
    f.consumer_id = q.uuid("consumer_id");
    f.from = q.datetime("created_from");
    f.to = q.datetime("created_to");
    q.finish()?;
    Ok((f, list))
}

impl<S: Store> Engine<S> {
    fn notification_scope(scope: &Scope) -> NotificationScope {
        NotificationScope {
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            with_org_level: scope.actor.is_org_admin(),
        }
    }

    /// A page of the branch's notifications (NotificationView), filtered and sorted.
    pub fn list_notifications(&self, scope: &Scope, f: &NotificationFilter, q: &NotificationQuery) -> Result<Page<Value>> {
        let ns = Self::notification_scope(scope);
        let page = self.store.read(|tx| Ok(tx.list_notifications_page(&ns, f, q)?))?;
        Ok(page.map(|n| self.notification_json(&n)))
    }

    /// One notification of the branch (or, for organization admins, of the organization).
    pub fn get_notification(&self, scope: &Scope, id: NotificationId) -> Result<Value> {
        let ns = Self::notification_scope(scope);
        let n = self
            .read_found("Notification", id, |tx| tx.notification(id))
            .ok()
            .filter(|n| n.org_id == ns.org_id && (n.branch_id == Some(ns.branch_id) || (n.branch_id.is_none() && ns.with_org_level)))
            .ok_or_else(|| Error::not_found("Notification", id))?;
        Ok(self.notification_json(&n))
    }

    /// NotificationView: the notification, its subject as sent, its status and attempts.
    pub fn notification_json(&self, n: &Notification) -> Value {
        let texts = self.notification_texts(n);
        json!({
            "id": n.id,
            "kind": n.kind,
            "channel": n.channel,
            "recipient": n.recipient,
            "language": n.language,
            "status": n.status,
            "subject": texts.subject,
            "consumer_id": n.consumer_id,
            "branch_id": n.branch_id,
            "data": n.payload,
            "attempt_count": n.attempts.iter().filter(|a| a.result == "sent" || a.result == "retry" || a.result == "failed").count(),
            "attempts": n.attempts,
            "next_attempt_at": n.next_attempt_at.as_ref().map(format_rfc3339),
            "sent_at": n.sent_at.as_ref().map(format_rfc3339),
            "created_at": format_rfc3339(&n.created_at),
            "updated_at": format_rfc3339(&n.updated_at),
        })
    }
}
