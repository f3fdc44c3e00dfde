//! `org settings show|set`: an organization's settings, including those only support changes.

use super::args::{ServeArgs, SettingsCommand};
use super::org_or_first;
use super::serve::config;
use billing_server::App;

/// `org settings show|set`: support acts on the database directly, like `keys`.
pub fn org_settings(args: &ServeArgs, command: SettingsCommand) -> Result<(), Box<dyn std::error::Error>> {
    use billing_core::org::settings::SupportSettingsPatch;
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
        None => app.billing.org().settings_of(org).map_err(one_sentence)?,
        Some((auto_charge_on_demand, minimums, installment_split_months, consumer_notifications)) => {
            let current = app.billing.org().settings_of(org).map_err(one_sentence)?;
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
            app.billing.org().support_update_settings(org, &patch).map_err(one_sentence)?
        }
    };
    if json {
        println!("{}", serde_json::to_string(&settings.view(org))?);
    } else {
        let v = serde_json::to_value(settings.view(org))?;
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
