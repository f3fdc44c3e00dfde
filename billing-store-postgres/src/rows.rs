//! Row types, one set per table, and their conversions to and from billing-core's domain types.
//! Diesel's types stop here: nothing outside this crate sees them.
//!
//! - `XRow` is what a `SELECT` reads (`Queryable` + `Selectable`, checked against `schema.rs`).
//! - `NewXRow` is what an `INSERT` writes. `treat_none_as_default_value = false` binds `None` as
//!   NULL instead of leaving the column out, so every insert of a table has the same SQL and
//!   its prepared statement is cached.
//! - Where a row is updated, a changeset (`AsChangeset`, `treat_none_as_null = true`: `None`
//!   clears the column) sets every stored column but the primary key; derived columns
//!   (`coupons.redemptions`) are left out.

use crate::schema::*;
use billing_core::auth::ApiKey;
use billing_core::branch::Branch;
use billing_core::consumer::{Address, CommunicationMethod, Consumer, ConsumerType};
use billing_core::coupon::{Coupon, Discount};
use billing_core::error::StoreError;
use billing_core::event::{EntityType, Event, EventType};
use billing_core::fields::{Email, Iban, Language, PhoneNumber};
use billing_core::money::{self, Currency, Money};
use billing_core::notification::{Channel, Notification};
use billing_core::org::{Invitation, OrgSettings, Organization, Role, User};
use billing_core::product::{Product, ProductPrice, ProductType, RecurringInterval, VatMode};
use billing_core::store::StoreResult;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::{Map, Value};
use uuid::Uuid;

type Ts = DateTime<Utc>;

/// A stored value this version cannot read back (a hand-edited row, a newer schema).
fn unreadable(what: &str, value: impl std::fmt::Display) -> StoreError {
    StoreError::backend(format!("unreadable stored {what}: {value}"))
}

fn to_json<T: serde::Serialize>(what: &str, v: &T) -> Value {
    // Serializing plain data structs to a `Value` cannot fail (no maps with non-string keys).
    serde_json::to_value(v).unwrap_or_else(|e| panic!("{what} serializes to JSON: {e}"))
}

fn from_json<T: serde::de::DeserializeOwned>(what: &str, v: Value) -> StoreResult<T> {
    serde_json::from_value(v).map_err(|e| unreadable(what, e))
}

fn json_object(what: &str, v: Value) -> StoreResult<Map<String, Value>> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(unreadable(what, other)),
    }
}

fn language(s: &str) -> StoreResult<Language> {
    Language::parse(s).map_err(|_| unreadable("language", s))
}

fn currency(s: &str) -> StoreResult<Currency> {
    s.parse().map_err(|_| unreadable("currency", s))
}

fn u64_of(what: &str, v: i64) -> StoreResult<u64> {
    u64::try_from(v).map_err(|_| unreadable(what, v))
}

/// Every stored count is far below `i64::MAX`; saturate rather than wrap if one ever is not.
pub(crate) fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Parses a closed set of names (a `wire_enum!`), or reports the stored text.
macro_rules! parse_enum {
    ($ty:ty, $s:expr) => {
        <$ty>::parse($s).ok_or_else(|| unreadable(stringify!($ty), $s))
    };
}

// --- organizations ---------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = organizations, check_for_backend(diesel::pg::Pg))]
pub struct OrgRow {
    pub id: Uuid,
    pub name: String,
    pub name_en: Option<String>,
    pub sandbox: bool,
    pub settings: Value,
    pub clock_offset_us: i64,
    pub created_at: Ts,
    pub clock_advancing_to: Option<Ts>,
}

#[derive(Insertable, AsChangeset)]
#[diesel(table_name = organizations, treat_none_as_default_value = false, treat_none_as_null = true)]
pub struct NewOrgRow<'a> {
    pub id: Uuid,
    pub name: &'a str,
    pub name_en: Option<&'a str>,
    pub sandbox: bool,
    pub settings: Value,
    pub clock_offset_us: i64,
    pub created_at: Ts,
    pub clock_advancing_to: Option<Ts>,
}

