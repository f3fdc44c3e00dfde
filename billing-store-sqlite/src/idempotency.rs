//! Idempotency keys: `billing_model::idempotency::IdempotencyTx`. Every write runs under the
//! single writer, so a claim's read and its insert or update are never interleaved with
//! another's.

use crate::sql::*;
use billing_model::clock::Timestamp;
use billing_model::idempotency::{Claim, IdempotencyRecord, IdempotencyTx, State, StoredResponse};
use billing_model::ids::OrgId;
use billing_model::store::StoreResult;
use rusqlite::types::Value as SqlValue;

table! {
    pub Keys in "idempotency_keys" for IdempotencyRecord |k, r, at| {
        org_id: u(k.org_id) => get_id(r, at)?,
        scope: s(&k.scope) => r.get::<_, String>(at)?,
        key: s(&k.key) => r.get::<_, String>(at)?,
        fingerprint: s(&k.fingerprint) => r.get::<_, String>(at)?,
        state: s(k.state.as_str()) => get_parsed(r, at, State::parse)?,
        owner: u(k.owner) => r.get::<_, uuid::Uuid>(at)?,
        created_at: t(&k.created_at) => get_ts(r, at)?,
        lease_until: t(&k.lease_until) => get_ts(r, at)?,
        response_status: k.response.as_ref().map(|x| i(i64::from(x.status))).unwrap_or(SqlValue::Null) => r.get::<_, Option<i64>>(at)?,
        response_headers: k.response.as_ref().map(|x| j(&x.headers)).unwrap_or(SqlValue::Null) => get_json_opt::<Vec<(String, String)>>(r, at)?,
        response_body: k.response.as_ref().map(|x| SqlValue::Blob(x.body.clone())).unwrap_or(SqlValue::Null) => r.get::<_, Option<Vec<u8>>>(at)?,
    } => IdempotencyRecord {
        org_id,
        scope,
        key,
        fingerprint,
        state,
        owner,
        created_at,
        lease_until,
        response: match (response_status, response_headers, response_body) {
            (Some(status), Some(headers), Some(body)) => Some(StoredResponse {
                status: u16::try_from(status).map_err(|_| bad(8, format!("status {status}")))?,
                headers,
                body,
            }),
            _ => None,
        },
    }
}

impl IdempotencyTx for SqliteTx<'_> {
    fn idempotency_record(&mut self, org: OrgId, scope: &str, key: &str) -> StoreResult<Option<IdempotencyRecord>> {
        self.one(
            sql!(
                "SELECT {} FROM idempotency_keys WHERE org_id = ?1 AND scope = ?2 AND key = ?3",
                Keys::sql().select
            ),
            vec![u(org), s(scope), s(key)],
            Keys::row,
        )
    }

    fn insert_idempotency_record(&mut self, r: &IdempotencyRecord) -> StoreResult<()> {
        self.exec(&Keys::sql().insert, Keys::params(r)?).map(drop)
    }

    fn update_idempotency_record(&mut self, r: &IdempotencyRecord, owner: uuid::Uuid) -> StoreResult<bool> {
        let mut params = Keys::params(r)?;
        params.push(u(owner));
        let n = self.exec(
            "UPDATE idempotency_keys SET fingerprint = ?4, state = ?5, owner = ?6, created_at = ?7, lease_until = ?8, \
             response_status = ?9, response_headers = ?10, response_body = ?11 \
             WHERE org_id = ?1 AND scope = ?2 AND key = ?3 AND owner = ?12",
            params,
        )?;
        Ok(n > 0)
    }

    fn mark_idempotency_committed(&mut self, c: &Claim, lease_until: Timestamp) -> StoreResult<bool> {
        let n = self.exec(
            "UPDATE idempotency_keys SET state = 'COMMITTED', lease_until = ?5 \
             WHERE org_id = ?1 AND scope = ?2 AND key = ?3 AND owner = ?4 AND state <> 'DONE'",
            vec![u(c.org_id), s(&c.scope), s(&c.key), u(c.owner), t(&lease_until)],
        )?;
        Ok(n > 0)
    }

    fn release_idempotency_record(&mut self, c: &Claim) -> StoreResult<bool> {
        let n = self.exec(
            "DELETE FROM idempotency_keys WHERE org_id = ?1 AND scope = ?2 AND key = ?3 AND owner = ?4 AND state = 'RUNNING'",
            vec![u(c.org_id), s(&c.scope), s(&c.key), u(c.owner)],
        )?;
        Ok(n > 0)
    }

    fn purge_idempotency_records(&mut self, org: OrgId, before: Timestamp) -> StoreResult<u64> {
        let n = self.exec("DELETE FROM idempotency_keys WHERE org_id = ?1 AND created_at < ?2", vec![u(org), t(&before)])?;
        Ok(n as u64)
    }
}
