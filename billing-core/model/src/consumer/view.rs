//! What the API answers of a consumer: ConsumerResponse (borrowed from the consumer, so it
//! serializes straight to bytes), OrganizationConsumer (the consumer an invoice shows) and the
//! summary embedded in subscriptions.

use super::{Address, CommunicationMethod, Consumer, ConsumerType};
use crate::branch::Branch;
use crate::clock::Timestamp;
use crate::fields::{Email, Iban, Language, PhoneNumber};
use crate::ids::{BranchId, ConsumerId, InvoiceId, SubscriptionId};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// ConsumerResponse: a consumer of the organization (a customer), in one branch.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConsumerResponse<'a> {
    /// The consumer's id.
    pub id: ConsumerId,
    /// The consumer's name (a person or a business).
    pub name: &'a str,
    /// Mobile number in E.164 (`+966501234567`); unique among the branch's live consumers.
    pub phone_number: Option<&'a PhoneNumber>,
    /// E-mail address; unique among the branch's live consumers (compared case-insensitively).
    pub email: Option<&'a Email>,
    /// The merchant's own id for this consumer (filterable in the list).
    pub external_id: Option<&'a str>,
    /// The consumer as a payer: its id, phone and language.
    pub consumer: ConsumerIdentity<'a>,
    /// IBAN of the consumer's bank account (for refunds by transfer).
    pub iban: Option<&'a Iban>,
    /// Whether the consumer was deleted (deleted consumers are kept and still shown).
    pub is_deleted: bool,
    /// A short name the merchant knows the consumer by.
    pub alias: Option<&'a str>,
    /// When the consumer was created.
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub created_at: Timestamp,
    /// When the consumer was last changed; `null` if never.
    #[serde(with = "crate::clock::wire_time::option")]
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<Timestamp>,
    /// The branch the consumer belongs to.
    pub branch: BranchSummary<'a>,
    /// The merchant's note about the consumer.
    pub comment: Option<&'a str>,
    /// How the consumer is notified (invoices, receipts, reminders), in this order.
    pub communication_methods: &'a [CommunicationMethod],
    /// The language of the consumer's notifications and hosted pages.
    pub preferred_language: Language,
    /// An individual or a business.
    pub consumer_type: ConsumerType,
    /// The consumer's postal address.
    pub address: Option<&'a Address>,
    /// The consumer's VAT registration number (businesses).
    pub vat_number: Option<&'a str>,
    /// The consumer's commercial registration number (businesses).
    pub commercial_registration: Option<&'a str>,
    /// Free key/value pairs the merchant keeps with the consumer (filterable in the list as
    /// `external_metadata.<key>=<value>`).
    pub external_metadata: &'a Map<String, Value>,
    /// The consumer's latest invoice; not tracked yet, always `null`.
    #[schemars(with = "Option<LastInvoiceActivity>")]
    pub last_invoice_activity: Option<Value>,
}

/// app__consumer__v2__dtos__Consumer: the consumer as a payer.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "app__consumer__v2__dtos__Consumer")]
pub struct ConsumerIdentity<'a> {
    /// The consumer's id.
    pub id: ConsumerId,
    /// Mobile number in E.164.
    pub phone_number: Option<&'a PhoneNumber>,
    /// The language of the consumer's notifications and hosted pages.
    pub preferred_language: Language,
}

/// Branch: the `{id, name}` of the branch a resource belongs to.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "Branch")]
pub struct BranchSummary<'a> {
    /// The branch's id.
    pub id: BranchId,
    /// The branch's name.
    pub name: &'a str,
}

/// LastInvoiceActivity: a consumer's latest invoice.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LastInvoiceActivity {
    /// The invoice's id.
    pub id: InvoiceId,
    /// The invoice's number in the organization.
    #[schemars(with = "crate::schema::Integer")]
    pub org_invoice_number: u64,
    /// The subscription the invoice bills, if any (the public API's spelling).
    pub subcription_id: Option<SubscriptionId>,
}

