//! The per-organization invoice counter, and the numbers a batch takes ahead.

use crate::deferred::{Pending, Stage};
use crate::support::*;
use billing_model::ids::OrgId;
use diesel::prelude::*;
use std::collections::HashMap;

diesel::table! {
    invoice_counters (org_id) {
        org_id -> Uuid,
        last_number -> Int8,
    }
}

/// Invoice numbers taken ahead by a batch's first pass (`Store::write_each` without savepoints),
/// a part of what it defers (see `deferred`): its first number of an organization moves the
/// counter by as many numbers as the batch has items, the next ones are handed out from that
/// range with no statement, and what is left is given back before the batch commits
/// ([`Pending::finish`]).
///
/// Why: each number was a round trip made while holding the counter row, which the batches
/// taking numbers of one organization hold in turn; a renewal batch of 256 sent 256.
///
/// Numbers stay gapless: the range is handed out in order from its start, the counter row stays
/// locked by this transaction until it ends, so nothing else takes a number in between, and the
/// rest of the range is given back in the same transaction. Only the first pass takes ahead: it
/// commits or rolls back as a whole (an item rolled back to its savepoint would keep its numbers
/// counted here while the database forgot them).
#[derive(Debug, Default)]
pub(crate) struct Numbers {
    /// How many numbers a first take moves the counter by (0 or 1: no taking ahead).
    ahead: usize,
    /// Per organization: the next number to hand out and how many are left.
    taken: HashMap<OrgId, (i64, i64)>,
}

impl Numbers {
    /// The first take of each organization's numbers moves the counter by `n` (a batch of `n`
    /// items).
    pub(crate) fn ahead(n: usize) -> Self {
        Numbers {
            ahead: n,
            taken: HashMap::new(),
        }
    }
}

impl Pending<PgKind> for Numbers {
    /// Nothing waits to be sent: the numbers taken ahead are counted already.
    fn is_empty(&self) -> bool {
        true
    }

    fn send(&mut self, _tx: &mut PgTx<'_>, _stage: Stage) -> StoreResult<()> {
        Ok(())
    }

    /// Gives back what is left of the numbers taken ahead.
    fn finish(&mut self, tx: &mut PgTx<'_>) -> StoreResult<()> {
        use invoice_counters::dsl as ic;
        for (org, (_, left)) in std::mem::take(&mut self.taken) {
            if left > 0 {
                tx.write_apart(|c| {
                    diesel::update(ic::invoice_counters.filter(ic::org_id.eq(org.0)))
                        .set(ic::last_number.eq(ic::last_number - left))
                        .execute(c)
                })?;
            }
        }
        Ok(())
    }
}

impl PgTx<'_> {
    /// The organization's next invoice number: one taken from the counter, or from those a
    /// batch took ahead.
    pub(crate) fn next_number(&mut self, org: OrgId) -> StoreResult<i64> {
        use invoice_counters::dsl as ic;
        if let Some(n) = self.deferred::<Numbers>() {
            if let Some((next, left)) = n.taken.get_mut(&org).filter(|(_, left)| *left > 0) {
                let number = *next;
                *next += 1;
                *left -= 1;
                return Ok(number);
            }
        }
        let take = self.deferred_ref::<Numbers>().map_or(0, |n| n.ahead).max(1) as i64;
        let last = self.write_apart(|c| {
            diesel::insert_into(ic::invoice_counters)
                .values((ic::org_id.eq(org.0), ic::last_number.eq(take)))
                .on_conflict(ic::org_id)
                .do_update()
                .set(ic::last_number.eq(ic::last_number + take))
                .returning(ic::last_number)
                .get_result::<i64>(c)
        })?;
        let first = last - take + 1;
        if take > 1 {
            if let Some(n) = self.deferred::<Numbers>() {
                n.taken.insert(org, (first + 1, take - 1));
            }
        }
        Ok(first)
    }
}
