//! Claims of due work: the items due in their organizations' time, leased in claim order.
//! Claims lock the rows they take with `FOR UPDATE SKIP LOCKED`, so processes claiming at the
//! same time take different items and never wait on each other.

use crate::support::*;
use crate::work::WorkRow;
use billing_model::clock::Timestamp;
use billing_model::ids::OrgId;
use billing_model::work::DueWork;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};

#[derive(QueryableByName)]
struct Exists {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    found: bool,
}

/// Whether item `w` is due: its `due_at` (organization time) has come in its organization's
/// time. A correlated lookup of the organization rather than a join: with a join, a planner
/// whose statistics lag behind a growing queue hashes and sorts the whole queue (tens of
/// milliseconds at 10,000 items, for every claim); with the lookup, it walks the
/// `(due_at, id)` index in claim order and stops at the limit.
macro_rules! due {
    () => {
        "w.due_at <= $1 + (SELECT o.clock_offset_us FROM organizations o WHERE o.id = w.org_id) \
         * interval '1 microsecond' AND (w.leased_until IS NULL OR w.leased_until <= $1)"
    };
}

/// A claim reads two ranges, in claim order. Walking the queue in due order with the test of
/// [`due!`] cannot stop at a bound (each item has its own): once fewer items were due than a
/// claim asked for, it read the whole queue, every item not yet due (next cycles, retries), at
/// each claim. Split, each read is bounded. First the items due by the server's clock
/// (`due_at <= $1`: due for every organization whose clock is not behind; the test still
/// applies, for any that were), a walk of the `(due_at, id)` index that stops at `$1`.
macro_rules! due_by_server_time {
    () => {
        concat!(
            "SELECT w.id FROM due_work w WHERE w.due_at <= $1 AND ",
            due!(),
            " AND w.kind = ANY($3) AND ($4::uuid IS NULL OR w.org_id = $4) AND w.org_id <> ALL($6) \
             ORDER BY w.due_at, w.id LIMIT $5 FOR UPDATE OF w SKIP LOCKED"
        )
    };
}

/// Then the items due later than that in the organizations whose clock is ahead (a sandbox
/// test clock): each organization's range of the `(org_id, due_at)` index up to its own clock.
/// They all come after the first range in due order.
///
/// Usually no organization's clock is ahead, and then the read must cost nothing. Left to the
/// planner, it walked every item due later (the next cycles' renewals, the retries) and looked
/// up each one's organization: 7 ms a claim at 30,000 subscriptions during a renewal day, 22 ms
/// by its end, for no item. `clock_ahead!`, an uncorrelated test, is planned as a one-time
/// filter: evaluated once, and when no organization is ahead nothing else runs.
macro_rules! due_by_clock_ahead {
    () => {
        concat!(
            "SELECT w.id FROM organizations o JOIN due_work w ON w.org_id = o.id \
         WHERE ",
            clock_ahead!(),
            " AND o.clock_offset_us > 0 AND w.due_at > $1 AND w.due_at <= $1 + o.clock_offset_us * interval '1 microsecond' \
           AND (w.leased_until IS NULL OR w.leased_until <= $1) \
           AND w.kind = ANY($3) AND ($4::uuid IS NULL OR w.org_id = $4) AND w.org_id <> ALL($6) \
         ORDER BY w.due_at, w.id LIMIT $5 FOR UPDATE OF w SKIP LOCKED"
        )
    };
}

/// Whether any organization's clock is ahead of the server's (see `due_by_clock_ahead!`).
macro_rules! clock_ahead {
    () => {
        "EXISTS (SELECT 1 FROM organizations a WHERE a.clock_offset_us > 0)"
    };
}

const CLAIM_DUE: &str = concat!(
    "UPDATE due_work SET leased_until = $2, attempts = attempts + 1 WHERE id IN (",
    due_by_server_time!(),
    ") RETURNING id, org_id, kind, due_at, payload, attempts, leased_until"
);
const CLAIM_AHEAD: &str = concat!(
    "UPDATE due_work SET leased_until = $2, attempts = attempts + 1 WHERE id IN (",
    due_by_clock_ahead!(),
    ") RETURNING id, org_id, kind, due_at, payload, attempts, leased_until"
);

