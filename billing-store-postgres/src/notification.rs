//! Notifications to send: `billing_core::notification::NotificationTx`.

use crate::support::*;
use billing_core::ids::OrgId;
use billing_core::notification::{Channel, Notification};
use billing_core::store::StoreResult;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    notifications (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Nullable<Uuid>,
        channel -> Text,
        recipient -> Text,
        template -> Text,
        language -> Text,
        payload -> Jsonb,
        created_at -> Timestamptz,
        sent_at -> Nullable<Timestamptz>,
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = notifications, check_for_backend(diesel::pg::Pg))]
pub struct NotificationRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Option<Uuid>,
    pub channel: String,
    pub recipient: String,
    pub template: String,
    pub language: String,
    pub payload: Value,
    pub created_at: Ts,
    pub sent_at: Option<Ts>,
}

#[derive(Insertable)]
#[diesel(table_name = notifications, treat_none_as_default_value = false)]
pub struct NewNotificationRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Option<Uuid>,
    pub channel: &'static str,
    pub recipient: &'a str,
    pub template: &'a str,
    pub language: &'static str,
    pub payload: &'a Value,
    pub created_at: Ts,
    pub sent_at: Option<Ts>,
}

impl<'a> NewNotificationRow<'a> {
    pub fn new(n: &'a Notification) -> Self {
        NewNotificationRow {
            id: n.id.0,
            org_id: n.org_id.0,
            branch_id: n.branch_id.map(|b| b.0),
            channel: n.channel.as_str(),
            recipient: &n.recipient,
            template: &n.template,
            language: n.language.as_str(),
            payload: &n.payload,
            created_at: n.created_at,
            sent_at: n.sent_at,
        }
    }
}

impl NotificationRow {
    pub fn into_domain(self) -> StoreResult<Notification> {
        Ok(Notification {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.map(Into::into),
            channel: parse_enum!(Channel, &self.channel)?,
            recipient: self.recipient,
            template: self.template,
            language: language(&self.language)?,
            payload: self.payload,
            created_at: self.created_at,
            sent_at: self.sent_at,
        })
    }
}

impl billing_core::notification::NotificationTx for PgTx<'_> {
    fn insert_notification(&mut self, n: &Notification) -> StoreResult<()> {
        let row = NewNotificationRow::new(n);
        self.write(|c| diesel::insert_into(notifications::table).values(&row).execute(c)).map(drop)
    }

    fn list_notifications(&mut self, org: OrgId) -> StoreResult<Vec<Notification>> {
        use notifications::dsl as n;
        let rows = self.read(|c| {
            n::notifications
                .filter(n::org_id.eq(org.0))
                .order_by((n::created_at, n::id))
                .select(NotificationRow::as_select())
                .load(c)
        })?;
        rows.into_iter().map(NotificationRow::into_domain).collect()
    }
}
