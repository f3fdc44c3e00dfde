//! Consumer requests (ConsumerCreate, ConsumerUpdate, list parameters): their readers, and
//! their documentation.

use super::{Address, CommunicationMethod, ConsumerFields, ConsumerFilter, ConsumerSort, ConsumerType};
use crate::error::Result;
use crate::fields::{Email, Iban, Language, PhoneNumber};
use crate::list::{ListQuery, Query, QueryParams};
use crate::wire::{enum_item, Body};
use serde_json::Value;

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

/// What the requests look like, for `/openapi.json` (the readers above are the truth; the
/// server's tests check that each reads exactly these fields).
pub mod request {
    use super::{CommunicationMethod, ConsumerSort, ConsumerType};
    use crate::schema::{JsonObject, LanguageInput};
    use schemars::JsonSchema;

    /// ConsumerCreate: a new consumer (a customer) in the request's branch.
    #[derive(JsonSchema)]
    pub struct ConsumerCreate {
        /// Free key/value pairs kept with the consumer (filterable in the list).
        pub external_metadata: Option<JsonObject>,
        /// The consumer's name (a person or a business).
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub name: String,
        /// Mobile number in E.164: `+<country code><number>`; unique among the branch's live
        /// consumers.
        #[schemars(regex(pattern = r"^\+[1-9][0-9]{6,14}$"))]
        pub phone_number: Option<String>,
        /// E-mail address; unique among the branch's live consumers.
        #[schemars(email)]
        pub email: Option<String>,
        /// The merchant's own id for the consumer.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub external_id: Option<String>,
        /// IBAN of the consumer's bank account (checked: country, length, check digits).
        #[schemars(length(max = 34))]
        pub iban: Option<String>,
        /// A short name the merchant knows the consumer by.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub alias: Option<String>,
        /// The merchant's note about the consumer.
        #[schemars(length(max = 1000))]
        pub comment: Option<String>,
        /// The language of the consumer's notifications and pages (default `ar`).
        pub preferred_language: Option<LanguageInput>,
        /// How the consumer is notified, in order (default: none).
        pub communication_methods: Option<Vec<CommunicationMethod>>,
        /// An individual (default) or a business.
        pub consumer_type: Option<ConsumerType>,
        /// The consumer's postal address.
        pub address: Option<AddressCreate>,
        /// VAT registration number (businesses).
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub vat_number: Option<String>,
        /// Commercial registration number (businesses).
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub commercial_registration: Option<String>,
    }

    /// ConsumerUpdate: the fields to change (a field left out, or `null`, is kept).
    #[derive(JsonSchema)]
    pub struct ConsumerUpdate {
        /// Replaces the consumer's key/value pairs.
        pub external_metadata: Option<JsonObject>,
        /// The consumer's name.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub name: Option<String>,
        /// Mobile number in E.164: `+<country code><number>`.
        #[schemars(regex(pattern = r"^\+[1-9][0-9]{6,14}$"))]
        pub phone_number: Option<String>,
        /// E-mail address.
        #[schemars(email)]
        pub email: Option<String>,
        /// The merchant's own id for the consumer.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub external_id: Option<String>,
        /// IBAN of the consumer's bank account.
        #[schemars(length(max = 34))]
        pub iban: Option<String>,
        /// A short name the merchant knows the consumer by.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub alias: Option<String>,
        /// The merchant's note about the consumer.
        #[schemars(length(max = 1000))]
        pub comment: Option<String>,
        /// The language of the consumer's notifications and pages.
        pub preferred_language: Option<LanguageInput>,
        /// How the consumer is notified, in order.
        pub communication_methods: Option<Vec<CommunicationMethod>>,
        /// An individual or a business.
        pub consumer_type: Option<ConsumerType>,
        /// The consumer's postal address (replaces the old one).
        pub address: Option<AddressCreate>,
        /// VAT registration number.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub vat_number: Option<String>,
        /// Commercial registration number.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub commercial_registration: Option<String>,
    }

    /// AddressCreate: a postal address.
    #[derive(JsonSchema)]
    pub struct AddressCreate {
        /// Street and number.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub address_line_1: String,
        /// Building, floor, unit.
        pub address_line_2: Option<String>,
        /// City.
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub city: String,
        /// Postal (ZIP) code.
        pub postal_code: Option<String>,
        /// Country (a name or an ISO code).
        #[schemars(length(min = 1, max = 255), regex(pattern = r"\S"))]
        pub country: String,
    }

    crate::list_query! {
        /// Consumers. Also `external_metadata.<key>=<value>` (exact; several keys are ANDed).
        ConsumerListQuery(ConsumerSort) {
            /// Exact match on the merchant's own id.
            external_id: String,
        }
    }
}
