//! Branch operations: list, create (idempotent by name), get, rename, delete.

use super::Branch;
use crate::auth::Scope;
use crate::error::{Code, Error, Result};
use crate::ids::BranchId;
use crate::lane::Lane;
use crate::org::Role;
use crate::store::{Store, Tx};

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const LIST: Lane = Lane::Read;
    pub const GET: Lane = Lane::Read;
    pub const CREATE: Lane = Lane::Write;
    pub const UPDATE: Lane = Lane::Write;
    pub const DELETE: Lane = Lane::Write;
}

crate::service!(
    /// Branches: list, create, get, update (rename), delete. Each is one transaction.
    Branches
);

impl<S: Store> Branches<'_, S> {
    /// The branches the caller can use.
    pub fn list(&self, scope: &Scope) -> Result<Vec<Branch>> {
        let all = self.store.read(|tx| Ok(tx.list_branches(scope.org_id())?))?;
        Ok(all.into_iter().filter(|b| scope.actor.access.allows(b.id)).collect())
    }

    /// Creates a branch; when one with the same name exists (case-insensitive), returns it.
    pub fn create(&self, scope: &Scope, name: String) -> Result<Branch> {
        if scope.actor.role != Role::OrganizationAdmin {
            return Err(Error::forbidden("only organization admins create branches"));
        }
        let now = self.now(scope);
        self.store.write(|tx| {
            if let Some(existing) = tx.branch_by_name(scope.org_id(), &Branch::name_key(&name))? {
                return Ok(existing);
            }
            let b = Branch::new(scope.org_id(), &name, now);
            tx.insert_branch(&b)?;
            Ok(b)
        })
    }

    /// One branch the caller can use.
    pub fn get(&self, scope: &Scope, id: BranchId) -> Result<Branch> {
        let b = self
            .store
            .read(|tx| Ok(tx.branch(scope.org_id(), id)?))?
            .ok_or_else(|| Error::not_found("Branch", id))?;
        if !scope.actor.access.allows(b.id) {
            return Err(Error::forbidden(format!("no access to branch '{id}'")));
        }
        Ok(b)
    }

    /// Renames a branch; a name already used by another branch is refused.
    pub fn update(&self, scope: &Scope, id: BranchId, name: String) -> Result<Branch> {
        if scope.actor.role == Role::BranchUser {
            return Err(Error::forbidden("branch users cannot change branches"));
        }
        self.store.write(|tx| {
            let mut b = tx.branch(scope.org_id(), id)?.ok_or_else(|| Error::not_found("Branch", id))?;
            if !scope.actor.access.allows(b.id) {
                return Err(Error::forbidden(format!("no access to branch '{id}'")));
            }
            if let Some(other) = tx.branch_by_name(scope.org_id(), &Branch::name_key(&name))? {
                if other.id != id {
                    return Err(Error::rule(Code::RESOURCE_ALREADY_EXISTS, format!("Branch with name '{name}' already exists")));
                }
            }
            b.name = name.clone();
            tx.update_branch(&b)?;
            Ok(b)
        })
    }

    /// Deletes (retires) a branch. The last branch, and a branch that an API key uses as its
    /// default, cannot be deleted: requests without `x-branch-id` would have nowhere to go.
    pub fn delete(&self, scope: &Scope, id: BranchId) -> Result<()> {
        if scope.actor.role != Role::OrganizationAdmin {
            return Err(Error::forbidden("only organization admins delete branches"));
        }
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut b = tx.branch(scope.org_id(), id)?.ok_or_else(|| Error::not_found("Branch", id))?;
            if tx.list_branches(scope.org_id())?.len() <= 1 {
                return Err(Error::rule(Code::BRANCH_IN_USE, "the last branch of an organization cannot be deleted"));
            }
            let keys = tx.count_api_keys_defaulting_to(id)?;
            if keys > 0 {
                return Err(Error::rule(Code::BRANCH_IN_USE, format!("branch is the default branch of {keys} API key(s)")));
            }
            let holds = unfinished_business(tx, id)?;
            if !holds.is_empty() {
                return Err(Error::rule(
                    Code::BRANCH_IN_USE,
                    format!("branch holds {}: complete, void or wait for them first", holds.join(", ")),
                ));
            }
            b.deleted_at = Some(now);
            tx.update_branch(&b)?;
            Ok(())
        })
    }
}

/// What keeps a branch from being deleted: money and messages still under way in it. Deleting
/// it would strand them (its records are then read-only, for organization admins).
fn unfinished_business(tx: &mut dyn Tx, branch: BranchId) -> Result<Vec<String>> {
    use crate::invoice::{InvoiceFilter, InvoiceSort, InvoiceStatus};
    use crate::list::ListQuery;
    use crate::payment::{PaymentFilter, PaymentSort, PaymentStatus};
    use crate::webhook::{DeliveryFilter, DeliveryStatus};
    let mut holds = Vec::new();
    let mut one = ListQuery::new(InvoiceSort::CreatedAt);
    one.limit = 1;
    let open = InvoiceFilter {
        statuses: InvoiceStatus::OPEN.to_vec(),
        ..Default::default()
    };
    let invoices = tx.list_invoices(branch, &one, &open)?.total;
    if invoices > 0 {
        holds.push(format!("{invoices} open invoice(s)"));
    }
    let mut one = ListQuery::new(PaymentSort::CreatedAt);
    one.limit = 1;
    let in_flight = PaymentFilter {
        statuses: vec![PaymentStatus::Processing],
        ..Default::default()
    };
    let payments = tx.list_payments(branch, &one, &in_flight)?.total;
    if payments > 0 {
        holds.push(format!("{payments} payment(s) in progress"));
    }
    let mut deliveries = 0;
    for e in tx.list_webhook_endpoints(branch)? {
        for status in [DeliveryStatus::Pending, DeliveryStatus::Retrying] {
            let f = DeliveryFilter {
                status: Some(status),
                ..Default::default()
            };
            deliveries += tx.list_webhook_deliveries(e.id, &f, 1, 1)?.total;
        }
    }
    if deliveries > 0 {
        holds.push(format!("{deliveries} webhook delivery(ies) not yet finished"));
    }
    let mut one = ListQuery::new(crate::payment_link::PaymentLinkSort::CreatedAt);
    one.limit = 1;
    let active = crate::payment_link::PaymentLinkFilter {
        statuses: vec![crate::payment_link::PaymentLinkStatus::Active],
        ..Default::default()
    };
    let links = tx.list_payment_links(branch, &one, &active)?.total;
    if links > 0 {
        holds.push(format!("{links} active payment link(s)"));
    }
    let mut one = ListQuery::new(crate::subscription::SubscriptionSort::CreatedAt);
    one.limit = 1;
    use crate::subscription::SubscriptionStatus as St;
    let ongoing = crate::subscription::SubscriptionFilter {
        statuses: vec![St::Active, St::Inactive, St::Frozen, St::Trialing, St::TrialPending],
        ..Default::default()
    };
    let subs = tx.list_subscriptions(branch, &one, &ongoing)?.total;
    if subs > 0 {
        holds.push(format!("{subs} subscription(s) not canceled"));
    }
    Ok(holds)
}
