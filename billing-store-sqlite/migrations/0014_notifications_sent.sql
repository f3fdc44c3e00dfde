-- Notifications are sent now (billing_core::notification): each has a status, its attempts and
-- its next attempt, and names its consumer. Rows recorded before this version were never sent
-- and are not sent late: they become `canceled`. The kind stays in `template`.
ALTER TABLE notifications ADD COLUMN consumer_id BLOB;
ALTER TABLE notifications ADD COLUMN status TEXT NOT NULL DEFAULT 'canceled';
ALTER TABLE notifications ADD COLUMN attempts TEXT NOT NULL DEFAULT '[]';
ALTER TABLE notifications ADD COLUMN next_attempt_at INTEGER;
ALTER TABLE notifications ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
UPDATE notifications SET updated_at = created_at;
UPDATE notifications SET template = 'INSTALLMENT_FAILED' WHERE template = 'PAYMENT_FAILED';
UPDATE notifications SET consumer_id = (
    SELECT c.id FROM consumers c
    WHERE c.branch_id = notifications.branch_id AND (c.email = notifications.recipient OR c.phone_number = notifications.recipient)
    LIMIT 1
) WHERE branch_id IS NOT NULL;
DROP INDEX notifications_unsent;
CREATE INDEX notifications_branch_created ON notifications(branch_id, created_at, id);
CREATE INDEX notifications_org_level_created ON notifications(org_id, created_at, id) WHERE branch_id IS NULL;

-- An invitation is accepted once.
ALTER TABLE invitations ADD COLUMN accepted_at INTEGER;
ALTER TABLE invitations ADD COLUMN accepted_by BLOB;
CREATE INDEX users_org_email ON users(org_id, lower(email));