impl<'a> NewOrgRow<'a> {
    pub fn new(o: &'a Organization) -> Self {
        NewOrgRow {
            id: o.id.0,
            name: &o.name,
            name_en: o.name_en.as_deref(),
            sandbox: o.sandbox,
            settings: to_json("organization settings", &o.settings),
            clock_offset_us: o.clock_offset_us,
            created_at: o.created_at,
            clock_advancing_to: o.clock_advancing_to,
        }
    }
}

impl OrgRow {
    pub fn into_domain(self) -> StoreResult<Organization> {
        let settings: OrgSettings = from_json("organization settings", self.settings)?;
        Ok(Organization {
            id: self.id.into(),
            name: self.name,
            name_en: self.name_en,
            sandbox: self.sandbox,
            settings,
            clock_offset_us: self.clock_offset_us,
            created_at: self.created_at,
            clock_advancing_to: self.clock_advancing_to,
        })
    }
}

// --- branches --------------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = branches, check_for_backend(diesel::pg::Pg))]
pub struct BranchRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub name: String,
    pub created_at: Ts,
    pub deleted_at: Option<Ts>,
}

#[derive(Insertable, AsChangeset)]
#[diesel(table_name = branches, treat_none_as_default_value = false, treat_none_as_null = true)]
pub struct NewBranchRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub name: &'a str,
    pub name_key: String,
    pub created_at: Ts,
    pub deleted_at: Option<Ts>,
}

impl<'a> NewBranchRow<'a> {
    pub fn new(b: &'a Branch) -> Self {
        NewBranchRow {
            id: b.id.0,
            org_id: b.org_id.0,
            name: &b.name,
            name_key: Branch::name_key(&b.name),
            created_at: b.created_at,
            deleted_at: b.deleted_at,
        }
    }
}

impl BranchRow {
    pub fn into_domain(self, user_count: u64) -> Branch {
        Branch {
            id: self.id.into(),
            org_id: self.org_id.into(),
            name: self.name,
            created_at: self.created_at,
            deleted_at: self.deleted_at,
            user_count,
        }
    }
}

// --- users -----------------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = users, check_for_backend(diesel::pg::Pg))]
pub struct UserRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    pub en_first_name: Option<String>,
    pub en_last_name: Option<String>,
    pub role: String,
    pub created_at: Ts,
}

#[derive(Insertable)]
#[diesel(table_name = users, treat_none_as_default_value = false)]
pub struct NewUserRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub email: &'a str,
    pub first_name: &'a str,
    pub last_name: &'a str,
    pub en_first_name: Option<&'a str>,
    pub en_last_name: Option<&'a str>,
    pub role: &'static str,
    pub created_at: Ts,
}

impl<'a> NewUserRow<'a> {
    pub fn new(u: &'a User) -> Self {
        NewUserRow {
            id: u.id.0,
            org_id: u.org_id.0,
            email: u.email.as_str(),
            first_name: &u.first_name,
            last_name: &u.last_name,
            en_first_name: u.en_first_name.as_deref(),
            en_last_name: u.en_last_name.as_deref(),
            role: u.role.as_str(),
            created_at: u.created_at,
        }
    }
}

#[derive(Insertable)]
#[diesel(table_name = user_branches)]
pub struct NewUserBranchRow {
    pub user_id: Uuid,
    pub branch_id: Uuid,
    pub position: i32,
}

impl UserRow {
    /// `branch_ids` in their stored order (`user_branches.position`).
    pub fn into_domain(self, branch_ids: Vec<Uuid>) -> StoreResult<User> {
        Ok(User {
            id: self.id.into(),
            org_id: self.org_id.into(),
            email: Email::from_stored(self.email),
            first_name: self.first_name,
            last_name: self.last_name,
            en_first_name: self.en_first_name,
            en_last_name: self.en_last_name,
            role: parse_enum!(Role, &self.role)?,
            branch_ids: branch_ids.into_iter().map(Into::into).collect(),
            created_at: self.created_at,
        })
    }
}

