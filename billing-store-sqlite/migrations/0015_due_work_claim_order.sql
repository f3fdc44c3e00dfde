-- Claims take the earliest due items in (due_at, id) order. With an index on due_at alone,
-- SQLite sorts every item of one due time by id for each claim (a renewal day puts tens of
-- thousands of items at one due time: 0.2 s a claim at 100,000); in exactly that order, a claim
-- reads the first entries and stops.
CREATE INDEX due_work_due_id ON due_work(due_at, id);
DROP INDEX due_work_due;
-- The same for the claims of one organization (a sandbox clock's advance) and of the
-- organizations whose clock is ahead.
CREATE INDEX due_work_org_due_id ON due_work(org_id, due_at, id);
DROP INDEX due_work_org_due;
