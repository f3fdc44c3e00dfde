-- Claims take the earliest due items in (due_at, id) order: an index in exactly that order lets
-- a claim read the first few entries and stop, instead of sorting the whole queue (which is
-- what the planner did while the table's statistics lagged behind a growing queue).
CREATE INDEX due_work_due_id ON due_work(due_at, id);
DROP INDEX due_work_due;
