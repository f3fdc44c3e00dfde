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
//!
//! A PASSIVE checkpoint copies the WAL but never starts it over: SQLite writes from the WAL's
//! beginning again only when a write transaction starts with every frame already copied, and a
//! writer that is never idle (a renewal day) never starts one then. The WAL grew to 715 MB over
//! a day of 100,000 renewals, every frame appended to the file's end, where each write
//! allocates blocks and zeroes the rest of the ones it starts (a frame is not block-aligned).
//! So once the WAL holds [`RESTART_FRAMES`], this thread asks the writer to start it over: after
//! its next commit, between two of its transactions, the writer runs a RESTART checkpoint on its
//! own connection, which copies what PASSIVE left (at most [`INTERVAL`] of writes) and waits for
//! readers to leave the WAL, for at most [`RESTART_WAIT`]; its next write then starts at the
//! WAL's beginning, in blocks the file already has. (Run from this thread, RESTART had to win
//! the file's write lock from a writer that takes it back at once, and seldom did.) When readers
//! keep it from finishing, the writer goes on and tries again after [`RESTART_BACKOFF`]. It
//! truncates a WAL larger than `journal_size_limit` as it starts it over (`SqliteStore::open`).
//! Measured on a 2-core machine (N = 100,000, alternating): the renewal day took 7.51, 8.58 and
//! 7.56 s against 9.53, 9.05 and 8.41 s with PASSIVE checkpoints alone; the writer started the
//! WAL over 26 times, each time holding its next transaction back 5 to 25 ms.

use billing_model::error::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the WAL is copied into the database file.
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);

/// How many frames in the WAL make the thread start it over (32 MiB of 4 KiB pages).
pub(crate) const RESTART_FRAMES: i64 = 8192;

/// The size a WAL is cut back to when it starts over (`journal_size_limit`): twice what makes
/// it start over, so that a day of writes reuses the file's blocks.
pub(crate) const WAL_SIZE_LIMIT: i64 = 64 << 20;

/// How long the writer's RESTART checkpoint waits for readers to leave the WAL before it gives
/// up; the writes behind it wait that long at most (plus the copy).
pub(crate) const RESTART_WAIT: Duration = Duration::from_millis(20);

/// How long after a RESTART that readers kept from finishing the next one is tried.
pub(crate) const RESTART_BACKOFF: Duration = Duration::from_secs(1);

/// The running checkpoint thread; dropping it stops the thread and waits for it.
pub(crate) struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing the database at `path` (its writer has `wal_autocheckpoint = 0`).
    pub(crate) fn start(path: PathBuf, restart: Arc<AtomicBool>) -> Result<Self, StoreError> {
        Self::start_with(path, restart, RESTART_FRAMES)
    }

    /// [`Self::start`], asking for the WAL to start over once it holds `restart_frames` frames.
    pub(crate) fn start_with(path: PathBuf, restart: Arc<AtomicBool>, restart_frames: i64) -> Result<Self, StoreError> {
        let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(StoreError::backend_from)?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn({
                let stop = stop.clone();
                move || run(&conn, &stop, &restart, restart_frames)
            })
            .map_err(|e| StoreError::backend(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Checkpointer { stop, thread: Some(thread) })
    }
}

fn run(conn: &Connection, stop: &(Mutex<bool>, Condvar), restart: &AtomicBool, restart_frames: i64) {
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
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1)) {
            Ok(frames) => {
                failing = false;
                if frames >= restart_frames {
                    restart.store(true, Ordering::SeqCst);
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::Writer;

    /// A writer that is never idle (one batch after the other, about 10 pages each, for two
    /// seconds) beside the checkpoint thread: the WAL file's size at the end.
    fn wal_after_busy_writing(restart_frames: i64) -> u64 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal.db");
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        conn.pragma_update(None, "journal_size_limit", 1 << 20).unwrap();
        // (The writer looks for consumers to index at each commit.)
        conn.execute_batch("CREATE TABLE t (x BLOB); CREATE TABLE consumers_search_pending (seq INTEGER PRIMARY KEY)")
            .unwrap();
        let writer = Writer::new(conn, true);
        let checkpointer = Checkpointer::start_with(path.clone(), writer.restart_flag(), restart_frames).unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(2);
        while std::time::Instant::now() < until {
            let failed = writer.run_batch(|| {
                let conn = writer.batch_connection().expect("in the batch");
                // SAFETY: the batch holds its connection until this closure returns.
                unsafe { &*conn }
                    .execute_batch(
                        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) \
                         INSERT INTO t SELECT randomblob(4000) FROM n",
                    )
                    .unwrap();
            });
            assert!(failed.is_none(), "{failed:?}");
        }
        drop(checkpointer);
        std::fs::metadata(dir.path().join("wal.db-wal")).unwrap().len()
    }

    #[test]
    fn a_writer_that_is_never_idle_gets_its_wal_started_over() {
        // 256 frames are about 1 MiB, and a WAL started over is cut back to 1 MiB: the file
        // grows by at most what is written between two ticks of the checkpoint thread.
        let bounded = wal_after_busy_writing(256);
        assert!(bounded < 16 << 20, "the WAL kept growing: {bounded} bytes");
        let unbounded = wal_after_busy_writing(i64::MAX);
        assert!(unbounded > 4 * bounded, "without restarts the WAL grows: {unbounded} against {bounded} bytes");
    }
}
