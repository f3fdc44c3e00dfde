CREATE INDEX due_work_due ON due_work(due_at);
DROP INDEX due_work_due_id;
