//! Changes of the database file made by another process (`billing-server keys revoke` while
//! the server runs), for the auth generation: this process's own changes move it through the
//! writer ([`crate::writer::Writer::auth_generation`]); this notices every commit made through
//! any other connection, from SQLite's `PRAGMA data_version` on a connection of its own, asked
//! at most every [`POLL`] and only when an authentication wants to know.

use rusqlite::Connection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest a change committed by another process goes unnoticed once a request asks.
pub const POLL: Duration = Duration::from_millis(5);

#[derive(Default)]
pub struct AuthWatch {
    /// The watching connection, the last version it saw, and when it last looked.
    state: Mutex<Option<(Connection, i64, Instant)>>,
    moved: AtomicU64,
}

impl AuthWatch {
    /// A counter that moves after any commit through another connection (this process's
    /// writer's commits too: more often than needed, never less).
    pub fn generation(&self, open: impl FnOnce() -> Option<Connection>) -> u64 {
        if let Ok(mut state) = self.state.try_lock() {
            if state.as_ref().is_none_or(|(_, _, at)| at.elapsed() >= POLL) {
                if state.is_none() {
                    *state = open().map(|c| (c, -1, Instant::now()));
                }
                match state.as_mut() {
                    Some((conn, seen, at)) => {
                        match conn.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0)) {
                            Ok(v) if v == *seen => {}
                            Ok(v) => {
                                *seen = v;
                                self.moved.fetch_add(1, Ordering::SeqCst);
                            }
                            // Start over with a new connection next time; meanwhile assume a change.
                            Err(_) => {
                                self.moved.fetch_add(1, Ordering::SeqCst);
                                *state = None;
                                return self.moved.load(Ordering::SeqCst);
                            }
                        }
                        *at = Instant::now();
                    }
                    None => {
                        self.moved.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
        }
        self.moved.load(Ordering::SeqCst)
    }
}
