//! Notifications and their attempts: `billing_model::notification::NotificationTx`.

use crate::sql::*;
use billing_model::fields::Language;
use billing_model::ids::{NotificationId, OrgId};
use billing_model::list::Page;
use billing_model::notification::{
    Channel, Kind, Notification, NotificationFilter, NotificationQuery, NotificationScope, NotificationSort, NotificationTx, Status,
};
use billing_model::store::StoreResult;

table! {
    pub Notifications in "notifications" for Notification |n, r, at| {
        id: u(n.id) => get_id(r, at)?,
        org_id: u(n.org_id) => get_id(r, at)?,
        branch_id: u_opt(n.branch_id) => get_id_opt(r, at)?,
        consumer_id: u_opt(n.consumer_id) => get_id_opt(r, at)?,
        template: s(n.kind.as_str()) => get_parsed(r, at, Kind::parse)?,
        channel: s(n.channel.as_str()) => get_parsed(r, at, Channel::parse)?,
        recipient: s(&n.recipient) => r.get(at)?,
        language: s(n.language.as_str()) => get_parsed(r, at, |l| Language::parse(l).ok())?,
        payload: j(&n.payload) => get_json(r, at)?,
        status: s(n.status.as_str()) => get_parsed(r, at, Status::parse)?,
        attempts: j(&n.attempts) => get_json(r, at)?,
        next_attempt_at: t_opt(&n.next_attempt_at) => get_ts_opt(r, at)?,
        created_at: t(&n.created_at) => get_ts(r, at)?,
        updated_at: t(&n.updated_at) => get_ts(r, at)?,
        sent_at: t_opt(&n.sent_at) => get_ts_opt(r, at)?,
    } => Notification {
        id, org_id, branch_id, consumer_id, kind: template, channel, recipient, language, payload, status, attempts,
        next_attempt_at, created_at, updated_at, sent_at,
    }
}

fn names<T: Copy>(xs: &[T], name: impl Fn(T) -> &'static str) -> Vec<rusqlite::types::Value> {
    xs.iter().map(|x| s(name(*x))).collect()
}

impl NotificationTx for SqliteTx<'_> {
    fn insert_notification(&mut self, n: &Notification) -> StoreResult<()> {
        self.exec(&Notifications::sql().insert, Notifications::params(n)?).map(drop)
    }

    fn notification(&mut self, id: NotificationId) -> StoreResult<Option<Notification>> {
        self.one(
            sql!("SELECT {} FROM notifications WHERE id = ?1", Notifications::sql().select),
            vec![u(id)],
            Notifications::row,
        )
    }

    fn update_notification(&mut self, n: &Notification) -> StoreResult<()> {
        self.update_one(
            "UPDATE notifications SET status = ?2, attempts = ?3, next_attempt_at = ?4, updated_at = ?5, sent_at = ?6 WHERE id = ?1",
            vec![
                u(n.id),
                s(n.status.as_str()),
                j(&n.attempts),
                t_opt(&n.next_attempt_at),
                t(&n.updated_at),
                t_opt(&n.sent_at),
            ],
            "notification",
        )
    }

    fn list_notifications(&mut self, org: OrgId) -> StoreResult<Vec<Notification>> {
        self.all(
            sql!(
                "SELECT {} FROM notifications WHERE org_id = ?1 ORDER BY created_at, id",
                Notifications::sql().select
            ),
            vec![u(org)],
            Notifications::row,
        )
    }

    fn list_notifications_page(&mut self, scope: &NotificationScope, f: &NotificationFilter, q: &NotificationQuery) -> StoreResult<Page<Notification>> {
        let mut w = if scope.with_org_level {
            Filter::new(
                "FROM notifications WHERE org_id = ?1 AND (branch_id = ?2 OR branch_id IS NULL)",
                vec![u(scope.org_id), u(scope.branch_id)],
            )
        } else {
            Filter::new(
                "FROM notifications WHERE org_id = ?1 AND branch_id = ?2",
                vec![u(scope.org_id), u(scope.branch_id)],
            )
        };
        if !f.statuses.is_empty() {
            w.any("status", names(&f.statuses, Status::as_str));
        }
        if !f.channels.is_empty() {
            w.any("channel", names(&f.channels, Channel::as_str));
        }
        if !f.kinds.is_empty() {
            w.any("template", names(&f.kinds, Kind::as_str));
        }
        if let Some(c) = f.consumer_id {
            w.cmp("consumer_id =", u(c));
        }
        if let Some(from) = &f.from {
            w.cmp("created_at >=", t(from));
        }
        if let Some(to) = &f.to {
            w.cmp("created_at <", t(to));
        }
        let order = match q.sort {
            NotificationSort::CreatedAt => "created_at",
            NotificationSort::UpdatedAt => "updated_at",
            NotificationSort::Status => "status",
            NotificationSort::Kind => "template",
            NotificationSort::Channel => "channel",
        };
        let paging = Paging {
            order,
            dir: q.direction,
            page: q.page.max(1),
            limit: q.limit.max(1),
        };
        self.page(sql!("SELECT {}", Notifications::sql().select), &w, paging, Notifications::row)
    }
}
