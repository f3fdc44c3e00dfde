//! Notifications and their attempts: `billing_model::notification::NotificationTx`.

use crate::support::*;
use billing_model::ids::{NotificationId, OrgId};
use billing_model::list::{Direction, Page};
use billing_model::notification::{Channel, Kind, Notification, NotificationFilter, NotificationQuery, NotificationScope, NotificationSort, Status};
use billing_model::store::StoreResult;
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
        consumer_id -> Nullable<Uuid>,
        status -> Text,
        attempts -> Jsonb,
        next_attempt_at -> Nullable<Timestamptz>,
        updated_at -> Timestamptz,
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
    pub consumer_id: Option<Uuid>,
    pub status: String,
    pub attempts: Value,
    pub next_attempt_at: Option<Ts>,
    pub updated_at: Ts,
}

#[derive(Insertable)]
#[diesel(table_name = notifications, treat_none_as_default_value = false)]
pub struct NewNotificationRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Option<Uuid>,
    pub channel: &'static str,
    pub recipient: &'a str,
    pub template: &'static str,
    pub language: &'static str,
    pub payload: &'a Value,
    pub created_at: Ts,
    pub sent_at: Option<Ts>,
    pub consumer_id: Option<Uuid>,
    pub status: &'static str,
    pub attempts: Value,
    pub next_attempt_at: Option<Ts>,
    pub updated_at: Ts,
}

impl<'a> NewNotificationRow<'a> {
    pub fn new(n: &'a Notification) -> StoreResult<Self> {
        Ok(NewNotificationRow {
            id: n.id.0,
            org_id: n.org_id.0,
            branch_id: n.branch_id.map(|b| b.0),
            channel: n.channel.as_str(),
            recipient: &n.recipient,
            template: n.kind.as_str(),
            language: n.language.as_str(),
            payload: &n.payload,
            created_at: n.created_at,
            sent_at: n.sent_at,
            consumer_id: n.consumer_id.map(|c| c.0),
            status: n.status.as_str(),
            attempts: attempts_json(n)?,
            next_attempt_at: n.next_attempt_at,
            updated_at: n.updated_at,
        })
    }
}

fn attempts_json(n: &Notification) -> StoreResult<Value> {
    serde_json::to_value(&n.attempts).map_err(|e| billing_model::error::StoreError::backend(format!("notification attempts: {e}")))
}

impl NotificationRow {
    pub fn into_domain(self) -> StoreResult<Notification> {
        Ok(Notification {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.map(Into::into),
            consumer_id: self.consumer_id.map(Into::into),
            kind: parse_enum!(Kind, &self.template)?,
            channel: parse_enum!(Channel, &self.channel)?,
            recipient: self.recipient,
            language: language(&self.language)?,
            payload: self.payload,
            status: parse_enum!(Status, &self.status)?,
            attempts: serde_json::from_value(self.attempts)
                .map_err(|e| billing_model::error::StoreError::backend(format!("stored notification attempts: {e}")))?,
            next_attempt_at: self.next_attempt_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
            sent_at: self.sent_at,
        })
    }
}

fn matching<'a>(scope: &NotificationScope, f: &'a NotificationFilter) -> notifications::BoxedQuery<'a, diesel::pg::Pg> {
    use notifications::dsl as n;
    let mut q = n::notifications.filter(n::org_id.eq(scope.org_id.0)).into_boxed();
    q = if scope.with_org_level {
        q.filter(n::branch_id.eq(scope.branch_id.0).or(n::branch_id.is_null()))
    } else {
        q.filter(n::branch_id.eq(scope.branch_id.0))
    };
    if !f.statuses.is_empty() {
        q = q.filter(n::status.eq_any(f.statuses.iter().map(|s| s.as_str()).collect::<Vec<_>>()));
    }
    if !f.channels.is_empty() {
        q = q.filter(n::channel.eq_any(f.channels.iter().map(|c| c.as_str()).collect::<Vec<_>>()));
    }
    if !f.kinds.is_empty() {
        q = q.filter(n::template.eq_any(f.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>()));
    }
    if let Some(c) = f.consumer_id {
        q = q.filter(n::consumer_id.eq(c.0));
    }
    if let Some(from) = f.from {
        q = q.filter(n::created_at.ge(from));
    }
    if let Some(to) = f.to {
        q = q.filter(n::created_at.lt(to));
    }
    q
}

impl billing_model::notification::NotificationTx for PgTx<'_> {
    fn insert_notification(&mut self, n: &Notification) -> StoreResult<()> {
        let row = NewNotificationRow::new(n)?;
        self.write(|c| diesel::insert_into(notifications::table).values(&row).execute(c)).map(drop)
    }

    fn notification(&mut self, id: NotificationId) -> StoreResult<Option<Notification>> {
        let row = self.read(|c| notifications::table.find(id.0).select(NotificationRow::as_select()).first(c).optional())?;
        row.map(NotificationRow::into_domain).transpose()
    }

    fn update_notification(&mut self, n: &Notification) -> StoreResult<()> {
        use notifications::dsl as d;
        let attempts = attempts_json(n)?;
        self.change(|c| {
            diesel::update(d::notifications.find(n.id.0))
                .set((
                    d::status.eq(n.status.as_str()),
                    d::attempts.eq(&attempts),
                    d::next_attempt_at.eq(n.next_attempt_at),
                    d::updated_at.eq(n.updated_at),
                    d::sent_at.eq(n.sent_at),
                ))
                .execute(c)
        })
        .map(drop)
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

    fn list_notifications_page(&mut self, scope: &NotificationScope, f: &NotificationFilter, q: &NotificationQuery) -> StoreResult<Page<Notification>> {
        use notifications::dsl as n;
        let (rows, total) = self.read(|c| {
            let total = matching(scope, f).count().get_result::<i64>(c)?;
            let query = matching(scope, f).select(NotificationRow::as_select());
            let query = match q.sort {
                NotificationSort::CreatedAt => order!(query, q.direction, n::created_at, n::id),
                NotificationSort::UpdatedAt => order!(query, q.direction, n::updated_at, n::id),
                NotificationSort::Status => order!(query, q.direction, n::status, n::id),
                NotificationSort::Kind => order!(query, q.direction, n::template, n::id),
                NotificationSort::Channel => order!(query, q.direction, n::channel, n::id),
            };
            let (limit, offset) = page_bounds(q);
            let rows: Vec<NotificationRow> = query.limit(limit).offset(offset).load(c)?;
            Ok((rows, total))
        })?;
        page(q.page, q.limit, rows, total, NotificationRow::into_domain)
    }
}
