//! Sending: the due-work handlers of the three channels, one attempt per claim, the retry
//! schedule, and the senders a host plugs in (the server's SMTP and SMS/WhatsApp clients). No
//! transaction is open while a sender runs.

use super::senders::slot;
use super::template::{render, Rendered};
use super::{Attempt, Channel, Kind, Notification, Status, ERROR_CHARS, MAX_AGE_HOURS, RETRY_DELAYS_MINUTES};
use super::{Delivery, Message, NotificationSender};
use crate::clock::{format_rfc3339, Timestamp};
use crate::engine::Engine;
use crate::error::{Error, Result, StoreError};
use crate::ids::{NotificationId, WorkId};
use crate::store::{Store, Tx};
use crate::work::ops::is_lease_lost;
use crate::work::{DueWork, Handler};
use chrono::Duration;
use serde_json::json;
use std::sync::Arc;

/// The due-work kinds that send a notification (id = the notification's id), one per channel.
pub const EMAIL_KIND: &str = "notification.email";
pub const SMS_KIND: &str = "notification.sms";
pub const WHATSAPP_KIND: &str = "notification.whatsapp";

/// What the handlers count in a [`WorkReport`].
pub const SENT: &str = "notification.sent";
pub const FAILED_ATTEMPTS: &str = "notification.failed_attempts";
fn lease_lost(id: WorkId) -> Error {
    StoreError::LeaseLost(id).into()
}

fn clip(s: &str) -> String {
    s.chars().take(ERROR_CHARS).collect()
}

fn handler<S: Store>(kind: &'static str, channel: Channel) -> Handler<Engine<S>> {
    Handler {
        kind,
        batched: false,
        ready: match channel {
            Channel::Email => |b| b.notification_sender(Channel::Email).is_some(),
            Channel::Sms => |b| b.notification_sender(Channel::Sms).is_some(),
            Channel::WhatsApp => |b| b.notification_sender(Channel::WhatsApp).is_some(),
        },
        run: |b, items, report| {
            for item in items {
                match b.send_notification_item(item) {
                    Ok(Some(true)) => report.add(SENT, 1),
                    Ok(Some(false)) => report.add(FAILED_ATTEMPTS, 1),
                    Ok(None) => {}
                    Err(e) if is_lease_lost(&e) => {}
                    Err(_) => report.errors += 1,
                }
            }
        },
    }
}

/// The notification kinds of due work: sending, per channel, and installment reminders.
pub(crate) fn work_handlers<S: Store>() -> Vec<Handler<Engine<S>>> {
    vec![
        handler(EMAIL_KIND, Channel::Email),
        handler(SMS_KIND, Channel::Sms),
        handler(WHATSAPP_KIND, Channel::WhatsApp),
        super::reminder::work_handler(),
    ]
}

/// What [`Engine::send_notification_item`] does with a notification before any call.
enum Plan {
    /// Gone, or final already: the item ends.
    Nothing,
    /// Not to be sent any more (switched off, expired): closed with this result and reason.
    Close(Status, &'static str, String),
    Send(Box<Message>),
}

impl<S: Store> Engine<S> {
    /// Sets the sender of `channel`: from now on this engine claims and sends its
    /// notifications.
    pub fn set_notification_sender(&self, channel: Channel, sender: Arc<dyn NotificationSender>) {
        self.notifications.by_channel.write().unwrap_or_else(|p| p.into_inner())[slot(channel)] = Some(sender);
    }

    pub fn notification_sender(&self, channel: Channel) -> Option<Arc<dyn NotificationSender>> {
        self.notifications.by_channel.read().unwrap_or_else(|p| p.into_inner())[slot(channel)].clone()
    }

    /// The longest time-out of this engine's senders (zero without any).
    pub(crate) fn notification_timeout(&self) -> std::time::Duration {
        let senders = self.notifications.by_channel.read().unwrap_or_else(|p| p.into_inner());
        senders.iter().flatten().map(|s| s.timeout()).max().unwrap_or_default()
    }

    /// Sets where invitation links point (`?token=…` is added); default
    /// `<public URL>/invite/accept`.
    pub fn set_invite_url(&self, url: impl Into<String>) {
        *self.notifications.invite_url.write().unwrap_or_else(|p| p.into_inner()) = Some(url.into());
    }

    pub fn invite_url(&self) -> String {
        self.notifications
            .invite_url
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| format!("{}/invite/accept", self.public_url()))
    }

    /// What a notification would say now, as its recipient gets it (the API shows the subject).
    pub fn notification_texts(&self, n: &Notification) -> Rendered {
        let mut payload = n.payload.clone();
        if n.kind == Kind::OrganizationInvite {
            let link = payload
                .get("invitation_id")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .map(|id| self.invite_link(id));
            payload["accept_url"] = json!(link);
        }
        render(n.kind, n.language, &payload)
    }

