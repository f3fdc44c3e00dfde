//! Typed ids. Every id is a UUID; new ones are version 7 (time-ordered) so that inserts land at
//! the end of primary-key indexes and tables stay fast as they grow.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use uuid::Uuid;

macro_rules! typed_id {
    ($($(#[$m:meta])* $name:ident),* $(,)?) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh time-ordered id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }
            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }

        impl schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> std::borrow::Cow<'static, str> {
                "Id".into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "format": "uuid"})
            }
        }

        impl From<Uuid> for $name {
            fn from(u: Uuid) -> Self {
                Self(u)
            }
        }

        impl From<$name> for Uuid {
            fn from(id: $name) -> Uuid {
                id.0
            }
        }
    )*};
}

typed_id!(
    OrgId,
    BranchId,
    UserId,
    ApiKeyId,
    InvitationId,
    NotificationId,
    ConsumerId,
    ProductId,
    PriceId,
    CouponId,
    InvoiceId,
    InvoiceItemId,
    PaymentId,
    EventId,
    WorkId,
    PaymentLinkId,
    PaymentLinkItemId,
    SubscriptionId,
    SubscriptionItemId,
    FreezeId,
    /// A subscription's plan change (PendingPlanChange).
    PlanChangeId,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_are_time_ordered() {
        let a = ConsumerId::new();
        let b = ConsumerId::new();
        assert!(a < b, "v7 ids must sort by creation");
        assert_eq!(a.0.get_version_num(), 7);
    }

    #[test]
    fn parses_and_displays() {
        let id: BranchId = "0192f0c1-6a8e-7cc2-9a53-3f1b8f1f2a10".parse().unwrap();
        assert_eq!(id.to_string(), "0192f0c1-6a8e-7cc2-9a53-3f1b8f1f2a10");
        assert!("nope".parse::<BranchId>().is_err());
    }
}
