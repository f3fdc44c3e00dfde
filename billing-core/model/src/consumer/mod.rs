//! Consumers: an organization's customers, one branch each. Phone and e-mail are unique among
//! a branch's live consumers; delete is soft.
//!
//! - [`store`]: the [`ConsumerTx`] slice of the store contract.
//! - [`wire`]: the requests (readers and their documentation).
//! - [`view`]: the ConsumerResponse view.
//!
//! The operations are billing-core's `consumer` service.

pub mod store;
pub mod view;
pub mod wire;

pub use store::ConsumerTx;
pub use view::{BranchSummary, ConsumerContact, ConsumerIdentity, ConsumerResponse, OrganizationConsumer};
pub use wire::parse_consumer_list;

use crate::clock::Timestamp;
use crate::fields::{Email, Iban, Language, PhoneNumber};
use crate::ids::{BranchId, ConsumerId, OrgId};
use crate::wire_enum;
use serde_json::{Map, Value};

wire_enum!(CommunicationMethod { WhatsApp = "WHATSAPP", Email = "EMAIL", Sms = "SMS" });
wire_enum!(ConsumerType { Individual = "INDIVIDUAL", Business = "BUSINESS" });
wire_enum!(ConsumerSort { Name = "name", CreatedAt = "created_at", Email = "email", PhoneNumber = "phone_number", ExternalId = "external_id" });

/// AddressResponse: a postal address.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[schemars(rename = "AddressResponse")]
pub struct Address {
    /// Street and number.
    pub address_line_1: String,
    /// Building, floor, unit.
    pub address_line_2: Option<String>,
    /// City.
    pub city: String,
    /// Postal (ZIP) code.
    pub postal_code: Option<String>,
    /// Country (a name or an ISO code, as given).
    pub country: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Consumer {
    pub id: ConsumerId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub name: String,
    pub phone_number: Option<PhoneNumber>,
    pub email: Option<Email>,
    pub external_id: Option<String>,
    pub iban: Option<Iban>,
    pub alias: Option<String>,
    pub comment: Option<String>,
    pub preferred_language: Language,
    pub communication_methods: Vec<CommunicationMethod>,
    pub consumer_type: ConsumerType,
    pub address: Option<Address>,
    pub vat_number: Option<String>,
    pub commercial_registration: Option<String>,
    pub external_metadata: Map<String, Value>,
    pub is_deleted: bool,
    pub created_at: Timestamp,
    pub updated_at: Option<Timestamp>,
}

/// Fields of a consumer that a client sets. On create, absent means empty; on update, `None`
/// means "leave as is" (the public API treats an explicit `null` as not given).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsumerFields {
    pub name: Option<String>,
    pub phone_number: Option<PhoneNumber>,
    pub email: Option<Email>,
    pub external_id: Option<String>,
    pub iban: Option<Iban>,
    pub alias: Option<String>,
    pub comment: Option<String>,
    pub preferred_language: Option<Language>,
    pub communication_methods: Option<Vec<CommunicationMethod>>,
    pub consumer_type: Option<ConsumerType>,
    pub address: Option<Address>,
    pub vat_number: Option<String>,
    pub commercial_registration: Option<String>,
    pub external_metadata: Option<Map<String, Value>>,
}

/// Consumer list filters beyond the common parameters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsumerFilter {
    pub external_id: Option<String>,
    /// `external_metadata.<key>=<value>`: exact, case-sensitive, all must match.
    pub metadata: Vec<(String, String)>,
}
