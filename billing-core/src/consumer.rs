//! Consumers: an organization's customers, one branch each. Phone and e-mail are unique among
//! a branch's live consumers; delete is soft.

use crate::auth::Scope;
use crate::branch::Branch;
use crate::clock::Timestamp;
use crate::engine::Billing;
use crate::error::{Code, Error, Result, StoreError};
use crate::fields::{Email, Iban, Language, PhoneNumber};
use crate::ids::{BranchId, ConsumerId, OrgId};
use crate::list::{ListQuery, Page, Query, QueryParams};
use crate::store::{Store, Tx};
use crate::wire::{enum_item, Body};
use crate::wire_enum;
use serde_json::{json, Map, Value};

wire_enum!(CommunicationMethod { WhatsApp = "WHATSAPP", Email = "EMAIL", Sms = "SMS" });
wire_enum!(ConsumerType { Individual = "INDIVIDUAL", Business = "BUSINESS" });
wire_enum!(ConsumerSort { Name = "name", CreatedAt = "created_at", Email = "email", PhoneNumber = "phone_number", ExternalId = "external_id" });

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Address {
    pub address_line_1: String,
    pub address_line_2: Option<String>,
    pub city: String,
    pub postal_code: Option<String>,
    pub country: String,
}

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
            comment: b.opt_str("comment"),
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
        address_line_2: a.opt_str("address_line_2"),
        city: a.req_text("city", MAX_TEXT).unwrap_or_default(),
        postal_code: a.opt_str("postal_code"),
        country: a.req_text("country", MAX_TEXT).unwrap_or_default(),
    };
    let ok = a.problems.is_empty();
    b.problems.0.extend(a.problems.0);
    ok.then_some(addr)
}

/// Consumer list filters beyond the common parameters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsumerFilter {
    pub external_id: Option<String>,
    /// `external_metadata.<key>=<value>`: exact, case-sensitive, all must match.
    pub metadata: Vec<(String, String)>,
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

/// Phone and e-mail must be unique among the branch's live consumers.
fn check_unique(tx: &mut dyn Tx, c: &Consumer) -> Result<()> {
    let email = c.email.as_ref().map(Email::normalized);
    if let Some(other) = tx.consumer_conflict(c.branch_id, c.phone_number.as_ref().map(PhoneNumber::as_str), email.as_deref(), c.id)? {
        let info = match (&c.phone_number, &other.phone_number, &c.email) {
            (Some(p), Some(op), _) if p == op => format!("Consumer with phone number '{p}' already exists"),
            (_, _, Some(e)) => format!("Consumer with email '{e}' already exists"),
            _ => "Consumer with the same phone number or e-mail already exists".to_string(),
        };
        return Err(Error::rule(Code::DUPLICATE_CONSUMER, info));
    }
    Ok(())
}

/// Concurrent writers can both pass [`check_unique`]; the store's unique index then decides.
fn duplicate_from_index(e: Error) -> Error {
    match e {
        Error::Store(StoreError::UniqueViolation(name)) if name.starts_with("consumers_branch_") => {
            Error::rule(Code::DUPLICATE_CONSUMER, "Consumer with the same phone number or e-mail already exists")
        }
        e => e,
    }
}

impl<S: Store> Billing<S> {
    pub fn create_consumer(&self, scope: &Scope, f: ConsumerFields) -> Result<Consumer> {
        let now = self.now(scope);
        let c = Consumer {
            id: ConsumerId::new(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            name: f
                .name
                .ok_or_else(|| Error::invalid(crate::error::FieldError::body("missing", "name", "Field required")))?,
            phone_number: f.phone_number,
            email: f.email,
            external_id: f.external_id,
            iban: f.iban,
            alias: f.alias,
            comment: f.comment,
            preferred_language: f.preferred_language.unwrap_or_default(),
            communication_methods: f.communication_methods.unwrap_or_default(),
            consumer_type: f.consumer_type.unwrap_or(ConsumerType::Individual),
            address: f.address,
            vat_number: f.vat_number,
            commercial_registration: f.commercial_registration,
            external_metadata: f.external_metadata.unwrap_or_default(),
            is_deleted: false,
            created_at: now,
            updated_at: None,
        };
        // Insert-only, and the unique indexes on phone and e-mail keep the rule: a duplicate
        // inserted concurrently after `check_unique` is refused by the index, with the same error.
        self.store
            .write_inserts(|tx| {
                check_unique(tx, &c)?;
                tx.insert_consumer(&c)?;
                Ok(c.clone())
            })
            .map_err(duplicate_from_index)
    }

    /// A consumer of the request's branch (deleted ones too: they show `is_deleted`).
    pub fn get_consumer(&self, scope: &Scope, id: ConsumerId) -> Result<Consumer> {
        self.store
            .read(|tx| Ok(tx.consumer(scope.branch_id(), id)?))?
            .ok_or_else(|| Error::not_found("Consumer", id))
    }

    pub fn list_consumers(&self, scope: &Scope, q: &ListQuery<ConsumerSort>, f: &ConsumerFilter) -> Result<Page<Consumer>> {
        self.store.read(|tx| Ok(tx.list_consumers(scope.branch_id(), q, f)?))
    }

    pub fn update_consumer(&self, scope: &Scope, id: ConsumerId, f: ConsumerFields) -> Result<Consumer> {
        let now = self.now(scope);
        self.store
            .write(|tx| {
                let mut c = tx
                    .consumer(scope.branch_id(), id)?
                    .filter(|c| !c.is_deleted)
                    .ok_or_else(|| Error::not_found("Consumer", id))?;
                let f = f.clone();
                macro_rules! set {
                    ($($field:ident),*) => {$( if let Some(v) = f.$field { c.$field = Some(v); } )*};
                }
                set!(
                    phone_number,
                    email,
                    external_id,
                    iban,
                    alias,
                    comment,
                    address,
                    vat_number,
                    commercial_registration
                );
                if let Some(n) = f.name {
                    c.name = n;
                }
                if let Some(l) = f.preferred_language {
                    c.preferred_language = l;
                }
                if let Some(m) = f.communication_methods {
                    c.communication_methods = m;
                }
                if let Some(t) = f.consumer_type {
                    c.consumer_type = t;
                }
                if let Some(m) = f.external_metadata {
                    c.external_metadata = m;
                }
                c.updated_at = Some(now);
                check_unique(tx, &c)?;
                tx.update_consumer(&c)?;
                Ok(c)
            })
            .map_err(duplicate_from_index)
    }

    /// Soft delete: the consumer leaves lists and frees its phone and e-mail.
    pub fn delete_consumer(&self, scope: &Scope, id: ConsumerId) -> Result<()> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut c = tx
                .consumer(scope.branch_id(), id)?
                .filter(|c| !c.is_deleted)
                .ok_or_else(|| Error::not_found("Consumer", id))?;
            if tx.consumer_has_open_invoices(scope.branch_id(), id)? {
                return Err(Error::rule(
                    Code::CONSUMER_HAS_ONGOING_INVOICES,
                    format!("Consumer '{id}' has invoices that are not completed or canceled"),
                ));
            }
            c.is_deleted = true;
            c.updated_at = Some(now);
            tx.update_consumer(&c)?;
            Ok(())
        })
    }
}