// --- API keys --------------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = api_keys, check_for_backend(diesel::pg::Pg))]
pub struct ApiKeyRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    pub key: String,
    pub secret_hash: String,
    pub branch_ids: Vec<Uuid>,
    pub default_branch_id: Uuid,
    pub is_all_branches: bool,
    pub created_at: Ts,
    pub revoked_at: Option<Ts>,
}

#[derive(Insertable)]
#[diesel(table_name = api_keys, treat_none_as_default_value = false)]
pub struct NewApiKeyRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub user_id: Uuid,
    pub name: &'a str,
    pub key: &'a str,
    pub secret_hash: &'a str,
    pub branch_ids: Vec<Uuid>,
    pub default_branch_id: Uuid,
    pub is_all_branches: bool,
    pub created_at: Ts,
    pub revoked_at: Option<Ts>,
}

impl<'a> NewApiKeyRow<'a> {
    pub fn new(k: &'a ApiKey) -> Self {
        NewApiKeyRow {
            id: k.id.0,
            org_id: k.org_id.0,
            user_id: k.user_id.0,
            name: &k.name,
            key: &k.key,
            secret_hash: &k.secret_hash,
            branch_ids: k.branch_ids.iter().map(|b| b.0).collect(),
            default_branch_id: k.default_branch_id.0,
            is_all_branches: k.is_all_branches,
            created_at: k.created_at,
            revoked_at: k.revoked_at,
        }
    }
}

impl ApiKeyRow {
    pub fn into_domain(self) -> ApiKey {
        ApiKey {
            id: self.id.into(),
            org_id: self.org_id.into(),
            user_id: self.user_id.into(),
            name: self.name,
            key: self.key,
            secret_hash: self.secret_hash,
            branch_ids: self.branch_ids.into_iter().map(Into::into).collect(),
            default_branch_id: self.default_branch_id.into(),
            is_all_branches: self.is_all_branches,
            created_at: self.created_at,
            revoked_at: self.revoked_at,
        }
    }
}

// --- invitations and notifications -----------------------------------------------------------

#[derive(Insertable)]
#[diesel(table_name = invitations)]
pub struct NewInvitationRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub email: &'a str,
    pub role: &'static str,
    pub branch_ids: Vec<Uuid>,
    pub created_by: Uuid,
    pub language: &'static str,
    pub expire_at: Ts,
    pub created_at: Ts,
}

impl<'a> NewInvitationRow<'a> {
    pub fn new(i: &'a Invitation) -> Self {
        NewInvitationRow {
            id: i.id.0,
            org_id: i.organization_id.0,
            email: i.email.as_str(),
            role: i.role.as_str(),
            branch_ids: i.branches.iter().map(|b| b.0).collect(),
            created_by: i.created_by.0,
            language: i.language.as_str(),
            expire_at: i.expire_at,
            created_at: i.created_at,
        }
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = notifications, check_for_backend(diesel::pg::Pg))]
pub struct NotificationRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Option<Uuid>,
    pub channel: String,
    pub recipient: String,
    pub template: String,
    pub language: String,
    pub payload: Value,
    pub created_at: Ts,
    pub sent_at: Option<Ts>,
}

#[derive(Insertable)]
#[diesel(table_name = notifications, treat_none_as_default_value = false)]
pub struct NewNotificationRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Option<Uuid>,
    pub channel: &'static str,
    pub recipient: &'a str,
    pub template: &'a str,
    pub language: &'static str,
    pub payload: &'a Value,
    pub created_at: Ts,
    pub sent_at: Option<Ts>,
}

impl<'a> NewNotificationRow<'a> {
    pub fn new(n: &'a Notification) -> Self {
        NewNotificationRow {
            id: n.id.0,
            org_id: n.org_id.0,
            branch_id: n.branch_id.map(|b| b.0),
            channel: n.channel.as_str(),
            recipient: &n.recipient,
            template: &n.template,
            language: n.language.as_str(),
            payload: &n.payload,
            created_at: n.created_at,
            sent_at: n.sent_at,
        }
    }
}

impl NotificationRow {
    pub fn into_domain(self) -> StoreResult<Notification> {
        Ok(Notification {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.map(Into::into),
            channel: parse_enum!(Channel, &self.channel)?,
            recipient: self.recipient,
            template: self.template,
            language: language(&self.language)?,
            payload: self.payload,
            created_at: self.created_at,
            sent_at: self.sent_at,
        })
    }
}

