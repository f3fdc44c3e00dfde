//! Organizations, their users (with `user_branches`) and invitations:
//! `billing_model::org::OrgTx`.

use crate::support::*;
use billing_model::fields::Email;
use billing_model::ids::{InvitationId, OrgId, UserId};
use billing_model::org::{Invitation, OrgSettings, Organization, Role, User};
use billing_model::store::StoreResult;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    organizations (id) {
        id -> Uuid,
        name -> Text,
        name_en -> Nullable<Text>,
        sandbox -> Bool,
        settings -> Jsonb,
        clock_offset_us -> Int8,
        created_at -> Timestamptz,
        clock_advancing_to -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    users (id) {
        id -> Uuid,
        org_id -> Uuid,
        email -> Text,
        first_name -> Text,
        last_name -> Text,
        en_first_name -> Nullable<Text>,
        en_last_name -> Nullable<Text>,
        role -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    user_branches (user_id, branch_id) {
        user_id -> Uuid,
        branch_id -> Uuid,
        position -> Int4,
    }
}

diesel::table! {
    invitations (id) {
        id -> Uuid,
        org_id -> Uuid,
        email -> Text,
        role -> Text,
        branch_ids -> Array<Uuid>,
        created_by -> Uuid,
        language -> Text,
        expire_at -> Timestamptz,
        created_at -> Timestamptz,
        accepted_at -> Nullable<Timestamptz>,
        accepted_by -> Nullable<Uuid>,
    }
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
    pub accepted_at: Option<Ts>,
    pub accepted_by: Option<Uuid>,
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = invitations, check_for_backend(diesel::pg::Pg))]
pub struct InvitationRow {
    pub id: Uuid,
    pub org_id: Uuid,
    pub email: String,
    pub role: String,
    pub branch_ids: Vec<Uuid>,
    pub created_by: Uuid,
    pub language: String,
    pub expire_at: Ts,
    pub created_at: Ts,
    pub accepted_at: Option<Ts>,
    pub accepted_by: Option<Uuid>,
}

impl InvitationRow {
    fn into_domain(self) -> StoreResult<Invitation> {
        Ok(Invitation {
            id: self.id.into(),
            organization_id: self.org_id.into(),
            email: Email::from_stored(self.email),
            role: parse_enum!(Role, &self.role)?,
            branches: self.branch_ids.into_iter().map(Into::into).collect(),
            created_by: self.created_by.into(),
            language: language(&self.language)?,
            expire_at: self.expire_at,
            created_at: self.created_at,
            accepted_at: self.accepted_at,
            accepted_by: self.accepted_by.map(Into::into),
        })
    }
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
            accepted_at: i.accepted_at,
            accepted_by: i.accepted_by.map(|u| u.0),
        }
    }
}

