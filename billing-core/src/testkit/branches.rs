//! Branch cases.

use super::{Harness, World};

pub fn bootstrap_creates_default_branch<H: Harness>() {
    let w = World::new(H::store());
    let branches = w.billing.list_branches(&w.admin).unwrap();
    assert_eq!(branches.len(), 1);
    assert_eq!(branches[0].id, w.boot.branch.id);
    assert_eq!(branches[0].user_count, 1);
}
