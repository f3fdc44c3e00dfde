//! API keys: `billing_model::auth::ApiKeyTx`, with the one-statement lookup that authenticates
//! every API-key request.

use crate::branch::Branches;
use crate::org::Orgs;
use crate::sql::*;
use billing_model::auth::{ApiKey, ApiKeyTx};
use billing_model::branch::Branch;
use billing_model::clock::Timestamp;
use billing_model::ids::{ApiKeyId, BranchId, OrgId};
use billing_model::org::Organization;
use billing_model::store::StoreResult;
use rusqlite::types::Value as SqlValue;
use uuid::Uuid;

table! {
    pub ApiKeys in "api_keys" for ApiKey |k, r, at| {
        id: u(k.id) => get_id(r, at)?,
        org_id: u(k.org_id) => get_id(r, at)?,
        user_id: u(k.user_id) => get_id(r, at)?,
        name: s(&k.name) => r.get(at)?,
        key: s(&k.key) => r.get(at)?,
        secret_hash: s(&k.secret_hash) => r.get(at)?,
        branch_ids: j(&k.branch_ids) => get_json(r, at)?,
        default_branch_id: u(k.default_branch_id) => get_id(r, at)?,
        is_all_branches: b(k.is_all_branches) => r.get(at)?,
        created_at: t(&k.created_at) => get_ts(r, at)?,
        revoked_at: t_opt(&k.revoked_at) => get_ts_opt(r, at)?,
    } => ApiKey { id, org_id, user_id, name, key, secret_hash, branch_ids, default_branch_id, is_all_branches, created_at, revoked_at }
}

impl ApiKeyTx for SqliteTx<'_> {
    fn insert_api_key(&mut self, k: &ApiKey) -> StoreResult<()> {
        self.exec(&ApiKeys::sql().insert, ApiKeys::params(k)?).map(drop)
    }

    fn api_key_by_key(&mut self, key: &str) -> StoreResult<Option<ApiKey>> {
        self.one(
            sql!("SELECT {} FROM api_keys WHERE key = ?1", ApiKeys::sql().select),
            vec![s(key)],
            ApiKeys::row,
        )
    }

    fn api_key_context(&mut self, key: &str, branch: Option<BranchId>) -> StoreResult<Option<(ApiKey, Organization, Option<Branch>)>> {
        // One statement for the key, its organization and the requested (or default) branch:
        // the lookup every API-key request makes.
        let (keys, orgs) = (ApiKeys::sql().width(), Orgs::sql().width());
        self.one(
            sql!(
                "SELECT {}, {}, {} FROM api_keys k JOIN organizations o ON o.id = k.org_id \
                 LEFT JOIN branches b ON b.id = COALESCE(?2, k.default_branch_id) AND b.org_id = k.org_id AND b.deleted_at IS NULL \
                 WHERE k.key = ?1",
                ApiKeys::sql().select_as("k"),
                Orgs::sql().select_as("o"),
                Branches::sql().select_as("b")
            ),
            vec![s(key), branch.map(u).unwrap_or(SqlValue::Null)],
            |r| {
                let found = r.get::<_, Option<Uuid>>(keys + orgs)?.is_some();
                let b = if found { Some(Branches::read(r, keys + orgs)?) } else { None };
                Ok((ApiKeys::read(r, 0)?, Orgs::read(r, keys)?, b))
            },
        )
    }

    fn list_api_keys(&mut self, org: OrgId) -> StoreResult<Vec<ApiKey>> {
        self.all(
            sql!("SELECT {} FROM api_keys WHERE org_id = ?1 ORDER BY created_at, id", ApiKeys::sql().select),
            vec![u(org)],
            ApiKeys::row,
        )
    }

    fn revoke_api_key(&mut self, org: OrgId, id: ApiKeyId, at: Timestamp) -> StoreResult<()> {
        self.exec(
            "UPDATE api_keys SET revoked_at = ?3 WHERE org_id = ?1 AND id = ?2 AND revoked_at IS NULL",
            vec![u(org), u(id), t(&at)],
        )
        .map(drop)
    }

    fn count_api_keys_defaulting_to(&mut self, branch: BranchId) -> StoreResult<u64> {
        self.count(
            "SELECT COUNT(*) FROM api_keys WHERE default_branch_id = ?1 AND revoked_at IS NULL",
            vec![u(branch)],
        )
    }
}
