//! What the batch transaction open on this thread has read of two kinds of rows that a batch
//! reads over and over and almost never writes: organizations (every renewal reads its
//! organization's clock) and each branch's webhook endpoints (every recorded event asks
//! whether to fan out). Inside one batch transaction nothing else writes (SQLite's one writer
//! holds it), so a row read once holds until this transaction writes it.
//!
//! The memo lives only while a batch is open on the writer (`writer::batch_mark`), and is
//! forgotten:
//! - when a statement of the writer changes either table (SQLite's update hook, so no write
//!   can forget to);
//! - when a savepoint rolls back (what was read may have been written by the rolled-back part);
//! - when the batch ends or starts again (its rollback and second pass).

use billing_model::ids::{BranchId, OrgId};
use billing_model::org::Organization;
use billing_model::webhook::Endpoint;
use rusqlite::Connection;
use std::cell::RefCell;
use std::collections::HashMap;

/// The tables whose rows are kept; a change to one forgets the memo.
pub const TABLES: [&str; 2] = ["organizations", "webhook_endpoints"];

struct Memo {
    /// The batch's connection: only its statements read through the memo.
    conn: *const Connection,
    orgs: HashMap<OrgId, Option<Organization>>,
    endpoints: HashMap<BranchId, Vec<Endpoint>>,
}

thread_local! {
    static MEMO: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

/// A batch transaction opened on `conn` on this thread: an empty memo.
pub fn open(conn: &Connection) {
    MEMO.with(|m| {
        *m.borrow_mut() = Some(Memo {
            conn,
            orgs: HashMap::new(),
            endpoints: HashMap::new(),
        })
    });
}

/// The batch ended: nothing kept.
pub fn close() {
    MEMO.with(|m| *m.borrow_mut() = None);
}

/// Forgets what was read (the batch stays open).
pub fn forget() {
    MEMO.with(|m| {
        if let Some(memo) = m.borrow_mut().as_mut() {
            memo.orgs.clear();
            memo.endpoints.clear();
        }
    });
}

fn with<R>(conn: &Connection, f: impl FnOnce(&mut Memo) -> R) -> Option<R> {
    MEMO.with(|m| match m.borrow_mut().as_mut() {
        Some(memo) if std::ptr::eq(memo.conn, conn) => Some(f(memo)),
        _ => None,
    })
}

/// `key`'s value in the map `pick` chooses, as this batch read it; or read now with `read`, and
/// kept when a batch is open on `conn`.
fn remembered<K: std::hash::Hash + Eq + Copy, V: Clone, E>(
    conn: &Connection,
    pick: fn(&mut Memo) -> &mut HashMap<K, V>,
    key: K,
    read: impl FnOnce() -> Result<V, E>,
) -> Result<V, E> {
    if let Some(Some(known)) = with(conn, |m| pick(m).get(&key).cloned()) {
        return Ok(known);
    }
    let value = read()?;
    with(conn, |m| pick(m).insert(key, value.clone()));
    Ok(value)
}

/// The organization `id` as this batch read it, or read now with `read`.
pub fn org<E>(conn: &Connection, id: OrgId, read: impl FnOnce() -> Result<Option<Organization>, E>) -> Result<Option<Organization>, E> {
    remembered(conn, |m| &mut m.orgs, id, read)
}

/// Branch `branch`'s endpoints as this batch read them, or read now with `read`.
pub fn endpoints<E>(conn: &Connection, branch: BranchId, read: impl FnOnce() -> Result<Vec<Endpoint>, E>) -> Result<Vec<Endpoint>, E> {
    remembered(conn, |m| &mut m.endpoints, branch, read)
}
