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

use billing_model::ids::OrgId;
use billing_model::store::StoreResult;
use rusqlite::Connection;
use std::cell::RefCell;
use std::collections::HashMap;

struct Ahead {
    /// The batch's connection, known from its first use: only its transactions use this.
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

/// `f` on what the batch open on `conn` on this thread takes ahead, if it does.
fn with<R>(conn: &Connection, f: impl FnOnce(&mut Ahead) -> R) -> Option<R> {
    AHEAD.with(|a| {
        let mut a = a.borrow_mut();
        a.as_mut().filter(|x| x.conn.is_none_or(|c| std::ptr::eq(c, conn))).map(|x| {
            x.conn = Some(conn);
            f(x)
        })
    })
}

/// The next number of `org`: one kept from what this batch took ahead, else the first of a
/// take made now by `move_counter(n)`, which moves the counter by `n` (the batch's size when it
/// takes ahead, else 1) and answers where it now stands.
pub fn next(conn: &Connection, org: OrgId, move_counter: impl FnOnce(i64) -> StoreResult<i64>) -> StoreResult<i64> {
    let kept = with(conn, |x| {
        let (next, left) = x.taken.get_mut(&org).filter(|(_, left)| *left > 0)?;
        *next += 1;
        *left -= 1;
        Some(*next - 1)
    });
    if let Some(Some(n)) = kept {
        return Ok(n);
    }
    let size = with(conn, |x| x.size).unwrap_or(1);
    let last = move_counter(size)?;
    if size > 1 {
        with(conn, |x| x.taken.insert(org, (last - size + 2, size - 1)));
    }
    Ok(last - size + 1)
}

/// Moves each counter back by what this batch took and did not hand out, in the batch's
/// transaction (before it commits).
pub fn give_back(conn: &Connection, mut exec: impl FnMut(OrgId, i64) -> StoreResult<()>) -> StoreResult<()> {
    let left: Vec<(OrgId, i64)> = with(conn, |x| {
        x.taken.drain().map(|(org, (_, left))| (org, left)).filter(|(_, left)| *left > 0).collect()
    })
    .unwrap_or_default();
    for (org, n) in left {
        exec(org, n)?;
    }
    Ok(())
}
