//! `serve` (the default command): the configuration from the options, and serving until a
//! signal, then a graceful shutdown.

use super::args::{DbArgs, ServeArgs, DEFAULT_DATABASE_URL};
use billing_core::fields::Email;
use billing_core::org::BootstrapRequest;
use billing_server::{App, Config};

/// The configuration of a command that does not serve (no background worker).
pub fn config(args: &ServeArgs) -> Config {
    serve_config(args, false)
}

pub fn serve_config(args: &ServeArgs, serving: bool) -> Config {
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
pub fn notify_config(args: &ServeArgs) -> Result<billing_server::notify::NotifyConfig, String> {
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
pub fn require_existing_sqlite(db: &DbArgs) -> Result<(), Box<dyn std::error::Error>> {
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

pub fn serve(mut args: ServeArgs) -> Result<(), Box<dyn std::error::Error>> {
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
    if app.billing.org().is_empty()? {
        let boot = app.billing.org().bootstrap(&BootstrapRequest {
            org_name: "My Organization".into(),
            admin_email: Email::parse("admin@example.com")?,
            sandbox: true,
        })?;
        super::init::print_bootstrap(&boot);
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
