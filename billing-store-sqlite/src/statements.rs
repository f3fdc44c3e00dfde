//! The statements of the batch transaction open on this thread, kept out of rusqlite's cache
//! while the batch lasts.
//!
//! A renewal runs some thirty statements, and rusqlite's `prepare_cached` costs each of them a
//! lookup by the statement's text (trimmed, hashed, compared), a copy of that text as the key
//! of the statement in use, `sqlite3_clear_bindings` and a second hashing to put it back:
//! 6% of a renewal day's writer time (callgrind). Here a batch takes each statement from
//! rusqlite's cache once, and keeps it by the address and length of its text: the next use is
//! a lookup of two words and one comparison of the text (the text is compared, so a string
//! freed and another made at the same address is never taken for it). Bindings are not
//! cleared between uses: every use binds every parameter (rusqlite refuses fewer).
//!
//! The statements go back to rusqlite's cache when the batch ends (`writer::batch_mark`),
//! while the writer still holds its connection.

use rusqlite::{CachedStatement, Connection};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A statement's text as a key: where it is and how long.
type Key = (usize, usize);

struct Batch {
    conn: *const Connection,
    /// Each statement with its text. The lifetime is the batch's: `close` drops them all
    /// before the batch lets go of its connection.
    kept: HashMap<Key, (Box<str>, CachedStatement<'static>), BuildHasherDefault<AddressHasher>>,
}

thread_local! {
    static BATCH: RefCell<Option<Batch>> = const { RefCell::new(None) };
}

/// A batch transaction opened on `conn` on this thread: no statement kept yet.
pub fn open(conn: &Connection) {
    BATCH.with(|b| {
        *b.borrow_mut() = Some(Batch {
            conn,
            kept: HashMap::default(),
        })
    });
}

/// The batch ended: every statement goes back to rusqlite's cache.
pub fn close() {
    let ended = BATCH.with(|b| b.borrow_mut().take());
    drop(ended);
}

/// A statement in use; it is kept for the batch again when dropped.
pub struct Prepared<'c> {
    conn: *const Connection,
    statement: Option<CachedStatement<'c>>,
    text: Option<Box<str>>,
    key: Key,
}

impl<'c> std::ops::Deref for Prepared<'c> {
    type Target = rusqlite::Statement<'c>;

    fn deref(&self) -> &Self::Target {
        self.statement.as_ref().expect("until dropped")
    }
}

impl std::ops::DerefMut for Prepared<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.statement.as_mut().expect("until dropped")
    }
}

impl Drop for Prepared<'_> {
    fn drop(&mut self) {
        let (Some(statement), Some(text)) = (self.statement.take(), self.text.take()) else {
            return;
        };
        // SAFETY: `text` is set only for a statement of the batch open on this thread (see
        // `prepare`); that batch keeps its connection until `close`, which drops what is kept.
        let statement: CachedStatement<'static> = unsafe { std::mem::transmute(statement) };
        let back = BATCH.with(|b| match b.borrow_mut().as_mut() {
            Some(batch) if std::ptr::eq(batch.conn, self.conn) => batch.kept.insert(self.key, (text, statement)).map(|(_, s)| s),
            _ => Some(statement),
        });
        // Outside the borrow: a statement dropped here goes back to rusqlite's cache.
        drop(back);
    }
}