/// app__common__dtos__shared__OrganizationConsumer: the consumer an invoice bills, as the
/// invoice shows it.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "app__common__dtos__shared__OrganizationConsumer")]
pub struct OrganizationConsumer<'a> {
    /// The consumer's id.
    pub id: ConsumerId,
    /// The consumer's name (a person or a business).
    pub name: &'a str,
    /// A short name the merchant knows the consumer by.
    pub alias: Option<&'a str>,
    /// E-mail address.
    pub email: Option<&'a Email>,
    /// Mobile number in E.164 (`+966501234567`).
    pub phone_number: Option<&'a PhoneNumber>,
    /// The language of the consumer's notifications and hosted pages.
    #[schemars(with = "Option<Language>")]
    pub preferred_language: Language,
    /// An individual or a business.
    #[schemars(with = "Option<ConsumerType>")]
    pub consumer_type: ConsumerType,
    /// The consumer's postal address.
    pub address: Option<&'a Address>,
    /// The consumer's VAT registration number (businesses).
    pub vat_number: Option<&'a str>,
    /// The consumer's commercial registration number (businesses).
    pub commercial_registration: Option<&'a str>,
    /// The consumer as a payer: its id, contacts and language.
    #[schemars(with = "Option<ConsumerContact<'static>>")]
    pub consumer: ConsumerContact<'a>,
    /// Whether the consumer was deleted since (the invoice still shows it).
    #[schemars(with = "Option<bool>")]
    pub is_deleted: bool,
    /// How the consumer is notified (invoices, receipts, reminders), in this order.
    #[schemars(with = "Option<Vec<CommunicationMethod>>")]
    pub communication_methods: &'a [CommunicationMethod],
}

/// app__common__dtos__shared__Consumer: the consumer as a payer.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "app__common__dtos__shared__Consumer")]
pub struct ConsumerContact<'a> {
    /// The consumer's id.
    pub id: ConsumerId,
    /// Mobile number in E.164.
    pub phone_number: Option<&'a PhoneNumber>,
    /// E-mail address.
    pub email: Option<&'a Email>,
    /// The language of the consumer's notifications and hosted pages.
    #[schemars(with = "Option<Language>")]
    pub preferred_language: Language,
}

impl Consumer {
    /// app__common__dtos__shared__OrganizationConsumer: the consumer as an invoice shows it.
    pub fn organization_consumer(&self) -> OrganizationConsumer<'_> {
        OrganizationConsumer {
            id: self.id,
            name: &self.name,
            alias: self.alias.as_deref(),
            email: self.email.as_ref(),
            phone_number: self.phone_number.as_ref(),
            preferred_language: self.preferred_language,
            consumer_type: self.consumer_type,
            address: self.address.as_ref(),
            vat_number: self.vat_number.as_deref(),
            commercial_registration: self.commercial_registration.as_deref(),
            consumer: ConsumerContact {
                id: self.id,
                phone_number: self.phone_number.as_ref(),
                email: self.email.as_ref(),
                preferred_language: self.preferred_language,
            },
            is_deleted: self.is_deleted,
            communication_methods: &self.communication_methods,
        }
    }

    /// ConsumerResponse, borrowed from the consumer: serializes straight to bytes.
    pub fn response<'a>(&'a self, branch: &'a Branch) -> ConsumerResponse<'a> {
        ConsumerResponse {
            id: self.id,
            name: &self.name,
            phone_number: self.phone_number.as_ref(),
            email: self.email.as_ref(),
            external_id: self.external_id.as_deref(),
            consumer: ConsumerIdentity {
                id: self.id,
                phone_number: self.phone_number.as_ref(),
                preferred_language: self.preferred_language,
            },
            iban: self.iban.as_ref(),
            is_deleted: self.is_deleted,
            alias: self.alias.as_deref(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            branch: BranchSummary {
                id: branch.id,
                name: &branch.name,
            },
            comment: self.comment.as_deref(),
            communication_methods: &self.communication_methods,
            preferred_language: self.preferred_language,
            consumer_type: self.consumer_type,
            address: self.address.as_ref(),
            vat_number: self.vat_number.as_deref(),
            commercial_registration: self.commercial_registration.as_deref(),
            external_metadata: &self.external_metadata,
            last_invoice_activity: None,
        }
    }

    /// ConsumerResponse as a JSON value.
    pub fn to_json(&self, branch: &Branch) -> Value {
        serde_json::to_value(self.response(branch)).expect("serializable")
    }

    /// The consumer summary embedded in subscriptions (invoices embed
    /// [`Self::organization_consumer`]).
    pub fn summary(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "alias": self.alias,
            "email": self.email,
            "phone_number": self.phone_number,
            "preferred_language": self.preferred_language,
            "consumer_type": self.consumer_type,
            "address": self.address,
            "vat_number": self.vat_number,
            "commercial_registration": self.commercial_registration,
            "is_deleted": self.is_deleted,
            "communication_methods": self.communication_methods,
        })
    }
}
