//! Idempotency keys: `billing_model::idempotency::IdempotencyTx`. Claims and finishes run in
//! `SERIALIZABLE` write transactions, so two claims of one key (in any process) are decided one
//! after the other (the loser is retried by the store and then sees the winner's row); the
//! primary key refuses a second insert of a new key. The mark in an operation's transaction is
//! an `UPDATE` guarded by the owner token: it takes the row's lock, so a takeover and a mark
//! never both succeed.

use crate::support::*;
use billing_model::clock::Timestamp;
use billing_model::idempotency::{Claim, IdempotencyRecord, IdempotencyTx, State, StoredResponse};
use billing_model::ids::OrgId;
use diesel::prelude::*;

diesel::table! {
    idempotency_keys (org_id, scope, key) {
        org_id -> Uuid,
        scope -> Text,
        key -> Text,
        fingerprint -> Text,
        state -> Text,
        owner -> Uuid,
        created_at -> Timestamptz,
        lease_until -> Timestamptz,
        response_status -> Nullable<Int4>,
        response_headers -> Nullable<Jsonb>,
        response_body -> Nullable<Bytea>,
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = idempotency_keys, check_for_backend(diesel::pg::Pg), treat_none_as_null = true)]
pub struct KeyRow {
    pub org_id: Uuid,
    pub scope: String,
    pub key: String,
    pub fingerprint: String,
    pub state: String,
    pub owner: Uuid,
    pub created_at: Ts,
    pub lease_until: Ts,
    pub response_status: Option<i32>,
    pub response_headers: Option<Value>,
    pub response_body: Option<Vec<u8>>,
}

impl KeyRow {
    fn new(r: &IdempotencyRecord) -> Self {
        KeyRow {
            org_id: r.org_id.0,
            scope: r.scope.clone(),
            key: r.key.clone(),
            fingerprint: r.fingerprint.clone(),
            state: r.state.as_str().to_string(),
            owner: r.owner,
            created_at: r.created_at,
            lease_until: r.lease_until,
            response_status: r.response.as_ref().map(|x| i32::from(x.status)),
            response_headers: r.response.as_ref().map(|x| to_json("response headers", &x.headers)),
            response_body: r.response.as_ref().map(|x| x.body.clone()),
        }
    }

    fn into_domain(self) -> StoreResult<IdempotencyRecord> {
        let response = match (self.response_status, self.response_headers, self.response_body) {
            (Some(status), Some(headers), Some(body)) => Some(StoredResponse {
                status: u16::try_from(status).map_err(|_| unreadable("response status", status))?,
                headers: from_json("response headers", headers)?,
                body,
            }),
            _ => None,
        };
        Ok(IdempotencyRecord {
            org_id: self.org_id.into(),
            scope: self.scope,
            key: self.key,
            fingerprint: self.fingerprint,
            state: State::parse(&self.state).ok_or_else(|| unreadable("idempotency state", &self.state))?,
            owner: self.owner,
            created_at: self.created_at,
            lease_until: self.lease_until,
            response,
        })
    }
}

impl IdempotencyTx for PgTx<'_> {
    fn idempotency_record(&mut self, org: OrgId, scope: &str, key: &str) -> StoreResult<Option<IdempotencyRecord>> {
        use idempotency_keys::dsl as k;
        let row = self.read(|c| {
            k::idempotency_keys
                .filter(k::org_id.eq(org.0))
                .filter(k::scope.eq(scope))
                .filter(k::key.eq(key))
                .select(KeyRow::as_select())
                .first(c)
                .optional()
        })?;
        row.map(KeyRow::into_domain).transpose()
    }

    fn insert_idempotency_record(&mut self, r: &IdempotencyRecord) -> StoreResult<()> {
        let row = KeyRow::new(r);
        self.write(|c| diesel::insert_into(idempotency_keys::table).values(&row).execute(c)).map(drop)
    }

    fn update_idempotency_record(&mut self, r: &IdempotencyRecord, owner: Uuid) -> StoreResult<bool> {
        use idempotency_keys::dsl as k;
        let row = KeyRow::new(r);
        let n = self.change(|c| {
            diesel::update(
                k::idempotency_keys
                    .filter(k::org_id.eq(r.org_id.0))
                    .filter(k::scope.eq(&r.scope))
                    .filter(k::key.eq(&r.key))
                    .filter(k::owner.eq(owner)),
            )
            .set(&row)
            .execute(c)
        })?;
        Ok(n > 0)
    }

    fn mark_idempotency_committed(&mut self, c: &Claim, lease_until: Timestamp) -> StoreResult<bool> {
        use idempotency_keys::dsl as k;
        let n = self.change(|conn| {
            diesel::update(
                k::idempotency_keys
                    .filter(k::org_id.eq(c.org_id.0))
                    .filter(k::scope.eq(&c.scope))
                    .filter(k::key.eq(&c.key))
                    .filter(k::owner.eq(c.owner))
                    .filter(k::state.ne(State::Done.as_str())),
            )
            .set((k::state.eq(State::Committed.as_str()), k::lease_until.eq(lease_until)))
            .execute(conn)
        })?;
        Ok(n > 0)
    }

    fn release_idempotency_record(&mut self, c: &Claim) -> StoreResult<bool> {
        use idempotency_keys::dsl as k;
        let n = self.change(|conn| {
            diesel::delete(
                k::idempotency_keys
                    .filter(k::org_id.eq(c.org_id.0))
                    .filter(k::scope.eq(&c.scope))
                    .filter(k::key.eq(&c.key))
                    .filter(k::owner.eq(c.owner))
                    .filter(k::state.eq(State::Running.as_str())),
            )
            .execute(conn)
        })?;
        Ok(n > 0)
    }

    fn purge_idempotency_records(&mut self, org: OrgId, before: Timestamp) -> StoreResult<u64> {
        use idempotency_keys::dsl as k;
        let n = self.change(|c| diesel::delete(k::idempotency_keys.filter(k::org_id.eq(org.0)).filter(k::created_at.lt(before))).execute(c))?;
        Ok(n as u64)
    }
}
