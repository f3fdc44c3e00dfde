//! `init`: a new organization with its first branch, admin and API key.

use super::args::ServeArgs;
use super::serve::config;
use billing_core::fields::Email;
use billing_core::org::BootstrapRequest;
use billing_server::App;
use serde_json::json;

/// Creates the organization and prints what was made (as text, or one JSON object).
pub fn init(args: &ServeArgs, json: bool, org_name: String, admin_email: String, live: bool) -> Result<(), Box<dyn std::error::Error>> {
    let app = App::open(config(args))?;
    let boot = app.billing.org().bootstrap(&BootstrapRequest {
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

pub fn print_bootstrap(boot: &billing_core::org::Bootstrap) {
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
