ALTER TABLE due_work ALTER COLUMN payload TYPE jsonb USING payload::jsonb;
ALTER TABLE events ALTER COLUMN payload TYPE jsonb USING payload::jsonb;
