//! The command line: its arguments, commands and their options (clap).

use billing_core::ids::{BranchId, OrgId};
use billing_server::DEFAULT_BODY_LIMIT;
use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;

pub const DEFAULT_DATABASE_URL: &str = "./billing.db";

#[derive(Parser)]
#[command(name = "billing-server", version, about = "Billing and payment-collection engine, public API v2")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Args, Clone)]
pub struct DbArgs {
    /// Database: a SQLite file path, `sqlite://path`, `sqlite::memory:`, or `postgres://user@host:port/db`.
    #[arg(long, env = "BILLING_DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database_url: String,
    /// Create the SQLite database file when there is none at the path. Without it only `init`
    /// and the default `./billing.db` make a new file, so a misspelt path is an error rather
    /// than a new, empty database.
    #[arg(long, env = "BILLING_CREATE", global = true)]
    pub create: bool,
    /// Most connections this process opens to PostgreSQL (SQLite ignores it).
    #[arg(long, env = "BILLING_DATABASE_POOL_SIZE", default_value_t = billing_server::DEFAULT_DATABASE_POOL_SIZE, global = true)]
    pub database_pool_size: u32,
}

#[derive(Args, Clone)]
pub struct ServeArgs {
    /// Address to listen on (`host:port`; a name such as `localhost:9000` is resolved).
    #[arg(long, env = "BILLING_LISTEN", default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// HS256 secret for bearer tokens. Without it a random one is used, so tokens from
    /// `init` stop working at restart.
    /// Also used by `init` to sign the token it prints: give both the same secret.
    #[arg(long, env = "BILLING_JWT_SECRET", global = true)]
    pub jwt_secret: Option<String>,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "BILLING_BODY_LIMIT", default_value_t = DEFAULT_BODY_LIMIT)]
    pub body_limit: usize,
    /// The address clients reach this server at (used in webhook payloads and hosted-page
    /// links); default `http://<listen>`.
    #[arg(long, env = "BILLING_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Time-out of one webhook delivery attempt, in milliseconds.
    #[arg(long, env = "BILLING_WEBHOOK_TIMEOUT_MS", default_value_t = 10_000)]
    pub webhook_timeout_ms: u64,
    /// Extra CA certificates (a PEM file) trusted for https webhook endpoints, besides the
    /// system's; the server does not start if the file cannot be read or holds no certificate.
    #[arg(long, env = "BILLING_WEBHOOK_CA_FILE")]
    pub webhook_ca_file: Option<std::path::PathBuf>,
    /// Pause between polls of the background work queue when nothing is due, in milliseconds.
    #[arg(long, env = "BILLING_WORKER_POLL_MS", default_value_t = 500)]
    pub worker_poll_ms: u64,
    /// Webhook deliveries the worker sends at the same time.
    #[arg(long, env = "BILLING_WORKER_CONCURRENCY", default_value_t = 16)]
    pub worker_concurrency: usize,
    /// Run no background worker in this process (another process delivers webhooks).
    #[arg(long, env = "BILLING_NO_WORKER")]
    pub no_worker: bool,
    /// How much longer than the webhook time-out a claim of background work holds, in
    /// milliseconds; also how soon the work of a crashed process is taken over.
    #[arg(long, env = "BILLING_WORK_LEASE_MARGIN_MS", default_value_t = 30_000)]
    pub work_lease_margin_ms: u64,
    /// Let webhook endpoints point to loopback, private and link-local addresses. For
    /// development and tests with local receivers only: it lets anyone who may manage webhooks
    /// make this server send requests into its own network.
    #[arg(long, env = "BILLING_WEBHOOK_ALLOW_PRIVATE")]
    pub webhook_allow_private: bool,
    /// Turns `GET /metrics` on: a scrape must send `Authorization: Bearer <token>`. Without
    /// it, `/metrics` is off (404).
    #[arg(long, env = "BILLING_METRICS_TOKEN")]
    pub metrics_token: Option<String>,
    /// Most connections open at once; past it a new connection replaces the oldest idle one,
    /// or gets a 503 when every connection is busy. Default: 4096, lowered to fit the
    /// process's open-file limit.
    #[arg(long, env = "BILLING_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Time a client may take to send a request's headers, in milliseconds, counted from when
    /// its connection opens or from the previous response (so also the keep-alive idle time).
    #[arg(long, env = "BILLING_HEADER_TIMEOUT_MS", default_value_t = 10_000)]
    pub header_timeout_ms: u64,
    /// Time a client may take to send a request's body once its headers are in, in
    /// milliseconds (a 408 past it).
    #[arg(long, env = "BILLING_BODY_TIMEOUT_MS", default_value_t = 30_000)]
    pub body_timeout_ms: u64,
    /// On SIGTERM or SIGINT, how long requests in flight may take to finish before the process
    /// exits anyway, in milliseconds.
    #[arg(long, env = "BILLING_SHUTDOWN_GRACE_MS", default_value_t = 30_000)]
    pub shutdown_grace_ms: u64,
    /// SMTP server of e-mail notifications (host name or address); no e-mail is sent without it.
    #[arg(long, env = "BILLING_SMTP_HOST")]
    pub smtp_host: Option<String>,
    /// SMTP port (default 25, 587 or 465 by --smtp-tls).
    #[arg(long, env = "BILLING_SMTP_PORT")]
    pub smtp_port: Option<u16>,
    /// How the SMTP connection is secured: none, starttls (required) or tls (from the first byte).
    #[arg(long, env = "BILLING_SMTP_TLS", default_value = "starttls", value_parser = billing_server::notify::SmtpTls::parse)]
    pub smtp_tls: billing_server::notify::SmtpTls,
    /// SMTP user name (with --smtp-password).
    #[arg(long, env = "BILLING_SMTP_USERNAME")]
    pub smtp_username: Option<String>,
    /// SMTP password (prefer the environment variable: a flag shows in the process list).
    #[arg(long, env = "BILLING_SMTP_PASSWORD", hide_env_values = true)]
    pub smtp_password: Option<String>,
    /// The e-mails' sender: `billing@example.com` (shown with the organization's name) or
    /// `Name <billing@example.com>`. Needed with --smtp-host.
    #[arg(long, env = "BILLING_SMTP_FROM")]
    pub smtp_from: Option<String>,
    /// Extra CA certificate (PEM) trusted for the SMTP server, besides the system's.
    #[arg(long, env = "BILLING_SMTP_CA_FILE")]
    pub smtp_ca_file: Option<std::path::PathBuf>,
    /// Base URL of the SMS and WhatsApp provider (Twilio's Messages API shape).
    #[arg(long, env = "BILLING_SMS_PROVIDER_URL", default_value = billing_server::notify::DEFAULT_SMS_PROVIDER_URL)]
    pub sms_provider_url: String,
    /// The provider account (its Account SID); no SMS or WhatsApp is sent without it.
    #[arg(long, env = "BILLING_SMS_ACCOUNT_SID")]
    pub sms_account_sid: Option<String>,
    /// The provider account's auth token (prefer the environment variable).
    #[arg(long, env = "BILLING_SMS_AUTH_TOKEN", hide_env_values = true)]
    pub sms_auth_token: Option<String>,
    /// Sender number of SMS (E.164, `+14155550100`); SMS is off without it.
    #[arg(long, env = "BILLING_SMS_FROM")]
    pub sms_from: Option<String>,
    /// Sender number of WhatsApp messages (E.164); WhatsApp is off without it.
    #[arg(long, env = "BILLING_WHATSAPP_FROM")]
    pub whatsapp_from: Option<String>,
    /// Time-out of one notification send (SMTP or the provider), in milliseconds.
    #[arg(long, env = "BILLING_NOTIFY_TIMEOUT_MS", default_value_t = 10_000)]
    pub notify_timeout_ms: u64,
    /// Where invitation e-mails link to (`?token=…` is added; default
    /// `<public URL>/invite/accept`): the page that calls `POST /api/v2/organization/invite/accept`.
    #[arg(long, env = "BILLING_INVITE_URL")]
    pub invite_url: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve the API (what running without a command does). Its options (`--listen`, …) are
    /// the top-level ones: `billing-server --listen 0.0.0.0:8080 serve`, or leave `serve` out.
    Serve,
    /// Create an organization with a default branch, an admin user and an all-branches API key.
    Init {
        /// Print one JSON object (for scripts) instead of text.
        #[arg(long)]
        json: bool,
        #[arg(long, default_value = "My Organization")]
        org_name: String,
        #[arg(long, default_value = "admin@example.com")]
        admin_email: String,
        /// Create a live organization instead of a sandbox one.
        #[arg(long)]
        live: bool,
    },
    /// Manage API keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Support-level organization administration.
    Org {
        #[command(subcommand)]
        command: OrgCommand,
    },
}

