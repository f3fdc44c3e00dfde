//! `billing-server`: serve the API (default), `init` a database, manage `keys`, or change an
//! organization's support-level settings (`org settings`).

use billing_core::auth::NewApiKey;
use billing_core::fields::Email;
use billing_core::ids::{BranchId, OrgId};
use billing_core::org::BootstrapRequest;
use billing_server::{App, Config, DEFAULT_BODY_LIMIT};
use clap::{Args, Parser, Subcommand};
use serde_json::json;
use std::net::SocketAddr;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "billing-server", version, about = "Billing and payment-collection engine, public API v2")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[global_allocator]
static ALLOCATOR: billing_server::Allocator = billing_server::Allocator {};

const DEFAULT_DATABASE_URL: &str = "./billing.db";

#[derive(Args, Clone)]
struct DbArgs {
    /// Database: a SQLite file path, `sqlite://path`, `sqlite::memory:`, or `postgres://user@host:port/db`.
    #[arg(long, env = "BILLING_DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true)]
    database_url: String,
    /// Create the SQLite database file when there is none at the path. Without it only `init`
    /// and the default `./billing.db` make a new file, so a misspelt path is an error rather
    /// than a new, empty database.
    #[arg(long, env = "BILLING_CREATE", global = true)]
    create: bool,
    /// Most connections this process opens to PostgreSQL (SQLite ignores it).
    #[arg(long, env = "BILLING_DATABASE_POOL_SIZE", default_value_t = billing_server::DEFAULT_DATABASE_POOL_SIZE, global = true)]
    database_pool_size: u32,
}

