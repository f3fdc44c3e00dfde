//! API keys: `billing_model::auth::ApiKeyTx`.

use crate::support::*;
use billing_model::auth::ApiKey;
use billing_model::ids::{ApiKeyId, BranchId, OrgId};
use billing_model::store::StoreResult;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    api_keys (id) {
        id -> Uuid,
        org_id -> Uuid,
        user_id -> Uuid,
        name -> Text,
        key -> Text,
        secret_hash -> Text,
        branch_ids -> Array<Uuid>,
        default_branch_id -> Uuid,
        is_all_branches -> Bool,
        created_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
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

impl billing_model::auth::ApiKeyTx for PgTx<'_> {
    fn insert_api_key(&mut self, key: &ApiKey) -> StoreResult<()> {
        self.state.auth_changed = true;
        let row = NewApiKeyRow::new(key);
        self.write(|c| diesel::insert_into(api_keys::table).values(&row).execute(c)).map(drop)
    }

    fn api_key_by_key(&mut self, key: &str) -> StoreResult<Option<ApiKey>> {
        Ok(self
            .read(|c| api_keys::table.filter(api_keys::key.eq(key)).select(ApiKeyRow::as_select()).first(c).optional())?
            .map(ApiKeyRow::into_domain))
    }

    fn list_api_keys(&mut self, org: OrgId) -> StoreResult<Vec<ApiKey>> {
        use api_keys::dsl as k;
        let rows = self.read(|c| {
            k::api_keys
                .filter(k::org_id.eq(org.0))
                .order_by((k::created_at, k::id))
                .select(ApiKeyRow::as_select())
                .load(c)
        })?;
        Ok(rows.into_iter().map(ApiKeyRow::into_domain).collect())
    }

    fn revoke_api_key(&mut self, org: OrgId, id: ApiKeyId, at: billing_model::clock::Timestamp) -> StoreResult<()> {
        use api_keys::dsl as k;
        self.state.auth_changed = true;
        self.change(|c| {
            diesel::update(k::api_keys.filter(k::org_id.eq(org.0)).filter(k::id.eq(id.0)).filter(k::revoked_at.is_null()))
                .set(k::revoked_at.eq(Some(at)))
                .execute(c)
        })
        .map(drop)
    }

    fn count_api_keys_defaulting_to(&mut self, branch: BranchId) -> StoreResult<u64> {
        use api_keys::dsl as k;
        let n = self.read(|c| {
            k::api_keys
                .filter(k::default_branch_id.eq(branch.0))
                .filter(k::revoked_at.is_null())
                .count()
                .get_result::<i64>(c)
        })?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
