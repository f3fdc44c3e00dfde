//! Organization settings: what organization admins read and change through
//! `GET/PATCH /api/v2/organization/settings`, and what only support changes (the
//! `billing-server org settings set` command).
//!
//! Admins change the default currency, the enabled currencies, the VAT rate, the default
//! ways of paying, the subscription settings ([`super::subscription_settings`]: the lead
//! time of the next invoice, the renewal retry schedule), the per-kind consumer notification
//! switches and the reminder lead time (`notifications`), and the event types new webhook
//! endpoints subscribe to (`webhook_defaults`). Support switches the service's consumer
//! notifications off or on (`consumer_notifications`; the spec: "by contacting support"). The
//! spec reserves auto-charge ("restricted to some organizations") and the installment split
//! period and minimum amounts ("can only be changed by support") to support: a PATCH naming them
//! is a 403 that names the command. Changing settings emits no event (the spec names none).

use super::OrgSettings;
use super::PaymentMethods;
use crate::error::{Error, FieldError, LocPart, Result};
use crate::money::Currency;
use crate::notification::{NotificationSwitches, MAX_REMINDER_DAYS};
use crate::wire::{enum_item, Body};
use rust_decimal::Decimal;
use serde_json::Value;
use std::str::FromStr;

/// The fields an admin may PATCH.
pub const ADMIN_FIELDS: &[&str] = &[
    "default_currency",
    "enabled_currencies",
    "vat_rate",
    "default_payment_methods",
    super::subscription_settings::FIELDS[0],
    super::subscription_settings::FIELDS[1],
    "notifications",
    "webhook_defaults",
];
/// The fields only support changes, with the command that does.
pub const SUPPORT_FIELDS: &[(&str, &str)] = &[
    ("auto_charge_on_demand", "billing-server org settings set --auto-charge on|off"),
    (
        "installment_minimums",
        "billing-server org settings set --installment-minimum <CURRENCY>=<amount>",
    ),
    ("installment_split_months", "billing-server org settings set --installment-split-months <n>"),
    ("consumer_notifications", "billing-server org settings set --consumer-notifications on|off"),
];
const METHOD_FIELDS: &[&str] = &["mada", "visa", "mastercard", "amex", "bank_transfer", "installment", "qurrah"];
/// Most decimal places of a VAT rate in percent (`"15.125"`).
pub const VAT_PERCENT_PLACES: u32 = 4;

/// OrganizationSettingsUpdate: every field optional; what is absent stays as it was.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SettingsPatch {
    pub default_currency: Option<Currency>,
    /// Deduplicated, in the order given; must contain the default and home currencies.
    pub enabled_currencies: Option<Vec<Currency>>,
    /// VAT rate in percent, 0 to 100.
    pub vat_rate_percent: Option<Decimal>,
    /// Changes to the default ways of paying (absent methods keep their value).
    pub default_payment_methods: Option<PaymentMethodsPatch>,
    /// The subscription lead time and renewal retry schedule.
    pub subscriptions: super::subscription_settings::SubscriptionSettingsPatch,
    /// Per-kind notification switches to change (by name: `invoice_sent`, …).
    pub notification_switches: Vec<(&'static str, bool)>,
    /// Days before a later installment's due date that its reminder goes out.
    pub installment_reminder_days: Option<u32>,
    /// The event types new webhook endpoints get by default (`Some(None)`: all).
    pub webhook_event_types: Option<Option<Vec<crate::event::EventType>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PaymentMethodsPatch {
    pub mada: Option<bool>,
    pub visa: Option<bool>,
    pub mastercard: Option<bool>,
    pub amex: Option<bool>,
    pub bank_transfer: Option<bool>,
    pub installment: Option<bool>,
    pub qurrah: Option<bool>,
}

impl PaymentMethodsPatch {
    fn apply(&self, m: &mut PaymentMethods) {
        let pairs = [
            (self.mada, &mut m.mada),
            (self.visa, &mut m.visa),
            (self.mastercard, &mut m.mastercard),
            (self.amex, &mut m.amex),
            (self.bank_transfer, &mut m.bank_transfer),
            (self.installment, &mut m.installment),
            (self.qurrah, &mut m.qurrah),
        ];
        for (v, slot) in pairs {
            if let Some(v) = v {
                *slot = v;
            }
        }
    }
}

/// What support changes (the CLI); every field optional.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SupportSettingsPatch {
    pub auto_charge_on_demand: Option<bool>,
    /// Per currency: `Some(amount)` sets the smallest installment, `None` removes it (the
    /// currency then offers no installments).
    pub installment_minimums: Vec<(Currency, Option<Decimal>)>,
    pub installment_split_months: Option<u32>,
    /// Whether the service notifies consumers itself.
    pub consumer_notifications: Option<bool>,
}

