-- The due-work queue (billing_core::work): background work claimed with a lease.
-- `due_at` is organization time (micros); `leased_until` server time (micros).
CREATE TABLE due_work (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL,
    kind TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    leased_until INTEGER
);
CREATE INDEX due_work_due ON due_work(due_at);
CREATE INDEX due_work_org_due ON due_work(org_id, due_at);

-- Webhook endpoints of a branch. `event_types` is a JSON array, NULL for all types.
CREATE TABLE webhook_endpoints (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB NOT NULL,
    url TEXT NOT NULL,
    event_types TEXT,
    description TEXT,
    enabled INTEGER NOT NULL,
    secret_key TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER,
    deleted_at INTEGER
);
CREATE INDEX webhook_endpoints_branch ON webhook_endpoints(branch_id, created_at);

-- One delivery per (endpoint, event); `attempts` is the JSON log of its attempts.
CREATE TABLE webhook_deliveries (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL,
    branch_id BLOB NOT NULL,
    endpoint_id BLOB NOT NULL REFERENCES webhook_endpoints(id),
    event_id BLOB NOT NULL,
    event_type TEXT NOT NULL,
    status TEXT NOT NULL,
    next_attempt_at INTEGER,
    attempts TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_endpoint_event_key ON webhook_deliveries(endpoint_id, event_id);
CREATE INDEX webhook_deliveries_endpoint_created ON webhook_deliveries(endpoint_id, created_at, id);

-- Every event of a branch with a live, enabled endpoint is fanned out by a due-work item
-- written in the event's own transaction (id = the event's id), so no committed event is missed,
-- whatever order concurrent transactions commit in.
CREATE TRIGGER events_enqueue_webhook_fanout AFTER INSERT ON events
WHEN EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.branch_id = NEW.branch_id AND e.enabled = 1 AND e.deleted_at IS NULL)
BEGIN
    INSERT INTO due_work (id, org_id, kind, due_at, payload, attempts, leased_until)
    VALUES (NEW.id, NEW.org_id, 'webhook.fanout', NEW.created_at, '{}', 0, NULL);
END;
