//! The senders of customer notifications ([`billing_core::notification`]): e-mail over SMTP
//! (lettre, rustls with the ring provider and the system's CAs) and SMS and WhatsApp through an
//! HTTP provider with the shape of Twilio's Messages API, over the webhooks' HTTP client.
//!
//! The provider request: `POST {base}/2010-04-01/Accounts/{account}/Messages.json`, HTTP basic
//! auth `account:token`, a form-encoded body `To`, `From`, `Body` (WhatsApp: `whatsapp:+…`
//! addresses). A 2xx answer is sent (its JSON `sid` is kept as the provider's id); 408, 429,
//! 5xx and no answer are tried again; any other 4xx is a refusal (not tried again).
//!
//! SMTP: a 5xx answer is a refusal; a 4xx, a refused connection, a time-out or a TLS failure
//! is tried again. Each message gets a Message-ID made of the notification's id, so that a
//! message sent twice (at least once: a crash between the send and its record) can be seen as
//! one by the receiving side.

use crate::webhook_transport::HttpTransport;
use billing_core::notification::{Channel, Delivery, Message, NotificationSender};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{SmtpTransport, Transport};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How an SMTP connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpTls {
    /// Plain text (a local relay or a test server only).
    None,
    /// Plain connection upgraded with STARTTLS, which must succeed (port 587).
    StartTls,
    /// TLS from the first byte (port 465).
    Tls,
}

impl SmtpTls {
    pub fn parse(s: &str) -> Result<SmtpTls, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" | "off" | "plain" => Ok(SmtpTls::None),
            "starttls" => Ok(SmtpTls::StartTls),
            "tls" | "smtps" | "implicit" => Ok(SmtpTls::Tls),
            other => Err(format!("the SMTP TLS mode is none, starttls or tls, not {other:?}")),
        }
    }

    pub fn default_port(self) -> u16 {
        match self {
            SmtpTls::None => 25,
            SmtpTls::StartTls => 587,
            SmtpTls::Tls => 465,
        }
    }
}

/// The SMTP server e-mails go through.
#[derive(Clone)]
pub struct SmtpConfig {
    pub host: String,
    /// Default: 25, 587 or 465 by the TLS mode.
    pub port: Option<u16>,
    pub tls: SmtpTls,
    pub username: Option<String>,
    pub password: Option<String>,
    /// The sender: `billing@example.com` or `Acme Billing <billing@example.com>`. Without a
    /// name, the organization's name is shown.
    pub from: String,
    /// Extra CA certificates (PEM) trusted for the SMTP server, besides the system's.
    pub ca_file: Option<std::path::PathBuf>,
}

/// The SMS and WhatsApp provider (Twilio's Messages API shape).
#[derive(Clone)]
pub struct SmsConfig {
    /// Default `https://api.twilio.com`.
    pub base_url: String,
    pub account: String,
    pub token: String,
    /// The sender number (E.164) of SMS; SMS is off without it.
    pub sms_from: Option<String>,
    /// The sender number (E.164) of WhatsApp messages; WhatsApp is off without it.
    pub whatsapp_from: Option<String>,
}

/// Debug output never shows the password.
impl std::fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("from", &self.from)
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

/// Debug output never shows the token.
impl std::fmt::Debug for SmsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmsConfig")
            .field("base_url", &self.base_url)
            .field("account", &self.account)
            .field("token", &"***")
            .field("sms_from", &self.sms_from)
            .field("whatsapp_from", &self.whatsapp_from)
            .finish()
    }
}

pub const DEFAULT_SMS_PROVIDER_URL: &str = "https://api.twilio.com";

/// What sends this process's notifications.
#[derive(Debug, Clone, Default)]
pub struct NotifyConfig {
    pub smtp: Option<SmtpConfig>,
    pub sms: Option<SmsConfig>,
    /// How long one send may take.
    pub timeout: Option<Duration>,
    /// Where invitation links point (`?token=` is added); default `<public URL>/invite/accept`.
    pub invite_url: Option<String>,
}

pub const DEFAULT_NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);

