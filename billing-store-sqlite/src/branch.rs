//! Branches: `billing_model::branch::BranchTx`. A branch's `name_key` ([`Branch::name_key`]) is
//! unique among the organization's live branches; `user_count` is counted on read.

use crate::sql::*;
use billing_model::branch::{Branch, BranchTx};
use billing_model::ids::{BranchId, OrgId};
use billing_model::store::StoreResult;

table! {
    pub Branches in "branches" for Branch |br, r, at| {
        id: u(br.id) => get_id(r, at)?,
        org_id: u(br.org_id) => get_id(r, at)?,
        name: s(&br.name) => r.get(at)?,
        created_at: t(&br.created_at) => get_ts(r, at)?,
        deleted_at: t_opt(&br.deleted_at) => get_ts_opt(r, at)?,
    }
    writes { name_key: s(Branch::name_key(&br.name)) }
    selects { "(SELECT COUNT(*) FROM user_branches ub WHERE ub.branch_id = {t}.id)" as user_count => r.get::<_, i64>(at)? as u64 }
    => Branch { id, org_id, name, created_at, deleted_at, user_count }
}

impl BranchTx for SqliteTx<'_> {
    fn insert_branch(&mut self, br: &Branch) -> StoreResult<()> {
        self.exec(&Branches::sql().insert, Branches::params(br)?).map(drop)
    }

    fn branch(&mut self, org: OrgId, branch: BranchId) -> StoreResult<Option<Branch>> {
        self.one(
            sql!(
                "SELECT {} FROM branches WHERE id = ?1 AND org_id = ?2 AND deleted_at IS NULL",
                Branches::sql().select
            ),
            vec![u(branch), u(org)],
            Branches::row,
        )
    }

    fn retired_branch(&mut self, org: OrgId, branch: BranchId) -> StoreResult<Option<Branch>> {
        self.one(
            sql!(
                "SELECT {} FROM branches WHERE id = ?1 AND org_id = ?2 AND deleted_at IS NOT NULL",
                Branches::sql().select
            ),
            vec![u(branch), u(org)],
            Branches::row,
        )
    }

    fn branch_by_name(&mut self, org: OrgId, key: &str) -> StoreResult<Option<Branch>> {
        self.one(
            sql!(
                "SELECT {} FROM branches WHERE org_id = ?1 AND name_key = ?2 AND deleted_at IS NULL",
                Branches::sql().select
            ),
            vec![u(org), s(key)],
            Branches::row,
        )
    }

    fn list_branches(&mut self, org: OrgId) -> StoreResult<Vec<Branch>> {
        self.all(
            sql!(
                "SELECT {} FROM branches WHERE org_id = ?1 AND deleted_at IS NULL ORDER BY created_at, id",
                Branches::sql().select
            ),
            vec![u(org)],
            Branches::row,
        )
    }

    fn update_branch(&mut self, br: &Branch) -> StoreResult<()> {
        self.update_one(&Branches::sql().update, Branches::params(br)?, "branch")
    }
}
