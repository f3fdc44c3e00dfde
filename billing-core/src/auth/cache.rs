//! API-key authentications kept for a short while, for stores where every lookup is a network
//! round trip (PostgreSQL): without it, authentication costs more than most reads it guards.
//!
//! Safe because it only trusts the store's auth generation ([`Store::auth_generation`]): a
//! counter that moves whenever an organization, branch, user or key changes — in this process
//! before the changing write returns, in others as soon as their commit is announced. An entry
//! fetched under another generation is never used, and with no generation (a store that cannot
//! tell, or whose change feed is down) nothing is cached. What is kept is the store's answer
//! (key, organization, live branch); the secret, revocation and branch access are checked on
//! every request as if it came from the store. Only keys that exist with a live branch are
//! kept, at most [`MAX_ENTRIES`], each for at most [`MAX_AGE`].
//!
//! [`Store::auth_generation`]: crate::store::Store::auth_generation

use super::ApiKey;
use crate::branch::Branch;
use crate::ids::BranchId;
use crate::org::Organization;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Past this many entries the cache starts over (a bound for memory, not a working-set size:
/// each entry is a key and branch actually used).
pub const MAX_ENTRIES: usize = 10_000;
/// Belt and braces: an entry is refreshed this often even if no change was announced.
pub const MAX_AGE: Duration = Duration::from_secs(60);

pub type Context = Arc<(ApiKey, Organization, Branch)>;

struct Entry {
    generation: u64,
    fetched: Instant,
    context: Context,
}

#[derive(Default)]
pub struct AuthCache {
    entries: Mutex<HashMap<(String, Option<BranchId>), Entry>>,
}

impl AuthCache {
    /// The context kept for `key` asking for `branch`, if it was fetched under `generation`.
    pub fn get(&self, key: &str, branch: Option<BranchId>, generation: u64) -> Option<Context> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let e = entries.get(&(key.to_string(), branch))?;
        (e.generation == generation && e.fetched.elapsed() < MAX_AGE).then(|| e.context.clone())
    }

    /// Keeps what the store answered under `generation` (read before the lookup, so a change
    /// made during the lookup moves the generation past it).
    pub fn put(&self, key: &str, branch: Option<BranchId>, generation: u64, context: Context) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        let entry = Entry {
            generation,
            fetched: Instant::now(),
            context,
        };
        entries.insert((key.to_string(), branch), entry);
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
