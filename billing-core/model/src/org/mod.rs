//! Organizations, users and invitations: the tenant every other resource belongs to.
//!
//! - [`store`]: the [`OrgTx`] slice of the store contract.
//! - [`wire`]: the requests (readers and their documentation).
//! - [`view`]: MeResponse, OrganizationInviteResponse, InviteAccepted.
//! - [`settings`]: the settings admins change (`/organization/settings`) and those support
//!   changes; [`settings_view`]: OrganizationSettings.
//! - [`accept`]: accepting an invitation.
//!
//! The operations are billing-core's `org` service.

pub mod accept;
pub mod settings;
pub mod settings_view;
pub mod store;
pub mod subscription_settings;
pub mod view;
pub mod wire;

pub use store::OrgTx;

use crate::clock::{Clock, Timestamp};
use crate::fields::{Email, Language};
use crate::ids::{BranchId, InvitationId, OrgId, UserId};
use crate::money::Currency;
use crate::wire_enum;
use chrono::Duration;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// Per-organization settings, kept together so that new settings do not need a schema change.
/// Admins change some through the API, support the rest (see [`settings`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OrgSettings {
    /// VAT rate as a fraction (0.15 = 15 %).
    pub vat_rate: Decimal,
    pub home_currency: Currency,
    pub default_currency: Currency,
    pub enabled_currencies: Vec<Currency>,
    /// The smallest installment per currency code (`{"SAR": "100"}`); a currency without a
    /// minimum offers no installments. Changed only by support.
    pub installment_minimums: std::collections::BTreeMap<String, Decimal>,
    /// Months between two installments (the split period).
    pub installment_split_months: u32,
    /// Whether `POST /payments/auto-charge-on-demand/{id}` is enabled for the organization.
    pub auto_charge_on_demand: bool,
    /// The ways of paying a payment link offers when it is created without `payment_methods`.
    pub default_payment_methods: PaymentMethods,
    /// How many days before a subscription's period end the next cycle's invoice is prepared
    /// (0: at the period end). See [`subscription_settings`].
    pub subscription_invoice_lead_days: u32,
    /// When a declined renewal charge is retried, in days after the first attempt (strictly
    /// increasing); after the last retry fails the subscription becomes INACTIVE.
    pub subscription_renewal_retry_days: Vec<u32>,
    /// Whether the service notifies consumers itself (e-mail, SMS, WhatsApp); on by default,
    /// switched off by support only (the spec: "by contacting support").
    pub consumer_notifications: bool,
    /// Per-kind switches of consumer notifications (admins).
    pub notifications: crate::notification::NotificationSwitches,
    /// Days before a later installment's due date that the consumer is reminded (admins).
    pub installment_reminder_days: u32,
    /// What a new webhook endpoint gets when its request leaves it out (admins).
    pub webhook_defaults: WebhookDefaults,
}

/// Which ways of paying an invoice or a payment link offers (InvoicePaymentMethodDto); an
/// organization's default for new links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct PaymentMethods {
    pub mada: bool,
    pub visa: bool,
    pub mastercard: bool,
    pub amex: bool,
    pub bank_transfer: bool,
    pub installment: bool,
    pub qurrah: bool,
}

/// Defaults of new webhook endpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct WebhookDefaults {
    /// The event types a new endpoint subscribes to when `event_types` is left out; `None`:
    /// every type (also future ones).
    #[serde(with = "event_type_names")]
    pub event_types: Option<Vec<crate::event::EventType>>,
}