    /// One attempt of a claimed notification item. `Some(sent)` when an attempt was made.
    fn send_notification_item(&self, item: &DueWork) -> Result<Option<bool>> {
        let id = NotificationId(item.id.0);
        let server_now = self.clock().now();
        let found = self.store.read(|tx| {
            let Some(n) = tx.notification(id)? else { return Ok(None) };
            let org = tx.org(n.org_id)?;
            Ok(Some((n, org)))
        })?;
        let plan = match &found {
            None | Some((_, None)) => Plan::Nothing,
            Some((n, _)) if n.status.is_final() => Plan::Nothing,
            Some((n, Some(org))) => {
                let now = org.now(self.clock());
                if !org.settings.notifies(n.kind) {
                    Plan::Close(
                        Status::Canceled,
                        "canceled",
                        "not sent: the organization switched these notifications off".into(),
                    )
                } else if now - n.created_at > Duration::hours(MAX_AGE_HOURS) {
                    Plan::Close(Status::Failed, "expired", format!("not sent within {MAX_AGE_HOURS} hours of its creation"))
                } else {
                    Plan::Send(Box::new(Message {
                        id: n.id,
                        kind: n.kind,
                        channel: n.channel,
                        to: n.recipient.clone(),
                        language: n.language,
                        organization: org.name.clone(),
                        texts: self.notification_texts(n),
                    }))
                }
            }
        };
        let (n, msg) = match (found, plan) {
            (Some((n, Some(_))), Plan::Send(msg)) => (n, msg),
            (Some((n, Some(_))), Plan::Close(status, result, why)) => {
                self.store.write_leased(|tx| {
                    let mut n = n.clone();
                    let at = org_now(tx, server_now, &n)?;
                    n.attempts.push(Attempt {
                        number: n.attempts.len() as u32 + 1,
                        at: format_rfc3339(&at),
                        result: result.into(),
                        error: Some(why.clone()),
                        provider_id: None,
                        duration_ms: 0,
                    });
                    n.status = status;
                    n.next_attempt_at = None;
                    n.updated_at = at;
                    if !tx.complete_work(item.id, item.leased_until)? {
                        return Err(lease_lost(item.id));
                    }
                    tx.update_notification(&n)?;
                    Ok(())
                })?;
                return Ok(None);
            }
            _ => {
                self.store.write_leased(|tx| Ok(tx.complete_work(item.id, item.leased_until)?))?;
                return Ok(None);
            }
        };
        let Some(sender) = self.notification_sender(n.channel) else {
            // Not claimable without a sender (see the handler's `ready`); leave it to its lease.
            return Ok(None);
        };
        let started = std::time::Instant::now();
        let outcome = self.call_out("the notification provider", || sender.send(&msg))?;
        let took = started.elapsed();
        let done_at = self.clock().now();
        self.store.write_leased(|tx| {
            let mut n = n.clone();
            let offset = org_now(tx, server_now, &n)? - server_now;
            let now = done_at + offset;
            // The attempt's time is when it started; retries count from it.
            let at = (server_now + offset).min(now);
            let number = n.attempts.len() as u32 + 1;
            let (result, error, provider_id) = match &outcome {
                Delivery::Sent { provider_id } => ("sent", None, provider_id.clone()),
                Delivery::Retry(e) => ("retry", Some(clip(e)), None),
                Delivery::Refused(e) => ("failed", Some(clip(e)), None),
            };
            let retry_in = match &outcome {
                Delivery::Retry(_) => RETRY_DELAYS_MINUTES.get(number as usize - 1).copied(),
                _ => None,
            };
            let result = if result == "retry" && retry_in.is_none() { "failed" } else { result };
            n.attempts.push(Attempt {
                number,
                at: format_rfc3339(&at),
                result: result.into(),
                error,
                provider_id,
                duration_ms: took.as_millis() as u64,
            });
            n.updated_at = now;
            let kept = match (&outcome, retry_in) {
                (Delivery::Sent { .. }, _) => {
                    n.status = Status::Sent;
                    n.sent_at = Some(now);
                    n.next_attempt_at = None;
                    tx.complete_work(item.id, item.leased_until)?
                }
                (Delivery::Retry(_), Some(m)) => {
                    let next = at + Duration::minutes(m);
                    n.status = Status::Retrying;
                    n.next_attempt_at = Some(next);
                    tx.reschedule_work(item.id, item.leased_until, next, &json!({}))?
                }
                _ => {
                    n.status = Status::Failed;
                    n.next_attempt_at = None;
                    tx.complete_work(item.id, item.leased_until)?
                }
            };
            if !kept {
                return Err(lease_lost(item.id));
            }
            tx.update_notification(&n)?;
            Ok(Some(n.status == Status::Sent))
        })
    }
}

/// The notification's organization's time in `tx`.
fn org_now(tx: &mut dyn Tx, server_now: Timestamp, n: &Notification) -> Result<Timestamp> {
    let offset = tx.org(n.org_id)?.map(|o| o.clock_offset_us).unwrap_or(0);
    Ok(server_now + Duration::microseconds(offset))
}
