//! The command line of `billing-server`: its arguments ([`args`]), its commands (`serve`,
//! `init`, `keys`, `org settings`) and how it reports ([`output`]).

pub mod args;
pub mod init;
pub mod keys;
pub mod org_settings;
pub mod output;
pub mod serve;

use args::{Cli, Command, OrgCommand};
use billing_core::ids::OrgId;
use billing_server::App;

/// Runs the command of the command line.
pub fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let args = cli.serve.clone();
    if !matches!(cli.command, Some(Command::Init { .. })) {
        serve::require_existing_sqlite(&args.db)?;
    }
    match cli.command {
        None | Some(Command::Serve) => serve::serve(args),
        Some(Command::Init {
            json,
            org_name,
            admin_email,
            live,
        }) => init::init(&args, json, org_name, admin_email, live),
        Some(Command::Keys { command }) => keys::keys(&args, command),
        Some(Command::Org {
            command: OrgCommand::Settings { command },
        }) => org_settings::org_settings(&args, command),
    }
}

/// The organization a `keys` command acts on: the one named, else the first in the database.
pub fn org_or_first(app: &App, org: Option<OrgId>) -> Result<OrgId, Box<dyn std::error::Error>> {
    match org {
        Some(o) => Ok(o),
        None => Ok(app
            .billing
            .org()
            .list()?
            .first()
            .map(|o| o.id)
            .ok_or("the database has no organization; run `billing-server init` first")?),
    }
}
