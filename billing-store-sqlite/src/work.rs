//! The due-work queue: `billing_model::work::WorkTx`. Claiming needs no row locks here: every
//! write transaction runs under the single writer (`BEGIN IMMEDIATE`), so a claim's read and
//! update are never interleaved with another's. An item is due when its `due_at` (organization
//! time) has passed on the organization's clock: the server time plus its test-clock offset.

use crate::sql::*;
use billing_model::clock::{from_micros, to_micros, Timestamp};
use billing_model::ids::{OrgId, WorkId};
use billing_model::store::StoreResult;
use billing_model::work::{DueTimes, DueWork, QueueDepth, WorkTx};
use serde_json::Value;

table! {
    pub Work in "due_work" for DueWork |w, r, at| {
        id: u(w.id) => get_id(r, at)?,
        org_id: u(w.org_id) => get_id(r, at)?,
        kind: s(&w.kind) => r.get(at)?,
        due_at: t(&w.due_at) => get_ts(r, at)?,
        payload: j(&w.payload) => get_json(r, at)?,
        attempts: i(i64::from(w.attempts)) => get_count(r, at)?,
        leased_until: t_opt(&w.leased_until) => get_ts_opt(r, at)?,
    } => DueWork { id, org_id, kind, due_at, payload, attempts, leased_until }
}

/// The two ranges a claim reads, in claim order (see [`due_part`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Items due by the server's clock (`due_at <= server_now`): a bounded walk of the
    /// `(due_at, id)` index, whatever the size of the queue behind them.
    ServerTime,
    /// Items due later than that, of the organizations whose clock is ahead (a sandbox test
    /// clock): organization by organization on the `(org_id, due_at)` index, each up to its
    /// own clock. Every one of them comes after every item of the first part in due order.
    ClockAhead,
}

/// `FROM … WHERE` the items of `part` due and free at `server_now`, of `org` (or all but
/// `except`) and of `kinds`.
///
/// Due means `due_at <= server_now + the organization's clock offset`. Walking the queue in due
/// order with that test cannot stop at a bound (each item has its own), so once fewer items are
/// due than a claim asks for, it read the whole queue: every item not yet due (next cycles,
/// retries), at each claim. Split in two parts, each read is bounded: items due by the server's
/// clock are due for every organization whose clock is not behind (the test still applies, for
/// any that were), and the later ones are due only in organizations whose clock is ahead.
fn due_part(part: Part, org: Option<OrgId>, except: &[OrgId], kinds: &[&str], server_now: Timestamp) -> Filter {
    let from_where = match part {
        Part::ServerTime => {
            "FROM due_work w JOIN organizations o ON o.id = w.org_id \
             WHERE w.due_at <= ?1 AND w.due_at <= ?1 + o.clock_offset_us AND (w.leased_until IS NULL OR w.leased_until <= ?1)"
        }
        // CROSS JOIN: the organizations first (SQLite keeps that order), so that each reads its
        // own range of the `(org_id, due_at)` index rather than the queue's whole future.
        Part::ClockAhead => {
            "FROM organizations o CROSS JOIN due_work w \
             WHERE o.clock_offset_us > 0 AND w.org_id = o.id AND w.due_at > ?1 AND w.due_at <= ?1 + o.clock_offset_us \
             AND (w.leased_until IS NULL OR w.leased_until <= ?1)"
        }
    };
    let mut w = Filter::new(from_where, vec![i(to_micros(server_now))]);
    if let Some(o) = org {
        w.cmp("w.org_id =", u(o));
    }
    w.any("w.kind", kinds.iter().map(|k| s(*k)).collect());
    if !except.is_empty() {
        w.none("w.org_id", except.iter().map(|o| u(*o)).collect());
    }
    w
}

impl SqliteTx<'_> {
    /// Leases the earliest `limit` due items of `org` (or of all but `except`).
    fn claim(
        &mut self,
        org: Option<OrgId>,
        except: &[OrgId],
        kinds: &[&str],
        server_now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<DueWork>> {
        if kinds.is_empty() || limit == 0 {
            return Ok(vec![]);
        }
        let mut ids: Vec<WorkId> = Vec::new();
        for part in [Part::ServerTime, Part::ClockAhead] {
            let left = limit as usize - ids.len();
            if left == 0 {
                break;
            }
            let w = due_part(part, org, except, kinds, server_now);
            let found: Vec<WorkId> = self.all(&format!("SELECT w.id {} ORDER BY w.due_at, w.id LIMIT {left}", w.sql), w.params, |r| {
                get_id(r, 0)
            })?;
            ids.extend(found);
        }
        let mut out = Vec::with_capacity(ids.len());
        for wid in ids {
            // Leased and read back in one statement.
            out.extend(self.one(
                sql!(
                    "UPDATE due_work SET leased_until = ?2, attempts = attempts + 1 WHERE id = ?1 RETURNING {}",
                    Work::sql().select
                ),
                vec![u(wid), t(&lease_until)],
                Work::row,
            )?);
        }
        Ok(out)
    }
}

