//! Consumers: `billing_model::consumer::ConsumerTx`.

use crate::prefetch::ReadAhead;
use crate::support::*;
use billing_model::consumer::{Address, CommunicationMethod, Consumer, ConsumerFilter, ConsumerSort, ConsumerType};
use billing_model::fields::{Email, Iban, PhoneNumber};
use billing_model::ids::{BranchId, ConsumerId};
use billing_model::list::{Direction, ListQuery, Page};
use billing_model::store::StoreResult;
use diesel::pg::Pg;
use diesel::prelude::*;
use std::collections::HashMap;
use uuid::Uuid;

diesel::table! {
    consumers (id) {
        id -> Uuid,
        org_id -> Uuid,
        branch_id -> Uuid,
        name -> Text,
        phone_number -> Nullable<Text>,
        email -> Nullable<Text>,
        email_lower -> Nullable<Text>,
        external_id -> Nullable<Text>,
        iban -> Nullable<Text>,
        alias -> Nullable<Text>,
        comment -> Nullable<Text>,
        preferred_language -> Text,
        communication_methods -> Array<Text>,
        consumer_type -> Text,
        address -> Nullable<Jsonb>,
        vat_number -> Nullable<Text>,
        commercial_registration -> Nullable<Text>,
        external_metadata -> Jsonb,
        is_deleted -> Bool,
        created_at -> Timestamptz,
        updated_at -> Nullable<Timestamptz>,
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

// --- consumers -------------------------------------------------------------------------------

pub(crate) fn consumers_matching<'a>(branch: Uuid, q: &'a ListQuery<ConsumerSort>, f: &'a ConsumerFilter, coll: &'static str) -> consumers::BoxedQuery<'a, Pg> {
    use consumers::dsl as c;
    let mut query = c::consumers.filter(c::branch_id.eq(branch)).filter(not(c::is_deleted)).into_boxed();
    if let Some(term) = &q.search {
        let pat = contains_pattern(term);
        query = query.filter(
            folded_like(c::name, pat.clone(), coll)
                .or(folded_like(c::email, pat.clone(), coll))
                .or(folded_like(c::phone_number, pat.clone(), coll))
                .or(folded_like(c::alias, pat.clone(), coll))
                .or(folded_like(c::external_id, pat, coll))
                .or(c::iban.eq(term.as_str())),
        );
    }
    if let Some(x) = &f.external_id {
        query = query.filter(c::external_id.eq(x.as_str()));
    }
    for (key, value) in &f.metadata {
        query = query.filter(c::external_metadata.retrieve_as_text(key.as_str()).eq(value.as_str()));
    }
    query
}

pub fn consumers_page(
    conn: &mut PgConnection,
    branch: Uuid,
    q: &ListQuery<ConsumerSort>,
    f: &ConsumerFilter,
    coll: &'static str,
) -> QueryResult<(Vec<ConsumerRow>, i64)> {
    use consumers::dsl as c;
    let total = consumers_matching(branch, q, f, coll).count().get_result::<i64>(conn)?;
    let query = consumers_matching(branch, q, f, coll).select(ConsumerRow::as_select());
    let query = match q.sort {
        ConsumerSort::Name => order!(query, q.direction, c::name, c::id),
        ConsumerSort::CreatedAt => order!(query, q.direction, c::created_at, c::id),
        ConsumerSort::Email => order!(query, q.direction, nulls c::email, c::id),
        ConsumerSort::PhoneNumber => order!(query, q.direction, nulls c::phone_number, c::id),
        ConsumerSort::ExternalId => order!(query, q.direction, nulls c::external_id, c::id),
    };
    let (limit, offset) = page_bounds(q);
    let rows = query.limit(limit).offset(offset).load(conn)?;
    Ok((rows, total))
}

/// What a batch read ahead of consumers: an outcome batch's invoices' consumers.
#[derive(Default)]
pub(crate) struct Ahead {
    consumers: HashMap<Uuid, Consumer>,
}

impl ReadAhead for Ahead {
    fn is_empty(&self) -> bool {
        self.consumers.is_empty()
    }

    /// Nothing: no write of a batch changes a consumer.
    fn forget(&mut self, _id: Uuid) {}
}

