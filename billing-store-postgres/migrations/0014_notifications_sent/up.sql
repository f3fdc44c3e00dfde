-- Notifications are sent now (billing_core::notification): each has a status, its attempts and
-- its next attempt, and names its consumer. Rows recorded before this version were never sent
-- and are not sent late: they become `canceled`. The kind stays in `template`.
ALTER TABLE notifications ADD COLUMN consumer_id uuid;
ALTER TABLE notifications ADD COLUMN status text NOT NULL DEFAULT 'canceled';
ALTER TABLE notifications ADD COLUMN attempts jsonb NOT NULL DEFAULT '[]';
ALTER TABLE notifications ADD COLUMN next_attempt_at timestamptz;
ALTER TABLE notifications ADD COLUMN updated_at timestamptz;
UPDATE notifications SET updated_at = created_at;
ALTER TABLE notifications ALTER COLUMN updated_at SET NOT NULL;
UPDATE notifications SET template = 'INSTALLMENT_FAILED' WHERE template = 'PAYMENT_FAILED';
UPDATE notifications n SET consumer_id = (
    SELECT c.id FROM consumers c
    WHERE c.branch_id = n.branch_id AND (c.email = n.recipient OR c.phone_number = n.recipient)
    LIMIT 1
) WHERE n.branch_id IS NOT NULL;
DROP INDEX notifications_unsent;
CREATE INDEX notifications_branch_created ON notifications(branch_id, created_at, id);
CREATE INDEX notifications_org_level_created ON notifications(org_id, created_at, id) WHERE branch_id IS NULL;

-- An invitation is accepted once.
ALTER TABLE invitations ADD COLUMN accepted_at timestamptz;
ALTER TABLE invitations ADD COLUMN accepted_by uuid;
CREATE INDEX users_org_email ON users(org_id, lower(email));
