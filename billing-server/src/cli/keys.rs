//! `keys create|list|revoke`: API keys, with the database's own access.

use super::args::{KeysCommand, ServeArgs};
use super::org_or_first;
use super::serve::config;
use billing_core::auth::NewApiKey;
use billing_server::App;
use serde_json::json;

pub fn keys(args: &ServeArgs, command: KeysCommand) -> Result<(), Box<dyn std::error::Error>> {
    match command {
        KeysCommand::Create {
            org_id,
            branches,
            default_branch,
            all_branches,
            name,
            json,
        } => {
            if branches.is_empty() && !all_branches {
                return Err("a key needs branches: pass --all-branches (every branch, as an organization admin) or --branch ID, repeatable (see `billing-server keys create --help`)".into());
            }
            let app = App::open(config(args))?;
            let org = org_or_first(&app, org_id)?;
            let (key, pair) = app.billing.api_keys().create_for(
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
        KeysCommand::List { org_id, json } => {
            let app = App::open(config(args))?;
            let keys = app.billing.api_keys().list_of(org_or_first(&app, org_id)?)?;
            if json {
                println!("{}", serde_json::to_string(&keys.iter().map(|k| k.response()).collect::<Vec<_>>())?);
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
        KeysCommand::Revoke { org_id, id } => {
            let app = App::open(config(args))?;
            let k = app.billing.api_keys().revoke_of(org_or_first(&app, org_id)?, id)?;
            println!("API key {} ({}) is revoked.", k.id, k.name);
            Ok(())
        }
    }
}
