//! Organizations, their users (with their branches, in `user_branches`) and invitations:
//! `billing_model::org::OrgTx`.

use crate::sql::*;
use billing_model::clock::Timestamp;
use billing_model::fields::Email;
use billing_model::ids::{BranchId, InvitationId, OrgId, UserId};
use billing_model::org::{Invitation, OrgTx, Organization, Role, User};
use billing_model::store::StoreResult;

table! {
    pub Orgs in "organizations" for Organization |o, r, at| {
        id: u(o.id) => get_id(r, at)?,
        name: s(&o.name) => r.get(at)?,
        name_en: s_opt(o.name_en.as_deref()) => r.get(at)?,
        sandbox: b(o.sandbox) => r.get(at)?,
        settings: j(&o.settings) => get_json(r, at)?,
        clock_offset_us: i(o.clock_offset_us) => r.get(at)?,
        created_at: t(&o.created_at) => get_ts(r, at)?,
        clock_advancing_to: t_opt(&o.clock_advancing_to) => get_ts_opt(r, at)?,
    } => Organization { id, name, name_en, sandbox, settings, clock_offset_us, created_at, clock_advancing_to }
}

table! {
    /// Users; their branches are rows of `user_branches`.
    pub Users in "users" for User |user, r, at| {
        id: u(user.id) => get_id(r, at)?,
        org_id: u(user.org_id) => get_id(r, at)?,
        email: s(user.email.as_str()) => Email::from_stored(r.get(at)?),
        first_name: s(&user.first_name) => r.get(at)?,
        last_name: s(&user.last_name) => r.get(at)?,
        en_first_name: s_opt(user.en_first_name.as_deref()) => r.get(at)?,
        en_last_name: s_opt(user.en_last_name.as_deref()) => r.get(at)?,
        role: s(user.role.as_str()) => get_parsed(r, at, Role::parse)?,
        created_at: t(&user.created_at) => get_ts(r, at)?,
    } => User { id, org_id, email, first_name, last_name, en_first_name, en_last_name, role, branch_ids: vec![], created_at }
}

table! {
    pub Invitations in "invitations" for Invitation |inv, r, at| {
        id: u(inv.id) => get_id(r, at)?,
        org_id: u(inv.organization_id) => get_id(r, at)?,
        email: s(inv.email.as_str()) => Email::from_stored(r.get(at)?),
        role: s(inv.role.as_str()) => get_parsed(r, at, Role::parse)?,
        branch_ids: j(&inv.branches) => get_json(r, at)?,
        created_by: u(inv.created_by) => get_id(r, at)?,
        language: s(inv.language.as_str()) => get_parsed(r, at, |l| billing_model::fields::Language::parse(l).ok())?,
        expire_at: t(&inv.expire_at) => get_ts(r, at)?,
        created_at: t(&inv.created_at) => get_ts(r, at)?,
        accepted_at: t_opt(&inv.accepted_at) => get_ts_opt(r, at)?,
        accepted_by: u_opt(inv.accepted_by) => get_id_opt(r, at)?,
    } => Invitation { id, organization_id: org_id, email, role, branches: branch_ids, created_by, language, expire_at, created_at, accepted_at, accepted_by }
}

impl SqliteTx<'_> {
    fn with_branches(&self, user: Option<User>) -> StoreResult<Option<User>> {
        let Some(mut user) = user else { return Ok(None) };
        user.branch_ids = self.all(
            "SELECT branch_id FROM user_branches WHERE user_id = ?1 ORDER BY position",
            vec![u(user.id)],
            |r| get_id::<BranchId>(r, 0),
        )?;
        Ok(Some(user))
    }
}

impl OrgTx for SqliteTx<'_> {
    fn insert_org(&mut self, org: &Organization) -> StoreResult<()> {
        self.exec(&Orgs::sql().insert, Orgs::params(org)?).map(drop)
    }

    /// Read once per batch transaction (every renewal reads its organization's clock): see
    /// [`crate::memo`].
    fn org(&mut self, org: OrgId) -> StoreResult<Option<Organization>> {
        crate::memo::org(self.conn(), org, || {
            self.one(sql!("SELECT {} FROM organizations WHERE id = ?1", Orgs::sql().select), vec![u(org)], Orgs::row)
        })
    }

    fn update_org(&mut self, org: &Organization) -> StoreResult<()> {
        self.update_one(&Orgs::sql().update, Orgs::params(org)?, "organization")
    }

    fn list_orgs(&mut self) -> StoreResult<Vec<Organization>> {
        self.all(
            sql!("SELECT {} FROM organizations ORDER BY created_at, id", Orgs::sql().select),
            vec![],
            Orgs::row,
        )
    }

    fn insert_user(&mut self, user: &User) -> StoreResult<()> {
        self.exec(&Users::sql().insert, Users::params(user)?)?;
        for (pos, b) in user.branch_ids.iter().enumerate() {
            self.exec(
                "INSERT INTO user_branches (user_id, branch_id, position) VALUES (?1, ?2, ?3)",
                vec![u(user.id), u(*b), i(pos as i64)],
            )?;
        }
        Ok(())
    }

    fn user(&mut self, org: OrgId, user: UserId) -> StoreResult<Option<User>> {
        let found = self.one(
            sql!("SELECT {} FROM users WHERE id = ?1 AND org_id = ?2", Users::sql().select),
            vec![u(user), u(org)],
            Users::row,
        )?;
        self.with_branches(found)
    }

    fn first_org_admin(&mut self, org: OrgId) -> StoreResult<Option<User>> {
        let found = self.one(
            sql!(
                "SELECT {} FROM users WHERE org_id = ?1 AND role = ?2 ORDER BY created_at, id LIMIT 1",
                Users::sql().select
            ),
            vec![u(org), s(Role::OrganizationAdmin.as_str())],
            Users::row,
        )?;
        self.with_branches(found)
    }

    fn insert_invitation(&mut self, inv: &Invitation) -> StoreResult<()> {
        self.exec(&Invitations::sql().insert, Invitations::params(inv)?).map(drop)
    }

    fn invitation(&mut self, id: InvitationId) -> StoreResult<Option<Invitation>> {
        self.one(
            sql!("SELECT {} FROM invitations WHERE id = ?1", Invitations::sql().select),
            vec![u(id)],
            Invitations::row,
        )
    }

    fn accept_invitation(&mut self, id: InvitationId, at: Timestamp, user: UserId) -> StoreResult<bool> {
        let n = self.exec(
            "UPDATE invitations SET accepted_at = ?2, accepted_by = ?3 WHERE id = ?1 AND accepted_at IS NULL",
            vec![u(id), t(&at), u(user)],
        )?;
        Ok(n == 1)
    }

    fn user_by_email(&mut self, org: OrgId, email: &str) -> StoreResult<Option<User>> {
        let found = self.one(
            sql!(
                "SELECT {} FROM users WHERE org_id = ?1 AND lower(email) = lower(?2) ORDER BY created_at, id LIMIT 1",
                Users::sql().select
            ),
            vec![u(org), s(email)],
            Users::row,
        )?;
        self.with_branches(found)
    }
}