#[derive(Args, Clone)]
struct ServeArgs {
    /// Address to listen on (`host:port`; a name such as `localhost:9000` is resolved).
    #[arg(long, env = "BILLING_LISTEN", default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    listen: SocketAddr,
    /// HS256 secret for bearer tokens. Without it a random one is used, so tokens from
    /// `init` stop working at restart.
    /// Also used by `init` to sign the token it prints: give both the same secret.
    #[arg(long, env = "BILLING_JWT_SECRET", global = true)]
    jwt_secret: Option<String>,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "BILLING_BODY_LIMIT", default_value_t = DEFAULT_BODY_LIMIT)]
    body_limit: usize,
    /// The address clients reach this server at (used in webhook payloads and hosted-page
    /// links); default `http://<listen>`.
    #[arg(long, env = "BILLING_PUBLIC_URL")]
    public_url: Option<String>,
    /// Time-out of one webhook delivery attempt, in milliseconds.
    #[arg(long, env = "BILLING_WEBHOOK_TIMEOUT_MS", default_value_t = 10_000)]
    webhook_timeout_ms: u64,
    /// Extra CA certificates (a PEM file) trusted for https webhook endpoints, besides the
    /// system's; the server does not start if the file cannot be read or holds no certificate.
    #[arg(long, env = "BILLING_WEBHOOK_CA_FILE")]
    webhook_ca_file: Option<std::path::PathBuf>,
    /// Pause between polls of the background work queue when nothing is due, in milliseconds.
    #[arg(long, env = "BILLING_WORKER_POLL_MS", default_value_t = 500)]
    worker_poll_ms: u64,
    /// Webhook deliveries the worker sends at the same time.
    #[arg(long, env = "BILLING_WORKER_CONCURRENCY", default_value_t = 16)]
    worker_concurrency: usize,
    /// Run no background worker in this process (another process delivers webhooks).
    #[arg(long, env = "BILLING_NO_WORKER")]
    no_worker: bool,
    /// How much longer than the webhook time-out a claim of background work holds, in
    /// milliseconds; also how soon the work of a crashed process is taken over.
    #[arg(long, env = "BILLING_WORK_LEASE_MARGIN_MS", default_value_t = 30_000)]
    work_lease_margin_ms: u64,
    /// Let webhook endpoints point to loopback, private and link-local addresses. For
    /// development and tests with local receivers only: it lets anyone who may manage webhooks
    /// make this server send requests into its own network.
    #[arg(long, env = "BILLING_WEBHOOK_ALLOW_PRIVATE")]
    webhook_allow_private: bool,
    /// Turns `GET /metrics` on: a scrape must send `Authorization: Bearer <token>`. Without
    /// it, `/metrics` is off (404).
    #[arg(long, env = "BILLING_METRICS_TOKEN")]
    metrics_token: Option<String>,
    /// Most connections open at once; past it a new connection replaces the oldest idle one,
    /// or gets a 503 when every connection is busy. Default: 4096, lowered to fit the
    /// process's open-file limit.
    #[arg(long, env = "BILLING_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Time a client may take to send a request's headers, in milliseconds, counted from when
    /// its connection opens or from the previous response (so also the keep-alive idle time).
    #[arg(long, env = "BILLING_HEADER_TIMEOUT_MS", default_value_t = 10_000)]
    header_timeout_ms: u64,
    /// Time a client may take to send a request's body once its headers are in, in
    /// milliseconds (a 408 past it).
    #[arg(long, env = "BILLING_BODY_TIMEOUT_MS", default_value_t = 30_000)]
    body_timeout_ms: u64,
    /// On SIGTERM or SIGINT, how long requests in flight may take to finish before the process
    /// exits anyway, in milliseconds.
    #[arg(long, env = "BILLING_SHUTDOWN_GRACE_MS", default_value_t = 30_000)]
    shutdown_grace_ms: u64,
    /// SMTP server of e-mail notifications (host name or address); no e-mail is sent without it.
    #[arg(long, env = "BILLING_SMTP_HOST")]
    smtp_host: Option<String>,
    /// SMTP port (default 25, 587 or 465 by --smtp-tls).
    #[arg(long, env = "BILLING_SMTP_PORT")]
    smtp_port: Option<u16>,
    /// How the SMTP connection is secured: none, starttls (required) or tls (from the first byte).
    #[arg(long, env = "BILLING_SMTP_TLS", default_value = "starttls", value_parser = billing_server::notify::SmtpTls::parse)]
    smtp_tls: billing_server::notify::SmtpTls,
    /// SMTP user name (with --smtp-password).
    #[arg(long, env = "BILLING_SMTP_USERNAME")]
    smtp_username: Option<String>,
    /// SMTP password (prefer the environment variable: a flag shows in the process list).
    #[arg(long, env = "BILLING_SMTP_PASSWORD", hide_env_values = true)]
    smtp_password: Option<String>,
    /// The e-mails' sender: `billing@example.com` (shown with the organization's name) or
    /// `Name <billing@example.com>`. Needed with --smtp-host.
    #[arg(long, env = "BILLING_SMTP_FROM")]
    smtp_from: Option<String>,
    /// Extra CA certificate (PEM) trusted for the SMTP server, besides the system's.
    #[arg(long, env = "BILLING_SMTP_CA_FILE")]
    smtp_ca_file: Option<std::path::PathBuf>,
    /// Base URL of the SMS and WhatsApp provider (Twilio's Messages API shape).
    #[arg(long, env = "BILLING_SMS_PROVIDER_URL", default_value = billing_server::notify::DEFAULT_SMS_PROVIDER_URL)]
    sms_provider_url: String,
    /// The provider account (its Account SID); no SMS or WhatsApp is sent without it.
    #[arg(long, env = "BILLING_SMS_ACCOUNT_SID")]
    sms_account_sid: Option<String>,
    /// The provider account's auth token (prefer the environment variable).
    #[arg(long, env = "BILLING_SMS_AUTH_TOKEN", hide_env_values = true)]
    sms_auth_token: Option<String>,
    /// Sender number of SMS (E.164, `+14155550100`); SMS is off without it.
    #[arg(long, env = "BILLING_SMS_FROM")]
    sms_from: Option<String>,
    /// Sender number of WhatsApp messages (E.164); WhatsApp is off without it.
    #[arg(long, env = "BILLING_WHATSAPP_FROM")]
    whatsapp_from: Option<String>,
    /// Time-out of one notification send (SMTP or the provider), in milliseconds.
    #[arg(long, env = "BILLING_NOTIFY_TIMEOUT_MS", default_value_t = 10_000)]
    notify_timeout_ms: u64,
    /// Where invitation e-mails link to (`?token=…` is added; default
    /// `<public URL>/invite/accept`): the page that calls `POST /api/v2/organization/invite/accept`.
    #[arg(long, env = "BILLING_INVITE_URL")]
    invite_url: Option<String>,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Subcommand)]
