//! `billing-server`: serve the API (default), `init` a database, manage `keys`, or change an
//! organization's support-level settings (`org settings`).

mod cli;

use clap::Parser;
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: billing_server::Allocator = billing_server::Allocator {};

fn main() -> ExitCode {
    let cli = match cli::args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return cli::output::usage_error(e),
    };
    if let Err(e) = cli::output::init_logging() {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", cli::output::sentence(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}