impl billing_model::org::OrgTx for PgTx<'_> {
    // --- organizations, users, keys ----------------------------------------------------------

    fn insert_org(&mut self, org: &Organization) -> StoreResult<()> {
        self.orgs.clear();
        self.state.auth_changed = true;
        let row = NewOrgRow::new(org);
        self.write(|c| diesel::insert_into(organizations::table).values(&row).execute(c)).map(drop)
    }

    /// Read once per transaction (see [`PgTx::orgs`]).
    fn org(&mut self, id: OrgId) -> StoreResult<Option<Organization>> {
        if let Some(known) = self.orgs.get(&id) {
            return Ok(known.clone());
        }
        let org = self
            .read(|c| organizations::table.find(id.0).select(OrgRow::as_select()).first(c).optional())?
            .map(OrgRow::into_domain)
            .transpose()?;
        self.orgs.insert(id, org.clone());
        Ok(org)
    }

    fn update_org(&mut self, org: &Organization) -> StoreResult<()> {
        self.orgs.clear();
        self.state.auth_changed = true;
        let row = NewOrgRow::new(org);
        self.change(|c| diesel::update(organizations::table.find(org.id.0)).set(&row).execute(c))
            .map(drop)
    }

    fn list_orgs(&mut self) -> StoreResult<Vec<Organization>> {
        use organizations::dsl as o;
        let rows = self.read(|c| o::organizations.order_by((o::created_at, o::id)).select(OrgRow::as_select()).load(c))?;
        rows.into_iter().map(OrgRow::into_domain).collect()
    }

    fn insert_user(&mut self, user: &User) -> StoreResult<()> {
        self.state.auth_changed = true;
        let row = NewUserRow::new(user);
        let assignments: Vec<NewUserBranchRow> = user
            .branch_ids
            .iter()
            .enumerate()
            .map(|(i, b)| NewUserBranchRow {
                user_id: user.id.0,
                branch_id: b.0,
                position: i32::try_from(i).unwrap_or(i32::MAX),
            })
            .collect();
        self.write(|c| {
            diesel::insert_into(users::table).values(&row).execute(c)?;
            if !assignments.is_empty() {
                diesel::insert_into(user_branches::table).values(&assignments).execute(c)?;
            }
            Ok(())
        })
    }

    fn user(&mut self, org: OrgId, id: UserId) -> StoreResult<Option<User>> {
        use users::dsl as u;
        let Some(row) = self.read(|c| {
            u::users
                .filter(u::id.eq(id.0))
                .filter(u::org_id.eq(org.0))
                .select(UserRow::as_select())
                .first(c)
                .optional()
        })?
        else {
            return Ok(None);
        };
        let branch_ids = self.read(|c| {
            user_branches::table
                .filter(user_branches::user_id.eq(id.0))
                .order_by(user_branches::position)
                .select(user_branches::branch_id)
                .load::<Uuid>(c)
        })?;
        row.into_domain(branch_ids).map(Some)
    }

    fn first_org_admin(&mut self, org: OrgId) -> StoreResult<Option<User>> {
        use users::dsl as u;
        let id = self.read(|c| {
            u::users
                .filter(u::org_id.eq(org.0))
                .filter(u::role.eq(Role::OrganizationAdmin.as_str()))
                .order_by((u::created_at, u::id))
                .select(u::id)
                .first::<Uuid>(c)
                .optional()
        })?;
        match id {
            Some(id) => self.user(org, id.into()),
            None => Ok(None),
        }
    }

    // --- invitations and notifications -------------------------------------------------------

    fn insert_invitation(&mut self, i: &Invitation) -> StoreResult<()> {
        let row = NewInvitationRow::new(i);
        self.write(|c| diesel::insert_into(invitations::table).values(&row).execute(c)).map(drop)
    }

    fn invitation(&mut self, id: InvitationId) -> StoreResult<Option<Invitation>> {
        let row = self.read(|c| invitations::table.find(id.0).select(InvitationRow::as_select()).first(c).optional())?;
        row.map(InvitationRow::into_domain).transpose()
    }

    fn accept_invitation(&mut self, id: InvitationId, at: Ts, user: UserId) -> StoreResult<bool> {
        use invitations::dsl as i;
        let n = self.change(|c| {
            diesel::update(i::invitations.filter(i::id.eq(id.0)).filter(i::accepted_at.is_null()))
                .set((i::accepted_at.eq(Some(at)), i::accepted_by.eq(Some(user.0))))
                .execute(c)
        })?;
        Ok(n == 1)
    }

    fn user_by_email(&mut self, org: OrgId, email: &str) -> StoreResult<Option<User>> {
        use users::dsl as u;
        let lowered = email.to_lowercase();
        let id = self.read(|c| {
            u::users
                .filter(u::org_id.eq(org.0))
                .filter(diesel::dsl::sql::<diesel::sql_types::Bool>("lower(email) = ").bind::<diesel::sql_types::Text, _>(lowered.clone()))
                .order_by((u::created_at, u::id))
                .select(u::id)
                .first::<Uuid>(c)
                .optional()
        })?;
        match id {
            Some(id) => self.user(org, id.into()),
            None => Ok(None),
        }
    }
}