/// The longest installment split period support may set, in months.
pub const MAX_SPLIT_MONTHS: u32 = 12;

fn extra_fields(v: &Value, prefix: Vec<LocPart>, allowed: &[&str], b: &mut Body<'_>) {
    if let Value::Object(m) = v {
        for k in m.keys().filter(|k| !allowed.contains(&k.as_str())) {
            let mut loc = prefix.clone();
            loc.push(k.as_str().into());
            b.problems.push(FieldError::new("extra_forbidden", loc, "Extra inputs are not permitted"));
        }
    }
}

impl SettingsPatch {
    /// Parses an OrganizationSettingsUpdate body. A support-level field is a 403 naming the
    /// command that changes it; unknown fields and wrong values are a 422.
    pub fn parse(v: &Value) -> Result<Self> {
        if let Value::Object(m) = v {
            if let Some((field, cmd)) = SUPPORT_FIELDS.iter().find(|(f, _)| m.contains_key(*f)) {
                return Err(Error::forbidden(format!("`{field}` is changed by support only (`{cmd}`), not through the API")));
            }
        }
        let mut b = Body::new(v);
        extra_fields(v, vec!["body".into()], ADMIN_FIELDS, &mut b);
        let default_currency = b.opt_currency("default_currency");
        let all: Vec<String> = Currency::ALL.iter().map(|c| format!("'{c}'")).collect();
        let expected = all.join(", ");
        let enabled_currencies = b
            .opt_list("enabled_currencies", |v, loc, p| {
                enum_item(v, loc, p, |s| Currency::from_str(s).ok(), &expected)
            })
            .map(|cs| {
                let mut out: Vec<Currency> = Vec::with_capacity(cs.len());
                for c in cs {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
                out
            });
        if enabled_currencies.as_ref().is_some_and(|c| c.is_empty()) {
            b.fail("too_short", "enabled_currencies", "List should have at least 1 item after validation, not 0");
        }
        let vat = b.opt_decimal("vat_rate");
        if let Some(d) = vat {
            if d < Decimal::ZERO || d > Decimal::ONE_HUNDRED {
                b.fail("value_error", "vat_rate", "Value error, the VAT rate is a percentage from 0 to 100");
            } else if d.normalize().scale() > VAT_PERCENT_PLACES {
                b.fail(
                    "decimal_max_places",
                    "vat_rate",
                    format!("Decimal input should have no more than {VAT_PERCENT_PLACES} decimal places"),
                );
            }
        }
        let methods = match b.raw("default_payment_methods") {
            None => None,
            Some(raw) => {
                let loc = b.loc("default_payment_methods");
                let mut p = Body::at(raw, loc.clone());
                extra_fields(raw, loc, METHOD_FIELDS, &mut p);
                let m = PaymentMethodsPatch {
                    mada: p.opt_bool("mada"),
                    visa: p.opt_bool("visa"),
                    mastercard: p.opt_bool("mastercard"),
                    amex: p.opt_bool("amex"),
                    bank_transfer: p.opt_bool("bank_transfer"),
                    installment: p.opt_bool("installment"),
                    qurrah: p.opt_bool("qurrah"),
                };
                let ok = p.problems.is_empty();
                b.problems.0.extend(p.problems.0);
                ok.then_some(m)
            }
        };
        let subscriptions = super::subscription_settings::SubscriptionSettingsPatch::parse(&mut b);
        let mut notification_switches = Vec::new();
        let mut installment_reminder_days = None;
        if let Some(raw) = b.raw("notifications") {
            let loc = b.loc("notifications");
            let mut p = Body::at(raw, loc.clone());
            let mut allowed: Vec<&str> = NotificationSwitches::NAMES.to_vec();
            allowed.push("installment_reminder_days");
            extra_fields(raw, loc, &allowed, &mut p);
            for name in NotificationSwitches::NAMES {
                if let Some(on) = p.opt_bool(name) {
                    notification_switches.push((*name, on));
                }
            }
            if let Some(d) = p.opt_int("installment_reminder_days") {
                if d < 1 || d > i64::from(MAX_REMINDER_DAYS) {
                    p.fail(
                        "value_error",
                        "installment_reminder_days",
                        format!("Value error, reminders go 1 to {MAX_REMINDER_DAYS} days before the due date"),
                    );
                } else {
                    installment_reminder_days = Some(d as u32);
                }
            }
            b.problems.0.extend(p.problems.0);
        }
        let mut webhook_event_types = None;
        if let Some(raw) = b.raw("webhook_defaults") {
            let loc = b.loc("webhook_defaults");
            let mut p = Body::at(raw, loc.clone());
            extra_fields(raw, loc, &["event_types"], &mut p);
            webhook_event_types = crate::webhook::event_types(&mut p, "event_types");
            b.problems.0.extend(p.problems.0);
        }
        b.finish()?;
        Ok(SettingsPatch {
            default_currency,
            enabled_currencies,
            vat_rate_percent: vat.map(|d| d.normalize()),
            default_payment_methods: methods,
            subscriptions,
            notification_switches,
            installment_reminder_days,
            webhook_event_types,
        })
    }

    /// The settings with this patch applied, or a 422 when the result does not hold together
    /// (the default or home currency not enabled).
    pub fn apply(&self, s: &OrgSettings) -> Result<OrgSettings> {
        let mut out = s.clone();
        if let Some(c) = self.default_currency {
            out.default_currency = c;
        }
        if let Some(cs) = &self.enabled_currencies {
            out.enabled_currencies = cs.clone();
        }
        if let Some(p) = self.vat_rate_percent {
            out.vat_rate = (p / Decimal::ONE_HUNDRED).normalize();
        }
        if let Some(m) = &self.default_payment_methods {
            m.apply(&mut out.default_payment_methods);
        }
        self.subscriptions.apply(&mut out);
        for (name, on) in &self.notification_switches {
            if let Some(slot) = out.notifications.slot(name) {
                *slot = *on;
            }
        }
        if let Some(d) = self.installment_reminder_days {
            out.installment_reminder_days = d;
        }
        if let Some(ts) = &self.webhook_event_types {
            out.webhook_defaults.event_types = ts.clone();
        }
        // Name the field the caller changed, so the message points at what to fix.
        let field = if self.enabled_currencies.is_some() {
            "enabled_currencies"
        } else {
            "default_currency"
        };
        for (what, c) in [("default", out.default_currency), ("home", out.home_currency)] {
            if !out.enabled_currencies.contains(&c) {
                return Err(Error::invalid(FieldError::body(
                    "value_error",
                    field,
                    format!("Value error, the {what} currency {c} must be one of the enabled currencies"),
                )));
            }
        }
        Ok(out)
    }

    pub fn is_empty(&self) -> bool {
        self == &SettingsPatch::default()
    }
}

impl SupportSettingsPatch {
    /// The settings with this patch applied, or a one-sentence reason it cannot be.
    pub fn apply(&self, s: &OrgSettings) -> std::result::Result<OrgSettings, String> {
        let mut out = s.clone();
        if let Some(on) = self.auto_charge_on_demand {
            out.auto_charge_on_demand = on;
        }
        if let Some(on) = self.consumer_notifications {
            out.consumer_notifications = on;
        }
        for (c, amount) in &self.installment_minimums {
            match amount {
                Some(a) => {
                    if *a <= Decimal::ZERO {
                        return Err(format!("the installment minimum for {c} must be more than 0, not {a}"));
                    }
                    if a.normalize().scale() > c.minor_digits() {
                        return Err(format!(
                            "the installment minimum {a} has more decimal places than {c} has ({})",
                            c.minor_digits()
                        ));
                    }
                    out.installment_minimums.insert(c.to_string(), *a);
                }
                None => {
                    out.installment_minimums.remove(&c.to_string());
                }
            }
        }
        if let Some(n) = self.installment_split_months {
            if n == 0 || n > MAX_SPLIT_MONTHS {
                return Err(format!("the installment split is 1 to {MAX_SPLIT_MONTHS} months, not {n}"));
            }
            out.installment_split_months = n;
        }
        Ok(out)
    }
}

/// A VAT fraction as the percentage string the API shows (`0.15` → `"15"`).
pub fn vat_percent(fraction: Decimal) -> String {
    (fraction * Decimal::ONE_HUNDRED).normalize().to_string()
}
