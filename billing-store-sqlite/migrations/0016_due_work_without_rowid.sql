-- The queue keyed by its id alone (WITHOUT ROWID): an item was four b-trees (the rowid table,
-- the id's index and the two claim indexes), written on each insert and delete, and a renewal
-- inserts four items and deletes two. Now three. Nothing refers to a queue item's rowid.
CREATE TABLE due_work_new (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL,
    kind TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    leased_until INTEGER
) WITHOUT ROWID;
INSERT INTO due_work_new (id, org_id, kind, due_at, payload, attempts, leased_until)
    SELECT id, org_id, kind, due_at, payload, attempts, leased_until FROM due_work;
DROP TABLE due_work;
ALTER TABLE due_work_new RENAME TO due_work;
CREATE INDEX due_work_due_id ON due_work(due_at, id);
CREATE INDEX due_work_org_due_id ON due_work(org_id, due_at, id);
