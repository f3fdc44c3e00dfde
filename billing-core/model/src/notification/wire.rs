//! The notification list's parameters: their reader, and their documentation.

use super::{Channel, Kind, NotificationFilter, NotificationQuery, NotificationSort, Status};
use crate::error::Result;
use crate::list::{Query, QueryParams};

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

/// What the list's parameters look like, for `/openapi.json` (the reader above is the truth;
/// the server's tests check that it reads exactly these).
pub mod request {
    use super::{Channel, Kind, NotificationSort, Status};
    use crate::schema::{DateTime, Id};

    crate::list_query! {
        /// Notifications, newest first unless sorted otherwise.
        NotificationListQuery(NotificationSort) {
            /// Only these statuses (repeated or comma-separated; any case).
            statuses: Vec<Status>,
            /// The same as `statuses`.
            status: Vec<Status>,
            /// Only these channels (repeated or comma-separated; any case).
            channels: Vec<Channel>,
            /// The same as `channels`.
            channel: Vec<Channel>,
            /// Only these kinds (repeated or comma-separated; any case).
            kinds: Vec<Kind>,
            /// The same as `kinds`.
            kind: Vec<Kind>,
            /// Only the notifications of this consumer.
            consumer_id: Id,
            /// Created at or after this date-time (or date), in the organization's time.
            created_from: DateTime,
            /// Created before this date-time (or date).
            created_to: DateTime,
        }
    }
}
