//! Notifications to send: `billing_core::notification::NotificationTx`.

use crate::sql::*;
use billing_core::fields::Language;
use billing_core::ids::OrgId;
use billing_core::notification::{Channel, Notification, NotificationTx};
use billing_core::store::StoreResult;

table! {
    pub Notifications in "notifications" for Notification |n, r, at| {
        id: u(n.id) => get_id(r, at)?,
        org_id: u(n.org_id) => get_id(r, at)?,
        branch_id: u_opt(n.branch_id) => get_id_opt(r, at)?,
        channel: s(n.channel.as_str()) => get_parsed(r, at, Channel::parse)?,
        recipient: s(&n.recipient) => r.get(at)?,
        template: s(&n.template) => r.get(at)?,
        language: s(n.language.as_str()) => get_parsed(r, at, |l| Language::parse(l).ok())?,
        payload: j(&n.payload) => get_json(r, at)?,
        created_at: t(&n.created_at) => get_ts(r, at)?,
        sent_at: t_opt(&n.sent_at) => get_ts_opt(r, at)?,
    } => Notification { id, org_id, branch_id, channel, recipient, template, language, payload, created_at, sent_at }
}

impl NotificationTx for SqliteTx<'_> {
    fn insert_notification(&mut self, n: &Notification) -> StoreResult<()> {
        self.exec(&Notifications::sql().insert, Notifications::params(n)?).map(drop)
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
}
