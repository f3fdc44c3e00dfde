//! What a store offers for organizations, users and invitations (part of [`crate::store::Tx`]).

use super::{Invitation, Organization, User};
use crate::clock::Timestamp;
use crate::error::StoreResult;
use crate::ids::{InvitationId, OrgId, UserId};

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
    /// The invitation with this id, of any organization.
    fn invitation(&mut self, id: InvitationId) -> StoreResult<Option<Invitation>>;
    /// Marks the invitation accepted by `user` at `at` unless it already is; returns whether it
    /// did (so that of two concurrent acceptances only one goes through).
    fn accept_invitation(&mut self, id: InvitationId, at: Timestamp, user: UserId) -> StoreResult<bool>;
    /// The organization's user with this e-mail address (compared without regard to ASCII
    /// case), if any.
    fn user_by_email(&mut self, org: OrgId, email: &str) -> StoreResult<Option<User>>;
}
