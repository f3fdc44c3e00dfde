//! Consumer operations ([`Consumers`]). Each is one transaction.

use super::{Consumer, ConsumerFields, ConsumerFilter, ConsumerSort, ConsumerType};
use crate::auth::Scope;
use crate::error::{Code, Error, Result, StoreError};
use crate::fields::{Email, PhoneNumber};
use crate::ids::ConsumerId;
use crate::invoice::InvoiceStatus;
use crate::lane::Lane;
use crate::list::{ListQuery, Page};
use crate::store::{Store, Tx};

/// Where each operation of this module runs.
pub mod lane {
    use super::Lane;
    pub const CREATE: Lane = Lane::Write;
    pub const GET: Lane = Lane::Read;
    pub const LIST: Lane = Lane::Read;
    pub const UPDATE: Lane = Lane::Write;
    pub const DELETE: Lane = Lane::Write;
}

/// Phone and e-mail must be unique among the branch's live consumers.
fn check_unique(tx: &mut dyn Tx, c: &Consumer) -> Result<()> {
    let email = c.email.as_ref().map(Email::normalized);
    if let Some(other) = tx.consumer_conflict(c.branch_id, c.phone_number.as_ref().map(PhoneNumber::as_str), email.as_deref(), c.id)? {
        let info = match (&c.phone_number, &other.phone_number, &c.email) {
            (Some(p), Some(op), _) if p == op => format!("Consumer with phone number '{p}' already exists"),
            (_, _, Some(e)) => format!("Consumer with email '{e}' already exists"),
            _ => "Consumer with the same phone number or e-mail already exists".to_string(),
        };
        return Err(Error::rule(Code::DUPLICATE_CONSUMER, info));
    }
    Ok(())
}

/// The store's unique indexes decide what [`check_unique`] checks when writers race past it
/// (and alone when a consumer is created): the refusal names what collided, as it does.
fn duplicate_from_index(e: Error, c: Option<&Consumer>) -> Error {
    let Error::Store(StoreError::UniqueViolation(name)) = &e else { return e };
    let (phone, email) = (c.and_then(|c| c.phone_number.as_ref()), c.and_then(|c| c.email.as_ref()));
    let info = match (name.as_str(), phone, email) {
        (crate::error::constraint::CONSUMERS_BRANCH_PHONE, Some(p), _) => format!("Consumer with phone number '{p}' already exists"),
        (crate::error::constraint::CONSUMERS_BRANCH_EMAIL, _, Some(m)) => format!("Consumer with email '{m}' already exists"),
        (n, _, _) if n.starts_with("consumers_branch_") => "Consumer with the same phone number or e-mail already exists".to_string(),
        _ => return e,
    };
    Error::rule(Code::DUPLICATE_CONSUMER, info)
}

crate::service!(
    /// Consumers: create, get, list, update, delete. Each is one transaction.
    Consumers
);

