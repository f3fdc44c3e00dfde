//! What the API (and `org settings show --json`) shows of an organization's settings:
//! OrganizationSettings.

use super::settings::vat_percent;
use super::{OrgSettings, PaymentMethods};
use crate::event::EventType;
use crate::ids::OrgId;
use crate::money::Currency;
use crate::notification::NotificationSwitches;
use crate::schema::{Integer, JsonObject};
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;
use std::str::FromStr;

/// OrganizationSettings: what the organization's admins set (through the API) and what
/// support sets (through the command line).
#[derive(Debug, Serialize, JsonSchema)]
pub struct OrganizationSettings<'a> {
    /// The organization's id.
    pub organization_id: OrgId,
    /// The organization's own currency (set when it is made).
    pub home_currency: Option<Currency>,
    /// The currency of a new invoice, link or subscription that names none; one of
    /// `enabled_currencies`.
    pub default_currency: Option<Currency>,
    /// The currencies invoices, links and subscriptions may be in (the default and home
    /// currencies among them).
    pub enabled_currencies: &'a [Currency],
    /// The VAT rate in percent, as a decimal string (`"15"`, `"15.5"`).
    pub vat_rate: String,
    /// The ways of paying a new payment link offers when it names none: one switch each of
    /// `mada`, `visa`, `mastercard`, `amex`, `bank_transfer`, `installment`, `qurrah`.
    #[schemars(with = "JsonObject")]
    pub default_payment_methods: &'a PaymentMethods,
    /// Whether charging a saved card on demand (`POST /payments/auto-charge-on-demand/{id}`)
    /// is enabled (support sets it).
    pub auto_charge_on_demand: bool,
    /// The smallest amount that can be paid in installments, per currency code, as a decimal
    /// string in the currency's minor units (`{"SAR": "100.00"}`); a currency left out offers
    /// no installments (support sets them).
    #[schemars(with = "JsonObject")]
    pub installment_minimums: BTreeMap<&'a str, String>,
    /// Months between two installments (support sets it).
    #[schemars(with = "Integer")]
    pub installment_split_months: u32,
    /// Whether the service notifies consumers itself (e-mail, SMS, WhatsApp); support
    /// switches it.
    pub consumer_notifications: bool,
    /// One switch per kind of consumer notification (`invoice_sent`, `payment_receipt`,
    /// `installment_reminder`, `installment_failed`, `subscription_renewal_failed`) and
    /// `installment_reminder_days`: how many days before a later installment's due date the
    /// consumer is reminded.
    #[schemars(with = "JsonObject")]
    pub notifications: NotificationSettings,
    /// What a new webhook endpoint gets when its request leaves it out: `event_types` (the
    /// list) and `all_event_types` (whether it is every type, future ones too).
    #[schemars(with = "JsonObject")]
    pub webhook_defaults: WebhookDefaultsView,
    /// How many days before a subscription's period end the next cycle's invoice is prepared
    /// (0: at the period end).
    #[schemars(with = "Integer")]
    pub subscription_invoice_lead_days: u32,
    /// When a declined renewal charge is retried, in days after the first attempt (strictly
    /// increasing); after the last retry fails the subscription becomes INACTIVE.
    #[schemars(with = "Vec<Integer>")]
    pub subscription_renewal_retry_days: &'a [u32],
}

/// The `notifications` of OrganizationSettings.
#[derive(Debug, Serialize)]
pub struct NotificationSettings {
    #[serde(flatten)]
    pub switches: NotificationSwitches,
    pub installment_reminder_days: u32,
}

/// The `webhook_defaults` of OrganizationSettings.
#[derive(Debug, Serialize)]
pub struct WebhookDefaultsView {
    pub event_types: Vec<&'static str>,
    pub all_event_types: bool,
}

impl OrgSettings {
    /// OrganizationSettings of `org_id`, borrowed from its settings.
    pub fn view(&self, org_id: OrgId) -> OrganizationSettings<'_> {
        let installment_minimums = self
            .installment_minimums
            .iter()
            .map(|(c, a)| {
                let digits = Currency::from_str(c).map(|c| c.minor_digits()).unwrap_or(2);
                let mut a = *a;
                a.rescale(digits);
                (c.as_str(), a.to_string())
            })
            .collect();
        let types = self.webhook_defaults.event_types.as_deref().unwrap_or(EventType::ALL);
        OrganizationSettings {
            organization_id: org_id,
            home_currency: Some(self.home_currency),
            default_currency: Some(self.default_currency),
            enabled_currencies: &self.enabled_currencies,
            vat_rate: vat_percent(self.vat_rate),
            default_payment_methods: &self.default_payment_methods,
            auto_charge_on_demand: self.auto_charge_on_demand,
            installment_minimums,
            installment_split_months: self.installment_split_months,
            consumer_notifications: self.consumer_notifications,
            notifications: NotificationSettings {
                switches: self.notifications,
                installment_reminder_days: self.installment_reminder_days,
            },
            webhook_defaults: WebhookDefaultsView {
                event_types: types.iter().map(|t| t.as_str()).collect(),
                all_event_types: self.webhook_defaults.event_types.is_none(),
            },
            subscription_invoice_lead_days: self.subscription_invoice_lead_days,
            subscription_renewal_retry_days: &self.subscription_renewal_retry_days,
        }
    }
}
