//! The wire's scalar kinds and closed sets of values as JSON Schema: billing-model's
//! (`billing_core::schema`), under the names the shapes here use for them.

pub use billing_core::literal_enum;
pub use billing_core::schema::*;

use billing_core as core;

pub type ConsumerCommunicationMethod = core::consumer::CommunicationMethod;
pub type OrganizationConsumerType = core::consumer::ConsumerType;
pub type ContactInformationType = core::payment_link::ContactInformationType;
pub type PaymentLinkStatus = core::payment_link::PaymentLinkStatus;
pub type InvoiceStatusEnum = core::invoice::InvoiceStatus;
pub type PaymentStatusEnum = core::payment::PaymentStatus;
pub type PaymentTypeEnum = core::payment::PaymentType;
pub type PaymentMethod = core::payment::PaymentMethod;
pub type PaymentRefundReason = core::payment::RefundReason;
pub type PendingPlanChangeDiffKind = core::subscription::plan_change::DiffKind;
pub type PendingPlanChangeStatus = core::subscription::PlanChangeStatus;
pub type ProductType = core::product::ProductType;
pub type RecurringInterval = core::product::RecurringInterval;
pub type SubscriptionStatus = core::subscription::SubscriptionStatus;
pub type WebhookDeliveryStatus = core::webhook::DeliveryStatus;
pub type WebhookEventType = core::event::EventType;
pub type NotificationKind = core::notification::Kind;
pub type NotificationStatus = core::notification::Status;
pub type NotificationChannel = core::notification::Channel;
pub type FreezeState = core::subscription::FreezeState;
pub type CurrencyCode = core::money::Currency;
pub type Language = core::fields::Language;
