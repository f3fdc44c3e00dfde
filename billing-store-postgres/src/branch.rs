//! Branches: `billing_model::branch::BranchTx`. `user_count` is counted in the same query.

use crate::org::user_branches;
use crate::support::*;
use billing_model::branch::Branch;
use billing_model::ids::{BranchId, OrgId};
use billing_model::store::StoreResult;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    branches (id) {
        id -> Uuid,
        org_id -> Uuid,
        name -> Text,
        name_key -> Text,
        created_at -> Timestamptz,
        deleted_at -> Nullable<Timestamptz>,
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

/// The number of users assigned to the branch of the outer query's row.
type UserCount = diesel::dsl::SingleValue<
    diesel::dsl::Select<diesel::dsl::Filter<user_branches::table, diesel::dsl::Eq<user_branches::branch_id, branches::id>>, diesel::dsl::CountStar>,
>;

/// `(row, user_count)` of a branch, in one query.
fn branch_select() -> (diesel::dsl::AsSelect<BranchRow, diesel::pg::Pg>, UserCount) {
    (
        BranchRow::as_select(),
        user_branches::table.filter(user_branches::branch_id.eq(branches::id)).count().single_value(),
    )
}

fn branch_of((row, count): (BranchRow, Option<i64>)) -> Branch {
    row.into_domain(count.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
}

impl billing_model::branch::BranchTx for PgTx<'_> {
    // --- branches ----------------------------------------------------------------------------

    fn insert_branch(&mut self, b: &Branch) -> StoreResult<()> {
        self.state.auth_changed = true;
        let row = NewBranchRow::new(b);
        self.write(|c| diesel::insert_into(branches::table).values(&row).execute(c)).map(drop)
    }

    fn branch(&mut self, org: OrgId, id: BranchId) -> StoreResult<Option<Branch>> {
        use branches::dsl as b;
        let row = self.read(|c| {
            b::branches
                .filter(b::id.eq(id.0))
                .filter(b::org_id.eq(org.0))
                .filter(b::deleted_at.is_null())
                .select(branch_select())
                .first(c)
                .optional()
        })?;
        Ok(row.map(branch_of))
    }

    fn retired_branch(&mut self, org: OrgId, id: BranchId) -> StoreResult<Option<Branch>> {
        use branches::dsl as b;
        let row = self.read(|c| {
            b::branches
                .filter(b::id.eq(id.0))
                .filter(b::org_id.eq(org.0))
                .filter(b::deleted_at.is_not_null())
                .select(branch_select())
                .first(c)
                .optional()
        })?;
        Ok(row.map(branch_of))
    }

    fn branch_by_name(&mut self, org: OrgId, key: &str) -> StoreResult<Option<Branch>> {
        use branches::dsl as b;
        let row = self.read(|c| {
            b::branches
                .filter(b::org_id.eq(org.0))
                .filter(b::name_key.eq(key))
                .filter(b::deleted_at.is_null())
                .select(branch_select())
                .first(c)
                .optional()
        })?;
        Ok(row.map(branch_of))
    }

    fn list_branches(&mut self, org: OrgId) -> StoreResult<Vec<Branch>> {
        use branches::dsl as b;
        let rows = self.read(|c| {
            b::branches
                .filter(b::org_id.eq(org.0))
                .filter(b::deleted_at.is_null())
                .order_by((b::created_at, b::id))
                .select(branch_select())
                .load(c)
        })?;
        Ok(rows.into_iter().map(branch_of).collect())
    }

    fn update_branch(&mut self, b: &Branch) -> StoreResult<()> {
        self.state.auth_changed = true;
        let row = NewBranchRow::new(b);
        self.write(|c| diesel::update(branches::table.find(b.id.0)).set(&row).execute(c)).map(drop)
    }
}
