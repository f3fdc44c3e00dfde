//! The senders an engine sends notifications with, by channel, and where invitations point.
//! Set by the host ([`crate::engine::Engine::set_notification_sender`]).

use super::{Channel, NotificationSender};
use std::sync::{Arc, RwLock};

/// The senders of an engine, by channel.
#[derive(Default)]
pub struct Senders {
    pub(crate) by_channel: RwLock<[Option<Arc<dyn NotificationSender>>; 3]>,
    /// Where an invitation's link points (the token is added as `?token=`); default
    /// `<public URL>/invite/accept`.
    pub(crate) invite_url: RwLock<Option<String>>,
}

pub(crate) fn slot(c: Channel) -> usize {
    match c {
        Channel::Email => 0,
        Channel::Sms => 1,
        Channel::WhatsApp => 2,
    }
}
