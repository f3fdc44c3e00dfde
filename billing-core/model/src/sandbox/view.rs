//! What the API answers of the test clock: SandboxClock.

use crate::clock::Timestamp;
use crate::ids::OrgId;
use schemars::JsonSchema;
use serde::Serialize;

/// SandboxClock: the sandbox organization's test-clock time.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SandboxClock {
    /// The organization's time now: the server's clock plus how far the test clock was
    /// advanced (it only moves forward).
    #[serde(with = "crate::clock::wire_time")]
    #[schemars(with = "Timestamp")]
    pub now: Timestamp,
    /// The organization whose clock it is (the test clock is the whole organization's, every
    /// branch's).
    pub organization_id: OrgId,
}

impl SandboxClock {
    pub fn of(organization_id: OrgId, now: Timestamp) -> Self {
        SandboxClock { now, organization_id }
    }
}
