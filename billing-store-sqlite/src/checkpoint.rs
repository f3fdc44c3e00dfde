//! WAL checkpoints on a thread of their own.
//!
//! By default SQLite checkpoints inside the commit that takes the WAL past 1,000 pages: that
//! commit copies the WAL's pages into the database file and syncs it before it returns. Here
//! that commit is a group commit, so every caller waiting on it waited for the copy too (and a
//! whole batch of requests got one slow answer). The writer connection therefore has automatic
//! checkpoints off, and this thread runs a PASSIVE checkpoint on a connection of its own every
//! [`INTERVAL`]: it runs beside the writer and the readers (WAL allows that) and never waits
//! for them, and what it cannot copy yet (pages a reader still needs) it copies next time.
//! When the store goes away the thread stops, and SQLite checkpoints as the last connection
//! closes.

use billing_core::error::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the WAL is copied into the database file.
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);

/// The running checkpoint thread; dropping it stops the thread and waits for it.
pub(crate) struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing the database at `path` (its writer has `wal_autocheckpoint = 0`).
    pub(crate) fn start(path: PathBuf) -> Result<Self, StoreError> {
        let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(crate::backend)?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn({
                let stop = stop.clone();
                move || run(&conn, &stop)
            })
            .map_err(|e| StoreError::backend(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Checkpointer { stop, thread: Some(thread) })
    }
}

fn run(conn: &Connection, stop: &(Mutex<bool>, Condvar)) {
    let (lock, wake) = stop;
    let mut failing = false;
    loop {
        let stopped = lock.lock().unwrap();
        let (stopped, _) = wake.wait_timeout_while(stopped, INTERVAL, |s| !*s).unwrap();
        if *stopped {
            return;
        }
        drop(stopped);
        // Returns (busy, frames in the WAL, frames copied); PASSIVE never blocks the writer.
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0)) {
            Ok(_) => failing = false,
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, "the WAL checkpoint failed; it is retried every {} ms", INTERVAL.as_millis());
            }
            Err(_) => {}
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        *self.stop.0.lock().unwrap() = true;
        self.stop.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