#[derive(Subcommand)]
pub enum OrgCommand {
    /// Show or change an organization's settings, including those only support changes.
    Settings {
        #[command(subcommand)]
        command: SettingsCommand,
    },
}

#[derive(Subcommand)]
pub enum SettingsCommand {
    /// Show the organization's settings.
    Show {
        /// Organization (default: the first one in the database).
        #[arg(long)]
        org_id: Option<OrgId>,
        /// Print the settings as one JSON object (the API's OrganizationSettings).
        #[arg(long)]
        json: bool,
    },
    /// Change the support-level settings (the API refuses these): auto-charge, installment
    /// minimums and split period, consumer notifications.
    Set {
        /// Organization (default: the first one in the database).
        #[arg(long)]
        org_id: Option<OrgId>,
        /// `on` or `off`: whether `POST /api/v2/payments/auto-charge-on-demand/{id}` is enabled.
        #[arg(long, value_name = "on|off")]
        auto_charge: Option<String>,
        /// The smallest installment: `<amount>` in the default currency, `<CURRENCY>=<amount>`,
        /// or `<CURRENCY>=none` to offer no installments in that currency (repeat for several).
        #[arg(long = "installment-minimum", value_name = "[CURRENCY=]AMOUNT", allow_hyphen_values = true)]
        installment_minimums: Vec<String>,
        /// Months between two installments, 1 to 12.
        #[arg(long, value_name = "N", allow_hyphen_values = true)]
        installment_split_months: Option<String>,
        /// `on` or `off`: whether the service sends the organization's consumers their
        /// notifications (e-mail, SMS, WhatsApp) itself. Off, it sends none and the
        /// organization sends its own, driven by webhooks.
        #[arg(long, value_name = "on|off")]
        consumer_notifications: Option<String>,
        /// Print the settings now in force as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Create an API key; prints the x-api-key value once.
    Create {
        /// Organization (default: the first one in the database).
        #[arg(long)]
        org_id: Option<OrgId>,
        /// A branch the key may use (repeat for several).
        #[arg(long = "branch")]
        branches: Vec<BranchId>,
        /// The branch used when a request has no x-branch-id (default: the first --branch).
        #[arg(long)]
        default_branch: Option<BranchId>,
        /// Give the key every present and future branch (it acts as an organization admin).
        #[arg(long)]
        all_branches: bool,
        #[arg(long, default_value = "cli")]
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// List an organization's keys (never their secrets).
    List {
        /// Organization (default: the first one in the database).
        #[arg(long)]
        org_id: Option<OrgId>,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: from its next request on it is refused, in every process.
    Revoke {
        /// Organization (default: the first one in the database).
        #[arg(long)]
        org_id: Option<OrgId>,
        /// The key's id (as `keys list` shows it).
        #[arg(long)]
        id: billing_core::ids::ApiKeyId,
    },
}

/// `--listen`: an address, or a host name and port resolved now (its first address).
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    let mut addrs = s.to_socket_addrs().map_err(|e| format!("{s:?} is not a host:port address ({e})"))?;
    // Prefer IPv4 for names such as `localhost`, which most clients try first.
    let all: Vec<SocketAddr> = addrs.by_ref().collect();
    all.iter()
        .find(|a| a.is_ipv4())
        .or(all.first())
        .copied()
        .ok_or_else(|| format!("{s:?} resolves to no address"))
}