// --- consumers -------------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = consumers, check_for_backend(diesel::pg::Pg))]
pub struct ConsumerRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: String,
    pub phone_number: Option<String>,
    pub email: Option<String>,
    pub external_id: Option<String>,
    pub iban: Option<String>,
    pub alias: Option<String>,
    pub comment: Option<String>,
    pub preferred_language: String,
    pub communication_methods: Vec<String>,
    pub consumer_type: String,
    pub address: Option<Value>,
    pub vat_number: Option<String>,
    pub commercial_registration: Option<String>,
    pub external_metadata: Value,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

#[derive(Insertable, AsChangeset)]
#[diesel(table_name = consumers, treat_none_as_default_value = false, treat_none_as_null = true)]
pub struct NewConsumerRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: &'a str,
    pub phone_number: Option<&'a str>,
    pub email: Option<&'a str>,
    pub email_lower: Option<String>,
    pub external_id: Option<&'a str>,
    pub iban: Option<&'a str>,
    pub alias: Option<&'a str>,
    pub comment: Option<&'a str>,
    pub preferred_language: &'static str,
    pub communication_methods: Vec<&'static str>,
    pub consumer_type: &'static str,
    pub address: Option<Value>,
    pub vat_number: Option<&'a str>,
    pub commercial_registration: Option<&'a str>,
    pub external_metadata: Value,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl<'a> NewConsumerRow<'a> {
    pub fn new(c: &'a Consumer) -> Self {
        NewConsumerRow {
            id: c.id.0,
            org_id: c.org_id.0,
            branch_id: c.branch_id.0,
            name: &c.name,
            phone_number: c.phone_number.as_ref().map(PhoneNumber::as_str),
            email: c.email.as_ref().map(Email::as_str),
            email_lower: c.email.as_ref().map(Email::normalized),
            external_id: c.external_id.as_deref(),
            iban: c.iban.as_ref().map(Iban::as_str),
            alias: c.alias.as_deref(),
            comment: c.comment.as_deref(),
            preferred_language: c.preferred_language.as_str(),
            communication_methods: c.communication_methods.iter().map(|m| m.as_str()).collect(),
            consumer_type: c.consumer_type.as_str(),
            address: c.address.as_ref().map(|a| to_json("consumer address", a)),
            vat_number: c.vat_number.as_deref(),
            commercial_registration: c.commercial_registration.as_deref(),
            external_metadata: Value::Object(c.external_metadata.clone()),
            is_deleted: c.is_deleted,
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

impl ConsumerRow {
    pub fn into_domain(self) -> StoreResult<Consumer> {
        let communication_methods = self
            .communication_methods
            .iter()
            .map(|m| parse_enum!(CommunicationMethod, m))
            .collect::<StoreResult<Vec<_>>>()?;
        let address: Option<Address> = self.address.map(|a| from_json("consumer address", a)).transpose()?;
        Ok(Consumer {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            name: self.name,
            phone_number: self.phone_number.map(PhoneNumber::from_stored),
            email: self.email.map(Email::from_stored),
            external_id: self.external_id,
            iban: self.iban.map(Iban::from_stored),
            alias: self.alias,
            comment: self.comment,
            preferred_language: language(&self.preferred_language)?,
            communication_methods,
            consumer_type: parse_enum!(ConsumerType, &self.consumer_type)?,
            address,
            vat_number: self.vat_number,
            commercial_registration: self.commercial_registration,
            external_metadata: json_object("consumer external_metadata", self.external_metadata)?,
            is_deleted: self.is_deleted,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

// --- products --------------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = products, check_for_backend(diesel::pg::Pg))]
pub struct ProductRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub product_type: String,
    pub recurring_interval: Option<String>,
    pub recurring_interval_count: i32,
    pub is_active: bool,
    pub external_metadata: Value,
    pub used_in_finalized_invoice: bool,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

#[derive(Insertable, AsChangeset)]
#[diesel(table_name = products, treat_none_as_default_value = false, treat_none_as_null = true)]
pub struct NewProductRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub product_type: &'static str,
    pub recurring_interval: Option<&'static str>,
    pub recurring_interval_count: i32,
    pub is_active: bool,
    pub external_metadata: Value,
    pub sort_price: Option<i64>,
    pub used_in_finalized_invoice: bool,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl<'a> NewProductRow<'a> {
    pub fn new(p: &'a Product, default_currency: Currency) -> StoreResult<Self> {
        Ok(NewProductRow {
            id: p.id.0,
            org_id: p.org_id.0,
            branch_id: p.branch_id.0,
            name: &p.name,
            description: p.description.as_deref(),
            product_type: p.product_type.as_str(),
            recurring_interval: p.recurring_interval.map(|i| i.as_str()),
            // The core keeps 1..=365; anything larger would not be a valid count anyway.
            recurring_interval_count: i32::try_from(p.recurring_interval_count).unwrap_or(i32::MAX),
            is_active: p.is_active,
            external_metadata: Value::Object(p.external_metadata.clone()),
            sort_price: p.primary_price(default_currency).map(|pp| money::stored(pp.amount.amount())).transpose()?,
            used_in_finalized_invoice: p.used_in_finalized_invoice,
            is_deleted: p.is_deleted,
            created_at: p.created_at,
            updated_at: p.updated_at,
        })
    }
}

impl ProductRow {
    pub fn into_domain(self, prices: Vec<ProductPrice>) -> StoreResult<Product> {
        Ok(Product {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            name: self.name,
            description: self.description,
            product_type: parse_enum!(ProductType, &self.product_type)?,
            recurring_interval: self.recurring_interval.as_deref().map(|i| parse_enum!(RecurringInterval, i)).transpose()?,
            recurring_interval_count: u32::try_from(self.recurring_interval_count)
                .map_err(|_| unreadable("recurring_interval_count", self.recurring_interval_count))?,
            is_active: self.is_active,
            external_metadata: json_object("product external_metadata", self.external_metadata)?,
            prices,
            used_in_finalized_invoice: self.used_in_finalized_invoice,
            is_deleted: self.is_deleted,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = product_prices, check_for_backend(diesel::pg::Pg))]
pub struct PriceRow {
    pub id: Uuid,
    pub product_id: Uuid,
    pub currency: String,
    pub amount: i64,
    pub vat_mode: String,
    pub is_active: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

#[derive(Insertable)]
#[diesel(table_name = product_prices, treat_none_as_default_value = false)]
pub struct NewPriceRow {
    pub id: Uuid,
    pub product_id: Uuid,
    pub currency: &'static str,
    pub amount: i64,
    pub vat_mode: &'static str,
    pub is_active: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl NewPriceRow {
    pub fn new(p: &ProductPrice) -> StoreResult<Self> {
        Ok(NewPriceRow {
            id: p.id.0,
            product_id: p.product_id.0,
            currency: p.currency().code(),
            amount: money::stored(p.amount.amount())?,
            vat_mode: VatMode::as_str(p.vat_mode),
            is_active: p.is_active,
            created_at: p.created_at,
            updated_at: p.updated_at,
        })
    }
}

impl PriceRow {
    pub fn into_domain(self) -> StoreResult<ProductPrice> {
        Ok(ProductPrice {
            id: self.id.into(),
            product_id: self.product_id.into(),
            amount: Money::from_stored(self.amount, currency(&self.currency)?),
            vat_mode: VatMode::parse(&self.vat_mode).ok_or_else(|| unreadable("vat_mode", &self.vat_mode))?,
            is_active: self.is_active,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

// --- coupons ---------------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = coupons, check_for_backend(diesel::pg::Pg))]
pub struct CouponRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: String,
    pub is_percentage: bool,
    pub discount_value: i64,
    pub currency: Option<String>,
    pub is_active: bool,
    pub used_in_finalized_invoice: bool,
    pub redemptions: i64,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

#[derive(Insertable)]
#[diesel(table_name = coupons, treat_none_as_default_value = false)]
pub struct NewCouponRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: &'a str,
    pub is_percentage: bool,
    pub discount_value: i64,
    pub currency: Option<&'static str>,
    pub is_active: bool,
    pub used_in_finalized_invoice: bool,
    pub redemptions: i64,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

/// Every stored column of a coupon but the id and the derived `redemptions`.
#[derive(AsChangeset)]
#[diesel(table_name = coupons, treat_none_as_null = true)]
pub struct CouponChangeset<'a> {
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub name: &'a str,
    pub is_percentage: bool,
    pub discount_value: i64,
    pub currency: Option<&'static str>,
    pub is_active: bool,
    pub used_in_finalized_invoice: bool,
    pub is_deleted: bool,
    pub created_at: Ts,
    pub updated_at: Option<Ts>,
}

impl<'a> NewCouponRow<'a> {
    pub fn new(c: &'a Coupon) -> StoreResult<Self> {
        Ok(NewCouponRow {
            id: c.id.0,
            org_id: c.org_id.0,
            branch_id: c.branch_id.0,
            name: &c.name,
            is_percentage: c.discount.is_percentage(),
            discount_value: money::stored(c.discount.value())?,
            currency: c.discount.currency().map(Currency::code),
            is_active: c.is_active,
            used_in_finalized_invoice: c.used_in_finalized_invoice,
            redemptions: i64_of(c.redemptions),
            is_deleted: c.is_deleted,
            created_at: c.created_at,
            updated_at: c.updated_at,
        })
    }

    pub fn changeset(&self) -> CouponChangeset<'a> {
        CouponChangeset {
            org_id: self.org_id,
            branch_id: self.branch_id,
            name: self.name,
            is_percentage: self.is_percentage,
            discount_value: self.discount_value,
            currency: self.currency,
            is_active: self.is_active,
            used_in_finalized_invoice: self.used_in_finalized_invoice,
            is_deleted: self.is_deleted,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

impl CouponRow {
    pub fn into_domain(self) -> StoreResult<Coupon> {
        let currency = self.currency.as_deref().map(currency).transpose()?;
        let discount =
            Discount::from_stored(self.is_percentage, self.discount_value, currency).ok_or_else(|| unreadable("coupon currency", "NULL for a fixed amount"))?;
        Ok(Coupon {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            name: self.name,
            discount,
            is_active: self.is_active,
            used_in_finalized_invoice: self.used_in_finalized_invoice,
            redemptions: u64_of("coupon redemptions", self.redemptions)?,
            is_deleted: self.is_deleted,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

// --- events ----------------------------------------------------------------------------------

#[derive(Queryable, Selectable)]
#[diesel(table_name = events, check_for_backend(diesel::pg::Pg))]
pub struct EventRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub event_type: String,
    pub entity_type: String,
    pub entity_id: Uuid,
    pub payload: Value,
    pub created_at: Ts,
}

/// `seq` is left to the identity column.
#[derive(Insertable)]
#[diesel(table_name = events)]
pub struct NewEventRow<'a> {
    pub id: Uuid,
    pub org_id: Uuid,
    pub branch_id: Uuid,
    pub event_type: &'static str,
    pub entity_type: &'static str,
    pub entity_id: Uuid,
    pub payload: &'a Value,
    pub created_at: Ts,
}

impl<'a> NewEventRow<'a> {
    pub fn new(e: &'a Event) -> Self {
        NewEventRow {
            id: e.id.0,
            org_id: e.org_id.0,
            branch_id: e.branch_id.0,
            event_type: e.event_type.as_str(),
            entity_type: e.entity_type.as_str(),
            entity_id: e.entity_id,
            payload: &e.payload,
            created_at: e.created_at,
        }
    }
}

impl EventRow {
    pub fn into_domain(self) -> StoreResult<Event> {
        Ok(Event {
            id: self.id.into(),
            org_id: self.org_id.into(),
            branch_id: self.branch_id.into(),
            event_type: parse_enum!(EventType, &self.event_type)?,
            entity_type: parse_enum!(EntityType, &self.entity_type)?,
            entity_id: self.entity_id,
            payload: self.payload,
            created_at: self.created_at,
        })
    }
}