/// Whether [`CLAIM_DUE`] or [`CLAIM_AHEAD`] would find an item (scans that stop at the first).
const ANY_DUE: &str = concat!(
    "SELECT EXISTS (SELECT 1 FROM due_work w WHERE w.due_at <= $1 AND ",
    due!(),
    " AND w.kind = ANY($2) AND ($3::uuid IS NULL OR w.org_id = $3)) \
     OR EXISTS (SELECT 1 FROM organizations o JOIN due_work w ON w.org_id = o.id \
         WHERE ",
    clock_ahead!(),
    " AND o.clock_offset_us > 0 AND w.due_at > $1 AND w.due_at <= $1 + o.clock_offset_us * interval '1 microsecond' \
           AND (w.leased_until IS NULL OR w.leased_until <= $1) AND w.kind = ANY($2) AND ($3::uuid IS NULL OR w.org_id = $3)) AS found"
);

/// Planner settings for the claim, in force only around it (see [`PgTx::claim`]).
const CLAIM_PLAN: &str = "SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off";
const CLAIM_PLAN_END: &str = "RESET enable_sort; RESET enable_seqscan";

impl PgTx<'_> {
    /// Leases the earliest `limit` due items of `org` (or of all but `except`).
    pub(crate) fn claim(
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
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        let except: Vec<uuid::Uuid> = except.iter().map(|o| o.0).collect();
        // A queue grows and shrinks faster than PostgreSQL's statistics follow: planned from
        // a table it believes small, the claim reads and sorts every item (36 ms at 5,000 items
        // against 2.7 ms when it walks the `(due_at, id)` index and stops at the limit, which
        // is the right plan at any size). So the walk is made the only plan on offer; the
        // settings last for this statement only.
        self.change(|c| c.batch_execute(CLAIM_PLAN))?;
        let claim = |tx: &mut Self, sql: &str, limit: u32| -> StoreResult<Vec<WorkRow>> {
            tx.change(|c| {
                diesel::sql_query(sql)
                    .bind::<Timestamptz, _>(server_now)
                    .bind::<Timestamptz, _>(lease_until)
                    .bind::<Array<Text>, _>(&kinds)
                    .bind::<Nullable<SqlUuid>, _>(org.map(|o| o.0))
                    .bind::<BigInt, _>(i64::from(limit))
                    .bind::<Array<SqlUuid>, _>(&except)
                    .load(c)
            })
        };
        let mut rows = claim(self, CLAIM_DUE, limit)?;
        self.change(|c| c.batch_execute(CLAIM_PLAN_END))?;
        let left = limit - rows.len() as u32;
        if left > 0 {
            rows.extend(claim(self, CLAIM_AHEAD, left)?);
        }
        rows.sort_by_key(|r| (r.due_at, r.id));
        Ok(rows.into_iter().map(WorkRow::into_domain).collect())
    }

    /// Whether [`CLAIM_DUE`] or [`CLAIM_AHEAD`] would find an item of `kinds` (of `org`, or of
    /// any organization).
    pub(crate) fn any_due(&mut self, org: Option<OrgId>, kinds: &[&str], server_now: Timestamp) -> StoreResult<bool> {
        if kinds.is_empty() {
            return Ok(false);
        }
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        let row: Exists = self.read(|c| {
            diesel::sql_query(ANY_DUE)
                .bind::<Timestamptz, _>(server_now)
                .bind::<Array<Text>, _>(&kinds)
                .bind::<Nullable<SqlUuid>, _>(org.map(|o| o.0))
                .get_result(c)
        })?;
        Ok(row.found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{server_url, TempDatabase, DATABASE_URL_ENV};

    #[derive(QueryableByName)]
    struct PlanLine {
        #[diesel(sql_type = Text)]
        #[diesel(column_name = "QUERY PLAN")]
        line: String,
    }

    #[derive(QueryableByName)]
    struct Setting {
        #[diesel(sql_type = Text)]
        value: String,
    }

    const ORG: &str = "00000000-0000-7000-8000-000000000001";

    /// `sql`, with the binds of [`CLAIM_AHEAD`] as [`PgTx::claim`] sends them (now, a lease of
    /// five minutes, renewals, any organization, 100 items, none excluded).
    fn with_claim_binds<T: QueryableByName<diesel::pg::Pg> + 'static>(conn: &mut PgConnection, sql: &str) -> Vec<T> {
        let now = chrono::Utc::now();
        diesel::sql_query(sql)
            .bind::<Timestamptz, _>(now)
            .bind::<Timestamptz, _>(now + chrono::Duration::minutes(5))
            .bind::<Array<Text>, _>(vec!["subscription.renewal".to_string()])
            .bind::<Nullable<SqlUuid>, _>(None::<Uuid>)
            .bind::<BigInt, _>(100i64)
            .bind::<Array<SqlUuid>, _>(Vec::<Uuid>::new())
            .load::<T>(conn)
            .expect("the ahead claim runs")
    }

    /// With no organization's clock ahead, the ahead claim reads no queue item (a one-time
    /// filter stops it before the queue's scan), however many items are due later; with one
    /// ahead, it claims that organization's items due by its clock.
    #[test]
    fn the_ahead_claim_reads_nothing_when_no_clock_is_ahead() {
        let Some(server) = server_url() else {
            eprintln!("SKIPPED the_ahead_claim_reads_nothing_when_no_clock_is_ahead: {DATABASE_URL_ENV} is not set");
            return;
        };
        let db = TempDatabase::create(&server).expect("a temporary database");
        let mut conn = PgConnection::establish(db.url()).expect("connect");
        conn.batch_execute(&format!(
            "INSERT INTO organizations (id, name, sandbox, settings, clock_offset_us, created_at) VALUES ('{ORG}', 'o', true, '{{}}', 0, now());
             INSERT INTO due_work (id, org_id, kind, due_at, payload, attempts, leased_until)
             SELECT gen_random_uuid(), '{ORG}', 'subscription.renewal', now() + interval '1 hour' + i * interval '1 second', '{{}}', 0, NULL
             FROM generate_series(1, 3000) i;
             ANALYZE;"
        ))
        .expect("seed");
        let plan: Vec<PlanLine> = with_claim_binds(&mut conn, &format!("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {CLAIM_AHEAD}"));
        let plan = plan.into_iter().map(|l| l.line).collect::<Vec<_>>().join("\n");
        let scan = plan
            .lines()
            .find(|l| l.contains("on due_work w"))
            .unwrap_or_else(|| panic!("a scan of the queue in:\n{plan}"));
        assert!(scan.contains("never executed"), "the queue is not read when no clock is ahead:\n{plan}");

        // An hour and a half ahead: the items due within it are claimed (the limit, 100).
        conn.batch_execute(&format!("UPDATE organizations SET clock_offset_us = 5400000000 WHERE id = '{ORG}'"))
            .expect("ahead");
        assert_eq!(with_claim_binds::<WorkRow>(&mut conn, CLAIM_AHEAD).len(), 100);
    }

    /// The store's sessions never compile statements (JIT): see `CountStatements::on_acquire`.
    #[test]
    fn store_sessions_do_not_compile_statements() {
        let Some(server) = server_url() else {
            eprintln!("SKIPPED store_sessions_do_not_compile_statements: {DATABASE_URL_ENV} is not set");
            return;
        };
        let store = crate::PgStore::open_temp(TempDatabase::create(&server).expect("a temporary database")).expect("a store");
        let mut conn = store.conn().expect("a pooled connection");
        let jit: Setting = diesel::sql_query("SELECT current_setting('jit') AS value")
            .get_result(&mut *conn)
            .expect("the setting");
        assert_eq!(jit.value, "off");
    }
}