impl WorkTx for SqliteTx<'_> {
    fn insert_work(&mut self, w: &DueWork) -> StoreResult<()> {
        self.exec(&Work::sql().insert, Work::params(w)?).map(drop)
    }

    fn insert_work_if_absent(&mut self, w: &DueWork) -> StoreResult<bool> {
        Ok(self.exec(sql!("{} ON CONFLICT (id) DO NOTHING", Work::sql().insert), Work::params(w)?)? > 0)
    }

    fn work(&mut self, id: WorkId) -> StoreResult<Option<DueWork>> {
        self.one(sql!("SELECT {} FROM due_work WHERE id = ?1", Work::sql().select), vec![u(id)], Work::row)
    }

    fn claim_due_work(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp, lease_until: Timestamp, limit: u32) -> StoreResult<Vec<DueWork>> {
        self.claim(org, &[], kinds, server_now, lease_until, limit)
    }

    fn claim_due_work_except(
        &mut self,
        except: &[OrgId],
        kinds: &[&str],
        server_now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<DueWork>> {
        self.claim(None, except, kinds, server_now, lease_until, limit)
    }

    fn due_work_exists(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp) -> StoreResult<bool> {
        if kinds.is_empty() {
            return Ok(false);
        }
        for part in [Part::ServerTime, Part::ClockAhead] {
            let w = due_part(part, org, &[], kinds, server_now);
            if self
                .one(&format!("SELECT EXISTS (SELECT 1 {})", w.sql), w.params, |r| r.get::<_, bool>(0))?
                .unwrap_or(false)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn work_due_times(&mut self, org: OrgId, kinds: &[&str], server_now: Timestamp) -> StoreResult<DueTimes> {
        if kinds.is_empty() {
            return Ok(DueTimes::default());
        }
        let mut w = Filter::new("FROM due_work WHERE org_id = ?1", vec![u(org), i(to_micros(server_now))]);
        w.any("kind", kinds.iter().map(|k| s(*k)).collect());
        let sql = format!(
            "SELECT MIN(CASE WHEN leased_until IS NULL OR leased_until <= ?2 THEN due_at END), \
                    MIN(CASE WHEN leased_until > ?2 THEN due_at END) {}",
            w.sql
        );
        let (free, held) = self
            .one(&sql, w.params, |r| Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?)))?
            .unwrap_or_default();
        Ok(DueTimes {
            next_free: free.map(from_micros),
            first_held: held.map(from_micros),
        })
    }

    fn work_queue_depths(&mut self, server_now: Timestamp) -> StoreResult<Vec<QueueDepth>> {
        // Due as claims count it: on the organization's clock, and nobody holding it.
        let due = "w.due_at <= ?1 + o.clock_offset_us AND (w.leased_until IS NULL OR w.leased_until <= ?1)";
        let sql = format!(
            "SELECT w.kind, COUNT(*), \
                    COALESCE(SUM(CASE WHEN {due} THEN 1 ELSE 0 END), 0), \
                    COALESCE(SUM(CASE WHEN w.leased_until > ?1 THEN 1 ELSE 0 END), 0), \
                    COALESCE(MAX(CASE WHEN {due} THEN ?1 + o.clock_offset_us - w.due_at END), 0) \
             FROM due_work w JOIN organizations o ON o.id = w.org_id GROUP BY w.kind ORDER BY w.kind"
        );
        self.all(&sql, vec![i(to_micros(server_now))], |r| {
            Ok(QueueDepth {
                kind: r.get(0)?,
                items: r.get::<_, i64>(1)? as u64,
                due: r.get::<_, i64>(2)? as u64,
                leased: r.get::<_, i64>(3)? as u64,
                lag_us: r.get(4)?,
            })
        })
    }

    fn claim_work(&mut self, id: WorkId, server_now: Timestamp, lease_until: Timestamp) -> StoreResult<Option<DueWork>> {
        let n = self.exec(
            "UPDATE due_work SET leased_until = ?2, attempts = attempts + 1 WHERE id = ?1 AND (leased_until IS NULL OR leased_until <= ?3)",
            vec![u(id), t(&lease_until), t(&server_now)],
        )?;
        if n == 0 {
            return Ok(None);
        }
        self.work(id)
    }

    fn complete_work(&mut self, id: WorkId, lease: Option<Timestamp>) -> StoreResult<bool> {
        let n = self.exec("DELETE FROM due_work WHERE id = ?1 AND leased_until IS ?2", vec![u(id), t_opt(&lease)])?;
        Ok(n > 0)
    }

    fn end_work(&mut self, id: WorkId) -> StoreResult<bool> {
        Ok(self.exec("DELETE FROM due_work WHERE id = ?1", vec![u(id)])? > 0)
    }

    fn reschedule_work(&mut self, id: WorkId, lease: Option<Timestamp>, due_at: Timestamp, payload: &Value) -> StoreResult<bool> {
        let n = self.exec(
            "UPDATE due_work SET due_at = ?3, payload = ?4, leased_until = NULL WHERE id = ?1 AND leased_until IS ?2",
            vec![u(id), t_opt(&lease), t(&due_at), j(payload)],
        )?;
        Ok(n > 0)
    }
}
