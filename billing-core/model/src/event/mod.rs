//! Events written to the outbox in the same transaction as the change they report; the webhook
//! worker delivers them.

pub mod store;

pub use store::EventTx;

use crate::clock::Timestamp;
use crate::ids::{BranchId, EventId, OrgId};
use crate::wire_enum;
use serde_json::Value;

wire_enum!(EventType {
    PaymentSucceeded = "PAYMENT_SUCCEEDED",
    PaymentFailed = "PAYMENT_FAILED",
    PaymentCanceled = "PAYMENT_CANCELED",
    PaymentRefunded = "PAYMENT_REFUNDED",
    PaymentMarkedAsPaid = "PAYMENT_MARKED_AS_PAID",
    InvoiceCreated = "INVOICE_CREATED",
    InvoiceSent = "INVOICE_SENT",
    InvoiceAccepted = "INVOICE_ACCEPTED",
    InvoiceRejected = "INVOICE_REJECTED",
    InvoiceCompleted = "INVOICE_COMPLETED",
    InvoiceCanceled = "INVOICE_CANCELED",
    InvoiceUpdated = "INVOICE_UPDATED",
    SubscriptionCreated = "SUBSCRIPTION_CREATED",
    SubscriptionActivated = "SUBSCRIPTION_ACTIVATED",
    SubscriptionInactivated = "SUBSCRIPTION_INACTIVATED",
    SubscriptionCanceled = "SUBSCRIPTION_CANCELED",
    SubscriptionFrozen = "SUBSCRIPTION_FROZEN",
    SubscriptionCycleRenewalFailed = "SUBSCRIPTION_CYCLE_RENEWAL_FAILED",
    SubscriptionCancelAtPeriodEnd = "SUBSCRIPTION_CANCEL_AT_PERIOD_END",
    SubscriptionFreezeNow = "SUBSCRIPTION_FREEZE_NOW",
    SubscriptionUnfreezeNow = "SUBSCRIPTION_UNFREEZE_NOW",
    SubscriptionUnfreezeFuture = "SUBSCRIPTION_UNFREEZE_FUTURE",
    SubscriptionFreezeCancel = "SUBSCRIPTION_FREEZE_CANCEL",
    SubscriptionPlanChangeScheduled = "SUBSCRIPTION_PLAN_CHANGE_SCHEDULED",
    SubscriptionPlanChangeCanceled = "SUBSCRIPTION_PLAN_CHANGE_CANCELED",
    SubscriptionPlanChanged = "SUBSCRIPTION_PLAN_CHANGED",
    SubscriptionPlanChangeInvoiceReissued = "SUBSCRIPTION_PLAN_CHANGE_INVOICE_REISSUED",
    SubscriptionPlanUpdated = "SUBSCRIPTION_PLAN_UPDATED",
    PaymentLinkPayAttemptFailed = "PAYMENT_LINK_PAY_ATTEMPT_FAILED",
});

wire_enum!(EntityType { Payment = "PAYMENT", Invoice = "INVOICE", Subscription = "SUBSCRIPTION", PaymentLink = "PAYMENT_LINK" });

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: EventId,
    pub org_id: OrgId,
    pub branch_id: BranchId,
    pub event_type: EventType,
    pub entity_type: EntityType,
    pub entity_id: uuid::Uuid,
    /// The webhook body (spec: Events, Payload), fixed when the event is written.
    pub payload: Value,
    pub created_at: Timestamp,
}
