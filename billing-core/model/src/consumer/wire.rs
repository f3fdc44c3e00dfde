//! Consumer requests (ConsumerCreate, ConsumerUpdate, list parameters) and the ConsumerResponse
//! view.

use super::{Address, CommunicationMethod, Consumer, ConsumerFields, ConsumerFilter, ConsumerSort, ConsumerType};
use crate::branch::Branch;
use crate::clock::Timestamp;
use crate::error::Result;
use crate::fields::{Email, Iban, Language, PhoneNumber};
use crate::ids::{BranchId, ConsumerId};
use crate::list::{ListQuery, Query, QueryParams};
use crate::wire::{enum_item, Body};
use serde_json::{json, Map, Value};

/// ConsumerResponse of the public API.
#[derive(Debug, serde::Serialize)]
pub struct ConsumerResponse<'a> {
    pub id: ConsumerId,
    pub name: &'a str,
    pub phone_number: Option<&'a PhoneNumber>,
    pub email: Option<&'a Email>,
    pub external_id: Option<&'a str>,
    pub consumer: ConsumerIdentity<'a>,
    pub iban: Option<&'a Iban>,
    pub is_deleted: bool,
    pub alias: Option<&'a str>,
    #[serde(with = "crate::clock::wire_time")]
    pub created_at: Timestamp,
    #[serde(with = "crate::clock::wire_time::option")]
    pub updated_at: Option<Timestamp>,
    pub branch: BranchSummary<'a>,
    pub comment: Option<&'a str>,
    pub communication_methods: &'a [CommunicationMethod],
    pub preferred_language: Language,
    pub consumer_type: ConsumerType,
    pub address: Option<&'a Address>,
    pub vat_number: Option<&'a str>,
    pub commercial_registration: Option<&'a str>,
    pub external_metadata: &'a Map<String, Value>,
    pub last_invoice_activity: Option<Value>,
}

/// The nested `consumer` object of ConsumerResponse.
#[derive(Debug, serde::Serialize)]
pub struct ConsumerIdentity<'a> {
    pub id: ConsumerId,
    pub phone_number: Option<&'a PhoneNumber>,
    pub preferred_language: Language,
}

/// The `{id, name}` branch summary embedded in resources.
#[derive(Debug, serde::Serialize)]
pub struct BranchSummary<'a> {
    pub id: BranchId,
    pub name: &'a str,
}

impl Consumer {
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

    /// The consumer summary embedded in invoices and subscriptions.
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

const MAX_TEXT: usize = 255;

impl ConsumerFields {
    /// ConsumerCreate (`name` required) or ConsumerUpdate (everything optional).
    pub fn parse(v: &Value, create: bool) -> Result<Self> {
        let mut b = Body::new(v);
        let name = if create { b.req_text("name", MAX_TEXT) } else { b.opt_text("name", MAX_TEXT) };
        let f = ConsumerFields {
            name,
            phone_number: b.opt_parsed("phone_number", PhoneNumber::parse),
            email: b.opt_parsed("email", Email::parse),
            external_id: b.opt_text("external_id", MAX_TEXT),
            iban: b.opt_str("iban").and_then(|s| match Iban::parse(&s) {
                Ok(i) => Some(i),
                Err(msg) => {
                    b.fail("string_too_long", "iban", msg);
                    None
                }
            }),
            alias: b.opt_text("alias", MAX_TEXT),
            comment: b.opt_free_text("comment", crate::wire::MAX_NOTE),
            preferred_language: b.opt_parsed("preferred_language", Language::parse),
            communication_methods: b.opt_list("communication_methods", |v, loc, p| {
                enum_item(v, loc, p, CommunicationMethod::parse, &CommunicationMethod::expected())
            }),
            consumer_type: b.opt_enum("consumer_type", ConsumerType::parse, &ConsumerType::expected()),
            address: parse_address(&mut b),
            vat_number: b.opt_text("vat_number", MAX_TEXT),
            commercial_registration: b.opt_text("commercial_registration", MAX_TEXT),
            external_metadata: b.opt_object("external_metadata"),
        };
        b.finish()?;
        Ok(f)
    }
}

fn parse_address(b: &mut Body<'_>) -> Option<Address> {
    let raw = b.raw("address")?;
    let mut a = Body::at(raw, b.loc("address"));
    let addr = Address {
        address_line_1: a.req_text("address_line_1", MAX_TEXT).unwrap_or_default(),
        address_line_2: a.opt_free_text("address_line_2", MAX_TEXT),
        city: a.req_text("city", MAX_TEXT).unwrap_or_default(),
        postal_code: a.opt_free_text("postal_code", MAX_TEXT),
        country: a.req_text("country", MAX_TEXT).unwrap_or_default(),
    };
    let ok = a.problems.is_empty();
    b.problems.0.extend(a.problems.0);
    ok.then_some(addr)
}

pub fn parse_consumer_list(params: &QueryParams) -> Result<(ListQuery<ConsumerSort>, ConsumerFilter)> {
    let mut q = Query::new(params);
    let list = q.list(ConsumerSort::CreatedAt, ConsumerSort::parse, &ConsumerSort::expected());
    let filter = ConsumerFilter {
        external_id: q.str("external_id"),
        metadata: params.with_prefix("external_metadata.").map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    };
    q.finish()?;
    Ok((list, filter))
}
