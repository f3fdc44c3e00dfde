//! A subscription's events replayed through the spec's transitions: every status change has
//! its event, every event is allowed from the status the events before it lead to, and the
//! status the events lead to is the subscription's stored status.
//!
//! The trial's end (TRIALING → TRIAL_PENDING) has no event of its own (INVOICE_CREATED of the
//! first paid cycle says it), so both are one phase here; the caller tells them apart by time.

use crate::event::{Event, EventType};
use crate::subscription::SubscriptionStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Trial,
    Inactive,
    Active,
    Frozen,
    Canceled,
}

impl Phase {
    pub fn of(s: SubscriptionStatus) -> Phase {
        match s {
            SubscriptionStatus::Trialing | SubscriptionStatus::TrialPending => Phase::Trial,
            SubscriptionStatus::Inactive => Phase::Inactive,
            SubscriptionStatus::Active => Phase::Active,
            SubscriptionStatus::Frozen => Phase::Frozen,
            SubscriptionStatus::Canceled | SubscriptionStatus::Expired => Phase::Canceled,
        }
    }
}

/// The phase after `e`, from `from` (`None`: before the first event); an error names the
/// transition the spec does not allow.
pub fn apply(from: Option<Phase>, trial: bool, e: &Event) -> Result<Phase, String> {
    use EventType as T;
    use Phase as P;
    let t = e.event_type;
    let bad = || Err(format!("{} from {from:?}", t.as_str()));
    let Some(from) = from else {
        return match t {
            T::SubscriptionCreated => Ok(if trial { P::Trial } else { P::Inactive }),
            _ => bad(),
        };
    };
    if from == P::Canceled {
        // Withdrawing a pending change is said after SUBSCRIPTION_CANCELED, in its transaction.
        return match t {
            T::SubscriptionPlanChangeCanceled => Ok(P::Canceled),
            _ => bad(),
        };
    }
    let to = match t {
        T::SubscriptionCreated => return bad(),
        T::SubscriptionActivated => match from {
            P::Inactive | P::Trial => P::Active,
            _ => return bad(),
        },
        T::SubscriptionInactivated => match from {
            P::Active | P::Frozen | P::Trial => P::Inactive,
            _ => return bad(),
        },
        T::SubscriptionCanceled => P::Canceled,
        T::SubscriptionCancelAtPeriodEnd => match from {
            P::Active => P::Active,
            _ => return bad(),
        },
        T::SubscriptionFreezeNow => match from {
            P::Active | P::Frozen => P::Frozen,
            // A freeze scheduled while ACTIVE comes into force on an INACTIVE subscription.
            P::Inactive => P::Inactive,
            P::Trial | P::Canceled => return bad(),
        },
        T::SubscriptionUnfreezeNow => match from {
            P::Frozen | P::Active => P::Active,
            P::Inactive => P::Inactive,
            P::Trial | P::Canceled => return bad(),
        },
        _ => from,
    };
    Ok(to)
}