/// Attempts of this process by channel (email, sms, whatsapp) and result (sent, retry,
/// refused), for `GET /metrics`.
pub static ATTEMPTS: [[AtomicU64; 3]; 3] = [
    [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
];
pub const CHANNELS: [&str; 3] = ["email", "sms", "whatsapp"];
pub const RESULTS: [&str; 3] = ["sent", "retry", "refused"];

fn count(channel: Channel, d: &Delivery) {
    let c = match channel {
        Channel::Email => 0,
        Channel::Sms => 1,
        Channel::WhatsApp => 2,
    };
    let r = match d {
        Delivery::Sent { .. } => 0,
        Delivery::Retry(_) => 1,
        Delivery::Refused(_) => 2,
    };
    ATTEMPTS[c][r].fetch_add(1, Ordering::Relaxed);
}

/// Sends e-mail through one SMTP server (a new connection per message).
pub struct SmtpSender {
    transport: SmtpTransport,
    from: Mailbox,
    timeout: Duration,
}

impl SmtpSender {
    pub fn new(c: &SmtpConfig, timeout: Duration) -> Result<SmtpSender, String> {
        let from: Mailbox = c
            .from
            .trim()
            .parse()
            .map_err(|e| format!("the SMTP sender {:?} is not an e-mail address ({e})", c.from))?;
        let mut tls = TlsParameters::builder(c.host.clone());
        if let Some(path) = &c.ca_file {
            let pem = std::fs::read(path).map_err(|e| format!("cannot read the SMTP CA file {}: {e}", path.display()))?;
            let cert = Certificate::from_pem(&pem).map_err(|e| format!("the SMTP CA file {} is not a PEM certificate: {e}", path.display()))?;
            tls = tls.add_root_certificate(cert);
        }
        let params = || tls.clone().build_rustls().map_err(|e| format!("cannot set up TLS for SMTP: {e}"));
        let mode = match c.tls {
            SmtpTls::None => Tls::None,
            SmtpTls::StartTls => Tls::Required(params()?),
            SmtpTls::Tls => Tls::Wrapper(params()?),
        };
        // EHLO with the sender's domain (lettre's default is `localhost`).
        let hello = lettre::transport::smtp::extension::ClientId::Domain(from.email.domain().to_string());
        let mut b = SmtpTransport::builder_dangerous(c.host.clone())
            .port(c.port.unwrap_or(c.tls.default_port()))
            .tls(mode)
            .hello_name(hello)
            .timeout(Some(timeout));
        match (&c.username, &c.password) {
            (Some(u), Some(p)) => b = b.credentials(Credentials::new(u.clone(), p.clone())),
            (None, None) => {}
            _ => return Err("give both the SMTP user name and password, or neither".into()),
        }
        Ok(SmtpSender {
            transport: b.build(),
            from,
            timeout,
        })
    }

    fn build(&self, m: &Message) -> Result<lettre::Message, String> {
        let to: Mailbox = m.to.parse().map_err(|e| format!("{:?} is not an e-mail address ({e})", m.to))?;
        let from = match &self.from.name {
            Some(_) => self.from.clone(),
            None => Mailbox::new(Some(m.organization.clone()), self.from.email.clone()),
        };
        let domain = self.from.email.domain().to_string();
        lettre::Message::builder()
            .from(from)
            .to(to)
            .subject(m.texts.subject.clone())
            .message_id(Some(format!("<{}@{domain}>", m.id)))
            .multipart(MultiPart::alternative_plain_html(m.texts.text.clone(), m.texts.html.clone()))
            .map_err(|e| format!("the message could not be built: {e}"))
    }
}

impl NotificationSender for SmtpSender {
    fn send(&self, m: &Message) -> Delivery {
        let d = match self.build(m) {
            Err(e) => Delivery::Refused(e),
            Ok(email) => match self.transport.send(&email) {
                Ok(r) => Delivery::Sent {
                    provider_id: Some(format!("{} {}", r.code(), r.message().collect::<Vec<_>>().join(" ")).trim().to_string()),
                },
                Err(e) if e.is_permanent() => Delivery::Refused(format!("the SMTP server refused it: {e}")),
                Err(e) => Delivery::Retry(format!("SMTP: {e}")),
            },
        };
        count(Channel::Email, &d);
        d
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// Sends SMS or WhatsApp messages through the provider.
pub struct SmsSender {
    http: HttpTransport,
    url: String,
    auth: String,
    from: String,
    channel: Channel,
    timeout: Duration,
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

impl SmsSender {
    /// The sender of `channel` (SMS or WhatsApp), or `None` when its sender number is not set.
    pub fn new(c: &SmsConfig, channel: Channel, http: HttpTransport, timeout: Duration) -> Option<SmsSender> {
        use base64::Engine;
        let from = match channel {
            Channel::Sms => c.sms_from.clone()?,
            Channel::WhatsApp => format!("whatsapp:{}", c.whatsapp_from.clone()?),
            Channel::Email => return None,
        };
        Some(SmsSender {
            http,
            url: format!("{}/2010-04-01/Accounts/{}/Messages.json", c.base_url.trim_end_matches('/'), form(&c.account)),
            auth: format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", c.account, c.token))
            ),
            from,
            channel,
            timeout,
        })
    }
}

impl NotificationSender for SmsSender {
    fn send(&self, m: &Message) -> Delivery {
        let to = match self.channel {
            Channel::WhatsApp => format!("whatsapp:{}", m.to),
            _ => m.to.clone(),
        };
        let body = format!("To={}&From={}&Body={}", form(&to), form(&self.from), form(&m.texts.short));
        let headers = vec![
            ("Authorization".to_string(), self.auth.clone()),
            ("Content-Type".to_string(), "application/x-www-form-urlencoded".to_string()),
            ("Accept".to_string(), "application/json".to_string()),
            ("User-Agent".to_string(), billing_core::webhook::USER_AGENT.to_string()),
        ];
        let d = match self.http.post_plain(&self.url, &headers, body.as_bytes(), self.timeout) {
            Ok((status, text)) if (200..300).contains(&status) => {
                let sid = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| v.get("sid").and_then(|s| s.as_str()).map(str::to_string));
                Delivery::Sent { provider_id: sid }
            }
            Ok((status, text)) => {
                let detail = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| v.get("message").and_then(|s| s.as_str()).map(str::to_string))
                    .unwrap_or_else(|| text.chars().take(200).collect());
                let why = format!("the provider answered {status}: {detail}");
                if status == 408 || status == 429 || status >= 500 {
                    Delivery::Retry(why)
                } else {
                    Delivery::Refused(why)
                }
            }
            Err(e) => Delivery::Retry(format!("the provider did not answer: {e}")),
        };
        count(self.channel, &d);
        d
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// Plugs this process's senders into the engine; an error is one sentence (a bad sender
/// address, an unreadable CA file). Returns what is on, for the start-up log.
pub fn install(billing: &billing_core::Billing<crate::backend::Backend>, c: &NotifyConfig) -> Result<Vec<&'static str>, String> {
    let timeout = c.timeout.unwrap_or(DEFAULT_NOTIFY_TIMEOUT);
    let mut on = Vec::new();
    if let Some(url) = &c.invite_url {
        billing.engine().set_invite_url(url.trim_end_matches('/').to_string());
    }
    if let Some(smtp) = &c.smtp {
        billing
            .engine()
            .set_notification_sender(Channel::Email, std::sync::Arc::new(SmtpSender::new(smtp, timeout)?));
        on.push("email");
    }
    if let Some(sms) = &c.sms {
        if !(sms.base_url.starts_with("http://") || sms.base_url.starts_with("https://")) {
            return Err(format!("the SMS provider URL must start with http:// or https://, not {:?}", sms.base_url));
        }
        if sms.sms_from.is_none() && sms.whatsapp_from.is_none() {
            return Err("give the SMS sender number (--sms-from) or the WhatsApp one (--whatsapp-from)".into());
        }
        // The provider's address is the operator's, not a client's: it may be a local one.
        let mut http = HttpTransport::new(timeout);
        http.allow_private = true;
        for (channel, name) in [(Channel::Sms, "sms"), (Channel::WhatsApp, "whatsapp")] {
            if let Some(s) = SmsSender::new(sms, channel, http.clone(), timeout) {
                billing.engine().set_notification_sender(channel, std::sync::Arc::new(s));
                on.push(name);
            }
        }
    }
    Ok(on)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_encoding() {
        assert_eq!(form("whatsapp:+966 50/ü&="), "whatsapp%3A%2B966+50%2F%C3%BC%26%3D");
    }

    #[test]
    fn tls_modes() {
        assert_eq!(SmtpTls::parse("STARTTLS").unwrap(), SmtpTls::StartTls);
        assert_eq!(SmtpTls::parse("none").unwrap().default_port(), 25);
        assert_eq!(SmtpTls::parse("tls").unwrap().default_port(), 465);
        assert!(SmtpTls::parse("ssl3").is_err());
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let c = SmtpConfig {
            host: "mail.example.com".into(),
            port: None,
            tls: SmtpTls::StartTls,
            username: Some("u".into()),
            password: Some("hunter2".into()),
            from: "a@example.com".into(),
            ca_file: None,
        };
        let s = SmsConfig {
            base_url: DEFAULT_SMS_PROVIDER_URL.into(),
            account: "AC1".into(),
            token: "tok-secret".into(),
            sms_from: None,
            whatsapp_from: None,
        };
        let text = format!(
            "{:?}",
            NotifyConfig {
                smtp: Some(c),
                sms: Some(s),
                ..Default::default()
            }
        );
        assert!(!text.contains("hunter2") && !text.contains("tok-secret") && text.contains("***"), "{text}");
    }

    #[test]
    fn a_bad_sender_is_one_sentence() {
        let c = SmtpConfig {
            host: "127.0.0.1".into(),
            port: None,
            tls: SmtpTls::None,
            username: None,
            password: None,
            from: "not an address".into(),
            ca_file: None,
        };
        let e = SmtpSender::new(&c, DEFAULT_NOTIFY_TIMEOUT).err().unwrap();
        assert!(e.starts_with("the SMTP sender \"not an address\" is not an e-mail address"), "{e}");
    }
}