/// Event types stored by name (unknown names, from a newer version, are dropped).
mod event_type_names {
    use crate::event::EventType;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Vec<EventType>>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(|ts| ts.iter().map(|t| t.as_str()).collect::<Vec<_>>()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<EventType>>, D::Error> {
        let names: Option<Vec<String>> = Option::deserialize(d)?;
        Ok(names.map(|ns| ns.iter().filter_map(|n| EventType::parse(n)).collect()))
    }
}

impl Default for OrgSettings {
    fn default() -> Self {
        Self {
            vat_rate: Decimal::new(15, 2),
            home_currency: Currency::SAR,
            default_currency: Currency::SAR,
            enabled_currencies: vec![Currency::SAR],
            installment_minimums: [("SAR".to_string(), Decimal::new(100, 0))].into_iter().collect(),
            installment_split_months: 1,
            auto_charge_on_demand: false,
            default_payment_methods: PaymentMethods {
                mada: true,
                visa: true,
                mastercard: true,
                amex: true,
                bank_transfer: false,
                installment: true,
                qurrah: false,
            },
            subscription_invoice_lead_days: subscription_settings::DEFAULT_LEAD_DAYS,
            subscription_renewal_retry_days: subscription_settings::default_retry_days(),
            consumer_notifications: true,
            notifications: Default::default(),
            installment_reminder_days: crate::notification::DEFAULT_REMINDER_DAYS,
            webhook_defaults: WebhookDefaults::default(),
        }
    }
}

impl OrgSettings {
    /// Whether a notification of `kind` may be sent for an organization with these settings:
    /// its switch (a kind without one always), and consumer notifications on.
    pub fn notifies(&self, kind: crate::notification::Kind) -> bool {
        match self.notifications.get(kind) {
            None => true,
            Some(on) => on && self.consumer_notifications,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Organization {
    pub id: OrgId,
    pub name: String,
    pub name_en: Option<String>,
    pub sandbox: bool,
    pub settings: OrgSettings,
    /// How far the sandbox test clock is ahead of the server clock, in microseconds. Always 0
    /// for a live organization; only ever grows.
    pub clock_offset_us: i64,
    /// The farthest target of a sandbox clock advance under way (organization time). An
    /// advance steps the clock through the due times on its way, so the clock lags its target
    /// meanwhile; a concurrent advance starts from here, so that concurrent advances add up.
    pub clock_advancing_to: Option<Timestamp>,
    pub created_at: Timestamp,
}

impl Organization {
    /// The organization's current time: the server clock, shifted by the test clock in sandbox.
    pub fn now(&self, clock: &dyn Clock) -> Timestamp {
        clock.now() + Duration::microseconds(self.clock_offset_us)
    }
}

wire_enum!(
    /// User roles of the public API.
    Role {
        OrganizationAdmin = "organization_admin",
        BranchAdmin = "branch_admin",
        BranchUser = "branch_user",
    }
);

#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: UserId,
    pub org_id: OrgId,
    pub email: Email,
    pub first_name: String,
    pub last_name: String,
    pub en_first_name: Option<String>,
    pub en_last_name: Option<String>,
    pub role: Role,
    /// Assigned branches (organization admins see every branch regardless).
    pub branch_ids: Vec<BranchId>,
    pub created_at: Timestamp,
}

/// An invitation to join the organization; its e-mail is a notification ([`crate::notification`])
/// with a link to accept it ([`accept`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Invitation {
    pub id: InvitationId,
    pub organization_id: OrgId,
    pub email: Email,
    pub role: Role,
    pub branches: Vec<BranchId>,
    pub created_by: UserId,
    pub language: Language,
    pub expire_at: Timestamp,
    pub created_at: Timestamp,
    /// When it was accepted (it works once), and by which new user.
    pub accepted_at: Option<Timestamp>,
    pub accepted_by: Option<UserId>,
}

/// How long an invitation stays valid.
pub const INVITATION_TTL_DAYS: i64 = 7;

/// What [`crate::Billing::bootstrap`] creates an organization from.
#[derive(Debug, Clone)]
pub struct BootstrapRequest {
    pub org_name: String,
    pub admin_email: Email,
    pub sandbox: bool,
}

/// OrganizationInviteCreate.
#[derive(Debug, Clone, PartialEq)]
pub struct InviteRequest {
    pub email: Email,
    pub role: Role,
    pub branches: Vec<BranchId>,
}