impl<S: Store> Consumers<'_, S> {
    pub fn create(&self, scope: &Scope, f: ConsumerFields) -> Result<Consumer> {
        let now = self.now(scope);
        let c = Consumer {
            id: ConsumerId::new(),
            org_id: scope.org_id(),
            branch_id: scope.branch_id(),
            name: f
                .name
                .ok_or_else(|| Error::invalid(crate::error::FieldError::body("missing", "name", "Field required")))?,
            phone_number: f.phone_number,
            email: f.email,
            external_id: f.external_id,
            iban: f.iban,
            alias: f.alias,
            comment: f.comment,
            preferred_language: f.preferred_language.unwrap_or_default(),
            communication_methods: f.communication_methods.unwrap_or_default(),
            consumer_type: f.consumer_type.unwrap_or(ConsumerType::Individual),
            address: f.address,
            vat_number: f.vat_number,
            commercial_registration: f.commercial_registration,
            external_metadata: f.external_metadata.unwrap_or_default(),
            is_deleted: false,
            created_at: now,
            updated_at: None,
        };
        // One insert, and the unique indexes on phone and e-mail keep the rule (a lookup first
        // would only cost a round trip): a duplicate is refused by the index, with the error
        // `check_unique` gives on update.
        self.store
            .write_inserts(|tx| {
                tx.insert_consumer(&c)?;
                Ok(c.clone())
            })
            .map_err(|e| duplicate_from_index(e, Some(&c)))
    }

    /// A consumer of the request's branch (deleted ones too: they show `is_deleted`).
    pub fn get(&self, scope: &Scope, id: ConsumerId) -> Result<Consumer> {
        self.read_found("Consumer", id, |tx| tx.consumer(scope.branch_id(), id))
    }

    pub fn list(&self, scope: &Scope, q: &ListQuery<ConsumerSort>, f: &ConsumerFilter) -> Result<Page<Consumer>> {
        self.store.read(|tx| Ok(tx.list_consumers(scope.branch_id(), q, f)?))
    }

    pub fn update(&self, scope: &Scope, id: ConsumerId, f: ConsumerFields) -> Result<Consumer> {
        let now = self.now(scope);
        self.store
            .write(|tx| {
                let mut c = tx
                    .consumer(scope.branch_id(), id)?
                    .filter(|c| !c.is_deleted)
                    .ok_or_else(|| Error::not_found("Consumer", id))?;
                let f = f.clone();
                macro_rules! set {
                    ($($field:ident),*) => {$( if let Some(v) = f.$field { c.$field = Some(v); } )*};
                }
                set!(
                    phone_number,
                    email,
                    external_id,
                    iban,
                    alias,
                    comment,
                    address,
                    vat_number,
                    commercial_registration
                );
                if let Some(n) = f.name {
                    c.name = n;
                }
                if let Some(l) = f.preferred_language {
                    c.preferred_language = l;
                }
                if let Some(m) = f.communication_methods {
                    c.communication_methods = m;
                }
                if let Some(t) = f.consumer_type {
                    c.consumer_type = t;
                }
                if let Some(m) = f.external_metadata {
                    c.external_metadata = m;
                }
                c.updated_at = Some(now);
                check_unique(tx, &c)?;
                tx.update_consumer(&c)?;
                Ok(c)
            })
            .map_err(|e| duplicate_from_index(e, None))
    }

    /// Soft delete: the consumer leaves lists and frees its phone and e-mail.
    pub fn delete(&self, scope: &Scope, id: ConsumerId) -> Result<()> {
        let now = self.now(scope);
        self.store.write(|tx| {
            let mut c = tx
                .consumer(scope.branch_id(), id)?
                .filter(|c| !c.is_deleted)
                .ok_or_else(|| Error::not_found("Consumer", id))?;
            if tx.consumer_has_invoices_in(scope.branch_id(), id, InvoiceStatus::OPEN)? {
                return Err(Error::rule(
                    Code::CONSUMER_HAS_ONGOING_INVOICES,
                    format!("Consumer '{id}' has invoices that are not completed or canceled"),
                ));
            }
            {
                use crate::subscription::SubscriptionStatus as St;
                let ongoing = [St::Active, St::Inactive, St::Frozen, St::Trialing, St::TrialPending];
                if tx.consumer_has_subscriptions_in(scope.branch_id(), id, &ongoing)? {
                    return Err(Error::rule(
                        Code::CONSUMER_HAS_ONGOING_SUBSCRIPTIONS,
                        format!("Consumer '{id}' has subscriptions that are not canceled: cancel them first"),
                    ));
                }
            }
            if tx.consumer_has_payment_links_in(scope.branch_id(), id, &[crate::payment_link::PaymentLinkStatus::Active])? {
                return Err(Error::rule(
                    Code::CONSUMER_HAS_ACTIVE_PAYMENT_LINKS,
                    format!("Consumer '{id}' is the payer of active payment links: deactivate them first"),
                ));
            }
            c.is_deleted = true;
            c.updated_at = Some(now);
            tx.update_consumer(&c)?;
            Ok(())
        })
    }
}
