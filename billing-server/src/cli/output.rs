//! What the command line says: errors as one sentence, usage errors, and the logs.

use std::process::ExitCode;

/// An error as the command line says it: the store's own words without the "store failure"
/// label, a refusal's words without its API code, field errors by field.
pub fn sentence(e: &(dyn std::error::Error + 'static)) -> String {
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
pub fn usage_error(e: clap::Error) -> ExitCode {
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
pub fn init_logging() -> Result<(), String> {
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
