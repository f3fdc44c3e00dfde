//! What a store offers for organizations, users and invitations (part of [`crate::store::Tx`]).

use super::{Invitation, Organization, User};
use crate::ids::{OrgId, UserId};
use crate::store::StoreResult;

pub trait OrgTx {
    fn insert_org(&mut self, org: &Organization) -> StoreResult<()>;
    fn org(&mut self, id: OrgId) -> StoreResult<Option<Organization>>;
    fn update_org(&mut self, org: &Organization) -> StoreResult<()>;
    /// All organizations, oldest first.
    fn list_orgs(&mut self) -> StoreResult<Vec<Organization>>;
    /// Inserts the user and its branch assignments.
    fn insert_user(&mut self, user: &User) -> StoreResult<()>;
    fn user(&mut self, org: OrgId, id: UserId) -> StoreResult<Option<User>>;
    /// The organization's oldest user with the `organization_admin` role.
    fn first_org_admin(&mut self, org: OrgId) -> StoreResult<Option<User>>;
    fn insert_invitation(&mut self, i: &Invitation) -> StoreResult<()>;
}