/// `sql` on `conn`: the batch's statement when a batch is open on `conn` on this thread,
/// otherwise rusqlite's cached one.
pub fn prepare<'c>(conn: &'c Connection, sql: &str) -> rusqlite::Result<Prepared<'c>> {
    let key = (sql.as_ptr() as usize, sql.len());
    let found = BATCH.with(|b| {
        let mut b = b.borrow_mut();
        let batch = b.as_mut().filter(|batch| std::ptr::eq(batch.conn, conn))?;
        Some(match batch.kept.remove(&key) {
            Some((text, statement)) if *text == *sql => Some((text, statement)),
            stale => {
                // Another text where a kept one was goes back to rusqlite's cache (that
                // touches no state of this module).
                drop(stale);
                // The same text kept under another address (a string made anew for each use):
                // taken from there, else rusqlite's cache would not have it and would prepare
                // it again.
                let moved = batch.kept.iter().find(|(_, (text, _))| **text == *sql).map(|(k, _)| *k);
                moved.and_then(|k| batch.kept.remove(&k))
            }
        })
    });
    let (text, statement) = match found {
        None => {
            return conn.prepare_cached(sql).map(|s| Prepared {
                conn,
                statement: Some(s),
                text: None,
                key,
            })
        }
        Some(Some(kept)) => kept,
        Some(None) => (Box::from(sql), conn.prepare_cached(sql)?),
    };
    // SAFETY: kept for the batch open on `conn`, which outlives this borrow of it.
    let statement: CachedStatement<'c> = unsafe { std::mem::transmute(statement) };
    Ok(Prepared {
        conn,
        statement: Some(statement),
        text: Some(text),
        key,
    })
}

/// Hashes a key of two words (an address and a length) by mixing them: the keys are few and
/// distinct, no need for a keyed hash.
#[derive(Default)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(*b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        c
    }

    #[test]
    fn a_batch_keeps_its_statements_and_gives_them_back_at_its_end() {
        let c = conn();
        let sql = "INSERT INTO t (x) VALUES (?1)";
        open(&c);
        for i in 0..3 {
            prepare(&c, sql).unwrap().execute([i]).unwrap();
        }
        let kept = BATCH.with(|b| b.borrow().as_ref().map(|b| b.kept.len()));
        assert_eq!(kept, Some(1), "one statement kept for the batch");
        close();
        assert!(BATCH.with(|b| b.borrow().is_none()));
        let n: i64 = c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 3);
    }

    #[test]
    fn another_text_at_the_same_address_is_not_taken_for_the_kept_one() {
        let c = conn();
        open(&c);
        let mut text = String::with_capacity(64);
        text.push_str("INSERT INTO t (x) VALUES (1)");
        prepare(&c, &text).unwrap().execute([]).unwrap();
        // Same buffer, same length, another statement.
        text.clear();
        text.push_str("INSERT INTO t (x) VALUES (2)");
        prepare(&c, &text).unwrap().execute([]).unwrap();
        close();
        let xs: Vec<i64> = c
            .prepare("SELECT x FROM t ORDER BY x")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(xs, vec![1, 2]);
    }

    #[test]
    fn a_text_made_anew_at_another_address_finds_its_statement() {
        let c = conn();
        open(&c);
        let texts: Vec<String> = (0..3).map(|_| "INSERT INTO t (x) VALUES (7)".to_string()).collect();
        for text in &texts {
            prepare(&c, text).unwrap().execute([]).unwrap();
        }
        let kept = BATCH.with(|b| b.borrow().as_ref().map(|b| b.kept.len()));
        assert_eq!(kept, Some(1), "one statement for the text, whatever its address");
        close();
    }

    #[test]
    fn a_statement_in_use_twice_at_once_is_two_statements() {
        let c = conn();
        c.execute_batch("INSERT INTO t (x) VALUES (1), (2)").unwrap();
        open(&c);
        let sql = "SELECT x FROM t ORDER BY x";
        let mut outer = prepare(&c, sql).unwrap();
        let mut rows = outer.query([]).unwrap();
        let mut seen = vec![];
        while let Some(r) = rows.next().unwrap() {
            let x: i64 = r.get(0).unwrap();
            let inner: i64 = prepare(&c, sql).unwrap().query_row([], |r| r.get(0)).unwrap();
            seen.push((x, inner));
        }
        drop(rows);
        drop(outer);
        close();
        assert_eq!(seen, vec![(1, 1), (2, 1)]);
    }

    #[test]
    fn another_connection_uses_rusqlite_s_cache() {
        let (a, b) = (conn(), conn());
        open(&a);
        prepare(&b, "INSERT INTO t (x) VALUES (5)").unwrap().execute([]).unwrap();
        let kept = BATCH.with(|x| x.borrow().as_ref().map(|x| x.kept.len()));
        assert_eq!(kept, Some(0));
        close();
    }
}
