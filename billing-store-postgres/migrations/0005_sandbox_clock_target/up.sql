-- The farthest target of a sandbox clock advance under way (organization time): concurrent
-- advances start from it, so they add up.
ALTER TABLE organizations ADD COLUMN clock_advancing_to timestamptz;
