ALTER TABLE organizations DROP COLUMN clock_advancing_to;
