//! Invoice numbers taken ahead in a batch's first pass ([`crate::writer::Writer::run_batch_optimistic`]
//! without savepoints): the first number an organization's item asks for moves the counter by
//! the batch's size at once, the items are handed the numbers one by one, and what is left is
//! given back before the batch commits. A renewal batch of 256 makes two counter updates
//! instead of 256.
//!
//! Gapless as before: nothing else writes while the batch holds SQLite's one writer, so the
//! numbers handed out are those that one update per item would have given, and the counter
//! ends where it would have. A failed item fails the first pass, which is rolled back whole
//! (counter included); the second pass, a savepoint per item, takes numbers one at a time.

use billing_core::ids::OrgId;
use billing_core::store::StoreResult;
use rusqlite::Connection;
use std::cell::RefCell;
use std::collections::HashMap;

struct Ahead {
    /// The batch's connection, known from the first take: only its transactions use this.
    conn: Option<*const Connection>,
    /// How far a first take moves an organization's counter.
    size: i64,
    /// Per organization: the next number to hand out and how many are left.
    taken: HashMap<OrgId, (i64, i64)>,
}

thread_local! {
    static AHEAD: RefCell<Option<Ahead>> = const { RefCell::new(None) };
}

/// Numbers are taken `size` at a time on this thread until the guard goes (the first pass of a
/// batch of `size` items). The guard forgets them; [`give_back`] must run first when the pass
/// is to commit.
pub struct Taking;

pub fn take_ahead(size: usize) -> Taking {
    AHEAD.with(|a| {
        *a.borrow_mut() = Some(Ahead {
            conn: None,
            size: size.max(1) as i64,
            taken: HashMap::new(),
        })
    });
    Taking
}

impl Drop for Taking {
    fn drop(&mut self) {
        AHEAD.with(|a| a.borrow_mut().take());
    }
}

/// The next number of `org` from what this batch took ahead; `None` when nothing is left (or
/// no batch on `conn` takes ahead): then the caller moves the counter by [`take_size`].
pub fn next(conn: &Connection, org: OrgId) -> Option<i64> {
    AHEAD.with(|a| {
        let mut a = a.borrow_mut();
        let ahead = a.as_mut().filter(|x| x.conn.is_none_or(|c| std::ptr::eq(c, conn)))?;
        let (next, left) = ahead.taken.get_mut(&org).filter(|(_, left)| *left > 0)?;
        let n = *next;
        *next += 1;
        *left -= 1;
        Some(n)
    })
}

/// How far the counter moves for a number asked on `conn`: the batch's size when it takes ahead.
pub fn take_size(conn: &Connection) -> i64 {
    AHEAD.with(|a| {
        let mut a = a.borrow_mut();
        match a.as_mut().filter(|x| x.conn.is_none_or(|c| std::ptr::eq(c, conn))) {
            Some(ahead) => {
                ahead.conn = Some(conn);
                ahead.size
            }
            None => 1,
        }
    })
}

/// `org`'s counter moved to `last` by a take of `size`: the first number is the caller's, the
/// rest are kept for the batch's next items.
pub fn took(conn: &Connection, org: OrgId, last: i64, size: i64) {
    if size > 1 {
        AHEAD.with(|a| {
            if let Some(ahead) = a.borrow_mut().as_mut().filter(|x| x.conn.is_some_and(|c| std::ptr::eq(c, conn))) {
                ahead.taken.insert(org, (last - size + 2, size - 1));
            }
        });
    }
}

/// Moves each counter back by what this batch took and did not hand out, in the batch's
/// transaction (before it commits).
pub fn give_back(conn: &Connection, mut exec: impl FnMut(OrgId, i64) -> StoreResult<()>) -> StoreResult<()> {
    let left: Vec<(OrgId, i64)> = AHEAD.with(|a| {
        a.borrow_mut()
            .as_mut()
            .filter(|x| x.conn.is_some_and(|c| std::ptr::eq(c, conn)))
            .map(|x| x.taken.drain().map(|(org, (_, left))| (org, left)).filter(|(_, left)| *left > 0).collect())
            .unwrap_or_default()
    });
    for (org, n) in left {
        exec(org, n)?;
    }
    Ok(())
}