impl PgTx<'_> {
    /// Reads ahead the consumers `ids`, in one statement.
    pub(crate) fn consumers_ahead(&mut self, ids: &[Uuid]) -> StoreResult<Ahead> {
        let rows: Vec<ConsumerRow> = self.read_apart(|c| {
            use consumers::dsl as k;
            k::consumers.filter(k::id.eq_any(ids)).select(ConsumerRow::as_select()).load(c)
        })?;
        let mut ahead = Ahead::default();
        for row in rows {
            let c = row.into_domain()?;
            ahead.consumers.insert(c.id.0, c);
        }
        Ok(ahead)
    }

    /// The consumer as read ahead, once, when it is of `branch`.
    fn take_prefetched_consumer(&mut self, branch: BranchId, id: ConsumerId) -> Option<Consumer> {
        let ahead = self.ahead::<Ahead>()?;
        match ahead.consumers.get(&id.0) {
            Some(c) if c.branch_id == branch => ahead.consumers.remove(&id.0),
            _ => None,
        }
    }
}

impl billing_model::consumer::ConsumerTx for PgTx<'_> {
    // --- consumers ---------------------------------------------------------------------------

    fn insert_consumer(&mut self, cons: &Consumer) -> StoreResult<()> {
        let row = NewConsumerRow::new(cons);
        self.write(|c| diesel::insert_into(consumers::table).values(&row).execute(c)).map(drop)
    }

    fn consumer(&mut self, branch: BranchId, id: ConsumerId) -> StoreResult<Option<Consumer>> {
        if let Some(found) = self.take_prefetched_consumer(branch, id) {
            return Ok(Some(found));
        }
        use consumers::dsl as k;
        self.read_apart(|c| {
            k::consumers
                .filter(k::id.eq(id.0))
                .filter(k::branch_id.eq(branch.0))
                .select(ConsumerRow::as_select())
                .first(c)
                .optional()
        })?
        .map(ConsumerRow::into_domain)
        .transpose()
    }

    fn consumers_by_ids(&mut self, branch: BranchId, ids: &[ConsumerId]) -> StoreResult<Vec<Consumer>> {
        use consumers::dsl as k;
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let ids: Vec<Uuid> = ids.iter().map(|i| i.0).collect();
        self.read(|c| {
            k::consumers
                .filter(k::id.eq_any(&ids))
                .filter(k::branch_id.eq(branch.0))
                .select(ConsumerRow::as_select())
                .load(c)
        })?
        .into_iter()
        .map(ConsumerRow::into_domain)
        .collect()
    }

    fn update_consumer(&mut self, cons: &Consumer) -> StoreResult<()> {
        let row = NewConsumerRow::new(cons);
        self.write(|c| diesel::update(consumers::table.find(cons.id.0)).set(&row).execute(c)).map(drop)
    }

    fn consumer_conflict(&mut self, branch: BranchId, phone: Option<&str>, email_lower: Option<&str>, except: ConsumerId) -> StoreResult<Option<Consumer>> {
        use consumers::dsl as k;
        // One lookup per partial unique index (consumers_branch_phone_key, _email_key), never
        // `phone = … OR email = …`: an OR walks the branch's rows and, under SERIALIZABLE, takes
        // predicate locks on all of them, so every concurrent insert in the branch would
        // conflict with this check.
        if let Some(p) = phone {
            let row = self.read(|c| {
                k::consumers
                    .filter(k::branch_id.eq(branch.0))
                    .filter(k::phone_number.eq(p))
                    .filter(not(k::is_deleted))
                    .filter(k::id.ne(except.0))
                    .select(ConsumerRow::as_select())
                    .first(c)
                    .optional()
            })?;
            if let Some(r) = row {
                return r.into_domain().map(Some);
            }
        }
        if let Some(e) = email_lower {
            let row = self.read(|c| {
                k::consumers
                    .filter(k::branch_id.eq(branch.0))
                    .filter(k::email_lower.eq(e))
                    .filter(not(k::is_deleted))
                    .filter(k::id.ne(except.0))
                    .select(ConsumerRow::as_select())
                    .first(c)
                    .optional()
            })?;
            return row.map(ConsumerRow::into_domain).transpose();
        }
        Ok(None)
    }

    fn list_consumers(&mut self, branch: BranchId, q: &ListQuery<ConsumerSort>, f: &ConsumerFilter) -> StoreResult<Page<Consumer>> {
        let coll = self.search_collation;
        let (rows, total) = self.read(|c| consumers_page(c, branch.0, q, f, coll))?;
        page(q.page, q.limit, rows, total, ConsumerRow::into_domain)
    }
}