enum Command {
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
enum OrgCommand {
    /// Show or change an organization's settings, including those only support changes.
    Settings {
        #[command(subcommand)]
        command: SettingsCommand,
    },
}

#[derive(Subcommand)]
enum SettingsCommand {
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
enum KeysCommand {
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

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    if let Err(e) = init_logging() {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", sentence(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// An error as the command line says it: the store's own words without the "store failure"
/// label, a refusal's words without its API code, field errors by field.
fn sentence(e: &(dyn std::error::Error + 'static)) -> String {
    use billing_core::error::{Error, StoreError};
    let store = |s: &StoreError| match s {
        StoreError::Backend { message, .. } => message.clone(),
        other => other.to_string(),
    };
    match e.downcast_ref::<Error>() {
        Some(Error::Store(s)) => return store(s),
        Some(Error::Rule { code, info }) => return info.clone().unwrap_or_else(|| code.message().to_string()),
        _ => {}
    }
    if let Some(s) = e.downcast_ref::<StoreError>() {
        return store(s);
    }
    e.to_string()
}

/// A command line clap refuses: one sentence (clap's first line, or an invalid value's reason)
/// and where to look, exit 2. `--help` and `--version` print as usual.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).skip_while(|l| l.is_empty());
    let mut first = lines.next().unwrap_or("error: the command line is not valid").to_string();
    // "the following required arguments were not provided:" lists them on the next lines.
    if first.ends_with(':') {
        let listed: Vec<&str> = lines.take_while(|l| !l.is_empty()).collect();
        first = format!("{} {}", first, listed.join(", "));
    }
    let first = if first.starts_with("error:") { first } else { format!("error: {first}") };
    eprintln!("{first} (see `billing-server --help`)");
    ExitCode::from(2)
}

/// Logs to stderr, filtered by `BILLING_LOG` (default `info`), as text or, with
/// `BILLING_LOG_FORMAT=json`, one JSON object per line.
fn init_logging() -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("BILLING_LOG").unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match std::env::var("BILLING_LOG_FORMAT").as_deref() {
        Ok("json") => builder.json().flatten_event(true).with_current_span(false).with_span_list(false).init(),
        Ok("text") | Err(_) => builder
            // Colour codes only for a person at a terminal, never in a log file or pipe.
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        Ok(other) => return Err(format!("BILLING_LOG_FORMAT must be text or json, not {other:?}")),
    }
    Ok(())
}

/// The configuration of a command that does not serve (no background worker).
fn config(args: &ServeArgs) -> Config {
    serve_config(args, false)
}

fn serve_config(args: &ServeArgs, serving: bool) -> Config {
    let jwt_secret = args.jwt_secret.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let public_url = args.public_url.clone().unwrap_or_else(|| format!("http://{}", args.listen));
    Config {
        jwt_secret,
        body_limit: args.body_limit,
        public_url,
        webhook_timeout: std::time::Duration::from_millis(args.webhook_timeout_ms.max(1)),
        worker: serving && !args.no_worker,
        worker_poll_interval: std::time::Duration::from_millis(args.worker_poll_ms.max(1)),
        worker_concurrency: args.worker_concurrency.max(1),
        work_lease_margin: std::time::Duration::from_millis(args.work_lease_margin_ms),
        database_pool_size: args.db.database_pool_size,
        webhook_ca_file: args.webhook_ca_file.clone(),
        webhook_allow_private: args.webhook_allow_private,
        metrics_token: args.metrics_token.clone().filter(|t| !t.is_empty()),
        max_connections: args.max_connections.unwrap_or_else(billing_server::connections::default_max_connections).max(1),
        header_timeout: std::time::Duration::from_millis(args.header_timeout_ms.max(1)),
        body_timeout: std::time::Duration::from_millis(args.body_timeout_ms.max(1)),
        ..Config::new(args.db.database_url.clone())
    }
}

/// The notification senders of `serve`, or one sentence on what is missing.
fn notify_config(args: &ServeArgs) -> Result<billing_server::notify::NotifyConfig, String> {
    use billing_server::notify::{NotifyConfig, SmsConfig, SmtpConfig};
    let smtp = match &args.smtp_host {
        None => None,
        Some(host) => Some(SmtpConfig {
            host: host.trim().to_string(),
            port: args.smtp_port,
            tls: args.smtp_tls,
            username: args.smtp_username.clone(),
            password: args.smtp_password.clone(),
            from: args.smtp_from.clone().ok_or("--smtp-host needs --smtp-from (the e-mails' sender address)")?,
            ca_file: args.smtp_ca_file.clone(),
        }),
    };
    let sms = match (&args.sms_account_sid, &args.sms_auth_token) {
        (None, None) => None,
        (Some(account), Some(token)) => Some(SmsConfig {
            base_url: args.sms_provider_url.trim().to_string(),
            account: account.trim().to_string(),
            token: token.clone(),
            sms_from: args.sms_from.clone(),
            whatsapp_from: args.whatsapp_from.clone(),
        }),
        _ => return Err("give both --sms-account-sid and --sms-auth-token, or neither".into()),
    };
    Ok(NotifyConfig {
        smtp,
        sms,
        timeout: Some(std::time::Duration::from_millis(args.notify_timeout_ms.max(1))),
        invite_url: args.invite_url.clone(),
    })
}

/// A SQLite path with no file is refused unless `--create` (or the default path): a misspelt
/// path must not quietly start a new, empty database with a new organization.
fn require_existing_sqlite(db: &DbArgs) -> Result<(), Box<dyn std::error::Error>> {
    let url = db.database_url.as_str();
    if db.create || url == DEFAULT_DATABASE_URL || (url.contains("://") && !url.starts_with("sqlite://")) {
        return Ok(());
    }
    let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url);
    if path == ":memory:" || std::path::Path::new(path).exists() {
        return Ok(());
    }
    Err(format!("there is no database at {path}: pass --create to make a new one there, or run `billing-server init --database-url {url}`").into())
}

fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let args = cli.serve.clone();
    if !matches!(cli.command, Some(Command::Init { .. })) {
        require_existing_sqlite(&args.db)?;
    }
    match cli.command {
        None | Some(Command::Serve) => serve(args),
        Some(Command::Init {
            json,
            org_name,
            admin_email,
            live,
        }) => {
            let app = App::open(config(&args))?;
            let boot = app.billing.bootstrap(&BootstrapRequest {
                org_name,
                admin_email: Email::parse(&admin_email)?,
                sandbox: !live,
            })?;
            if json {
                println!(
                    "{}",
                    json!({
                        "organization_id": boot.org.id,
                        "branch_id": boot.branch.id,
                        "user_id": boot.user.id,
                        "api_key": boot.api_key.key,
                        "api_secret": boot.api_key.secret,
                        "x_api_key": boot.api_key.header_value(),
                        "token": boot.token,
                    })
                );
            } else {
                print_bootstrap(&boot);
            }
            Ok(())
        }
        Some(Command::Keys {
            command:
                KeysCommand::Create {
                    org_id,
                    branches,
                    default_branch,
                    all_branches,
                    name,
                    json,
                },
        }) => {
            if branches.is_empty() && !all_branches {
                return Err("a key needs branches: pass --all-branches (every branch, as an organization admin) or --branch ID, repeatable (see `billing-server keys create --help`)".into());
            }
            let app = App::open(config(&args))?;
            let org = org_or_first(&app, org_id)?;
            let (key, pair) = app.billing.create_api_key(
                org,
                &NewApiKey {
                    name,
                    branch_ids: branches,
                    default_branch_id: default_branch,
                    is_all_branches: all_branches,
                },
            )?;
            if json {
                println!(
                    "{}",
                    json!({"id": key.id, "organization_id": org, "api_key": pair.key, "api_secret": pair.secret, "x_api_key": pair.header_value(), "branch_ids": key.branch_ids, "default_branch_id": key.default_branch_id, "is_all_branches": key.is_all_branches})
                );
            } else {
                println!("API key created for organization {org}.\nx-api-key: {}", pair.header_value());
            }
            Ok(())
        }
        Some(Command::Keys {
            command: KeysCommand::List { org_id, json },
        }) => {
            let app = App::open(config(&args))?;
            let keys = app.billing.api_keys_of(org_or_first(&app, org_id)?)?;
            if json {
                println!("{}", serde_json::Value::Array(keys.iter().map(|k| k.to_json()).collect()));
            } else {
                for k in &keys {
                    let state = match &k.revoked_at {
                        Some(at) => format!("revoked {}", billing_core::clock::format_rfc3339(at)),
                        None => "active".into(),
                    };
                    let reach = if k.is_all_branches {
                        "all branches".to_string()
                    } else {
                        format!("{} branch(es)", k.branch_ids.len())
                    };
                    println!("{}  {}  {}  {reach}  {state}", k.id, k.key, k.name);
                }
            }
            Ok(())
        }
        Some(Command::Keys {
            command: KeysCommand::Revoke { org_id, id },
        }) => {
            let app = App::open(config(&args))?;
            let k = app.billing.revoke_api_key_of(org_or_first(&app, org_id)?, id)?;
            println!("API key {} ({}) is revoked.", k.id, k.name);
            Ok(())
        }
        Some(Command::Org {
            command: OrgCommand::Settings { command },
        }) => org_settings(&args, command),
    }
}

/// `org settings show|set`: support acts on the database directly, like `keys`.
fn org_settings(args: &ServeArgs, command: SettingsCommand) -> Result<(), Box<dyn std::error::Error>> {
    use billing_core::org::settings::{settings_json, SupportSettingsPatch};
    let (org_id, json, patch) = match command {
        SettingsCommand::Show { org_id, json } => (org_id, json, None),
        SettingsCommand::Set {
            org_id,
            auto_charge,
            installment_minimums,
            installment_split_months,
            consumer_notifications,
            json,
        } => {
            if auto_charge.is_none() && installment_minimums.is_empty() && installment_split_months.is_none() && consumer_notifications.is_none() {
                return Err("nothing to set: give --auto-charge, --installment-minimum, --installment-split-months or --consumer-notifications".into());
            }
            let on_off = |flag: &str, v: Option<&str>| -> Result<Option<bool>, String> {
                match v {
                    None => Ok(None),
                    Some("on") => Ok(Some(true)),
                    Some("off") => Ok(Some(false)),
                    Some(other) => Err(format!("--{flag} is on or off, not {other:?}")),
                }
            };
            let auto_charge_on_demand = on_off("auto-charge", auto_charge.as_deref())?;
            let consumer_notifications = on_off("consumer-notifications", consumer_notifications.as_deref())?;
            let installment_split_months = match installment_split_months {
                None => None,
                Some(n) => Some(
                    n.trim()
                        .parse::<u32>()
                        .map_err(|_| format!("--installment-split-months is a whole number of months from 1 to 12, not {n:?}"))?,
                ),
            };
            (
                org_id,
                json,
                Some((auto_charge_on_demand, installment_minimums, installment_split_months, consumer_notifications)),
            )
        }
    };
    let app = App::open(config(args))?;
    let org = org_or_first(&app, org_id)?;
    let one_sentence = |e: billing_core::error::Error| -> Box<dyn std::error::Error> {
        match e {
            billing_core::error::Error::Validation(d) => d
                .iter()
                .map(|f| f.msg.trim_start_matches("Value error, ").to_string())
                .collect::<Vec<_>>()
                .join("; ")
                .into(),
            billing_core::error::Error::Rule { info: Some(info), .. } => info.into(),
            other => other.to_string().into(),
        }
    };
    let settings = match patch {
        None => app.billing.org_settings_of(org).map_err(one_sentence)?,
        Some((auto_charge_on_demand, minimums, installment_split_months, consumer_notifications)) => {
            let current = app.billing.org_settings_of(org).map_err(one_sentence)?;
            let mut installment_minimums = Vec::new();
            for m in &minimums {
                installment_minimums.push(parse_minimum(m, current.default_currency)?);
            }
            let patch = SupportSettingsPatch {
                auto_charge_on_demand,
                installment_minimums,
                installment_split_months,
                consumer_notifications,
            };
            app.billing.support_update_settings(org, &patch).map_err(one_sentence)?
        }
    };
    if json {
        println!("{}", settings_json(org, &settings));
    } else {
        let v = settings_json(org, &settings);
        let minimums = match v["installment_minimums"].as_object() {
            Some(m) if !m.is_empty() => m
                .iter()
                .map(|(c, a)| format!("{c} {}", a.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(", "),
            _ => "none (no installments)".into(),
        };
        let methods: Vec<&str> = v["default_payment_methods"]
            .as_object()
            .map(|m| m.iter().filter(|(_, on)| on.as_bool() == Some(true)).map(|(k, _)| k.as_str()).collect())
            .unwrap_or_default();
        println!("Settings of organization {org}:");
        println!("  default currency          {}", settings.default_currency);
        println!("  home currency             {}", settings.home_currency);
        println!(
            "  enabled currencies        {}",
            settings.enabled_currencies.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
        );
        println!("  VAT rate                  {} %", v["vat_rate"].as_str().unwrap_or_default());
        println!("  default payment methods   {}", methods.join(", "));
        println!("  auto-charge on demand     {}", if settings.auto_charge_on_demand { "on" } else { "off" });
        println!("  installment minimums      {minimums}");
        println!("  installment split         every {} month(s)", settings.installment_split_months);
        println!(
            "  next invoice lead time    {} day(s) before the period end",
            settings.subscription_invoice_lead_days
        );
        let retries: Vec<String> = settings.subscription_renewal_retry_days.iter().map(u32::to_string).collect();
        match retries.is_empty() {
            true => println!("  renewal retries           none"),
            false => println!("  renewal retries           days {} after the first attempt", retries.join(", ")),
        }
        println!(
            "  consumer notifications    {}",
            if settings.consumer_notifications {
                "on"
            } else {
                "off (the organization sends its own)"
            }
        );
        let kinds: Vec<&str> = billing_core::notification::NotificationSwitches::NAMES
            .iter()
            .copied()
            .filter(|k| v["notifications"][*k].as_bool() == Some(false))
            .collect();
        if !kinds.is_empty() {
            println!("  switched off by an admin  {}", kinds.join(", "));
        }
        println!("  installment reminders     {} day(s) before", settings.installment_reminder_days);
    }
    Ok(())
}

/// `--installment-minimum`: `100`, `USD=25.50` or `USD=none`.
fn parse_minimum(
    s: &str,
    default: billing_core::money::Currency,
) -> Result<(billing_core::money::Currency, Option<rust_decimal::Decimal>), Box<dyn std::error::Error>> {
    use std::str::FromStr;
    let (currency, amount) = match s.split_once('=') {
        Some((c, a)) => {
            let c = billing_core::money::Currency::from_str(c.trim().to_ascii_uppercase().as_str())
                .map_err(|()| format!("--installment-minimum {s:?}: {:?} is not a known currency", c.trim()))?;
            (c, a.trim())
        }
        None => (default, s.trim()),
    };
    if amount.eq_ignore_ascii_case("none") {
        return Ok((currency, None));
    }
    let amount =
        rust_decimal::Decimal::from_str(amount).map_err(|_| format!("--installment-minimum {s:?}: {amount:?} is not an amount such as 100 or 25.50"))?;
    Ok((currency, Some(amount)))
}

/// `--listen`: an address, or a host name and port resolved now (its first address).
fn parse_listen(s: &str) -> Result<SocketAddr, String> {
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

/// The organization a `keys` command acts on: the one named, else the first in the database.
fn org_or_first(app: &App, org: Option<OrgId>) -> Result<OrgId, Box<dyn std::error::Error>> {
    match org {
        Some(o) => Ok(o),
        None => Ok(app
            .billing
            .organizations()?
            .first()
            .map(|o| o.id)
            .ok_or("the database has no organization; run `billing-server init` first")?),
    }
}

fn print_bootstrap(boot: &billing_core::org::Bootstrap) {
    println!(
        "Created {} organization {} with branch {} and admin {}.",
        if boot.org.sandbox { "sandbox" } else { "live" },
        boot.org.id,
        boot.branch.id,
        boot.user.email
    );
    println!(
        "Your API key (shown once; send it in the x-api-key header):\n\n    {}\n",
        boot.api_key.header_value()
    );
}

fn serve(mut args: ServeArgs) -> Result<(), Box<dyn std::error::Error>> {
    // Bind first, so that the default public URL names the real port when listening on port 0.
    let listener = std::net::TcpListener::bind(args.listen).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "address {} is already in use (another billing-server?); choose another with --listen, e.g. --listen 127.0.0.1:8081",
            args.listen
        ),
        _ => format!("cannot listen on {}: {e}", args.listen),
    })?;
    listener.set_nonblocking(true)?;
    args.listen = listener.local_addr()?;
    let mut config = serve_config(&args, true);
    config.notify = notify_config(&args)?;
    let app = App::open(config)?;
    if app.billing.is_empty()? {
        let boot = app.billing.bootstrap(&BootstrapRequest {
            org_name: "My Organization".into(),
            admin_email: Email::parse("admin@example.com")?,
            sandbox: true,
        })?;
        print_bootstrap(&boot);
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let database = billing_server::backend::Backend::redacted(&app.config.database_url);
        tracing::info!(address = %listener.local_addr()?, public_url = %app.config.public_url, %database, "billing-server listening");
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let signal = tokio::select! {
            _ = billing_server::serve(app.clone(), listener) => "the listener stopped",
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        // The listener is closed (the accept loop is gone): no new connection is taken, and
        // the requests already being answered get their answers.
        let waiting = app.in_flight.count();
        tracing::info!(
            signal,
            in_flight = waiting,
            grace_ms = args.shutdown_grace_ms,
            "shutting down: no new connections; finishing the requests in flight"
        );
        let grace = std::time::Duration::from_millis(args.shutdown_grace_ms);
        let until = std::time::Instant::now() + grace;
        let left = app.in_flight.drained(grace).await;
        match left {
            0 => tracing::info!("every request in flight was answered"),
            n => tracing::warn!(unanswered = n, "the shutdown grace period ended with requests still in flight"),
        }
        // Then the background work: nothing more is claimed, and the items being run (a
        // webhook delivery, a gateway charge) finish within what is left of the grace period.
        // One cut short is not lost: its lease runs out and it is run again, here after a
        // restart or by another process.
        if let Some(worker) = app.worker.get().cloned() {
            worker.stop();
            let running = worker.busy();
            if running > 0 {
                tracing::info!(running, "finishing the due work in flight; claiming no more");
            }
            let wait = until.saturating_duration_since(std::time::Instant::now());
            let left = tokio::task::spawn_blocking(move || worker.drained(wait)).await.unwrap_or(running);
            match left {
                0 => tracing::info!(finished = running, "no due work in flight"),
                n => tracing::warn!(
                    unfinished = n,
                    "the shutdown grace period ended with due work in flight; it runs again when its lease ends"
                ),
            }
        }
        tracing::info!("stopped");
        Ok::<_, Box<dyn std::error::Error>>(())
    })
}
