-- The due-work queue (billing_core::work): background work claimed with a lease
-- (`FOR UPDATE SKIP LOCKED`). `due_at` is organization time; `leased_until` server time.
CREATE TABLE due_work (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL,
    kind text NOT NULL,
    due_at timestamptz NOT NULL,
    payload jsonb NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    leased_until timestamptz
);
CREATE INDEX due_work_due ON due_work(due_at);
CREATE INDEX due_work_org_due ON due_work(org_id, due_at);

-- Webhook endpoints of a branch. `event_types` NULL means all types.
CREATE TABLE webhook_endpoints (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid NOT NULL,
    url text NOT NULL,
    event_types text[],
    description text,
    enabled boolean NOT NULL,
    secret_key text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz,
    deleted_at timestamptz
);
CREATE INDEX webhook_endpoints_branch ON webhook_endpoints(branch_id, created_at);

-- One delivery per (endpoint, event); `attempts` is the JSON log of its attempts.
CREATE TABLE webhook_deliveries (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL,
    branch_id uuid NOT NULL,
    endpoint_id uuid NOT NULL REFERENCES webhook_endpoints(id),
    event_id uuid NOT NULL,
    event_type text NOT NULL,
    status text NOT NULL,
    next_attempt_at timestamptz,
    attempts jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_endpoint_event_key ON webhook_deliveries(endpoint_id, event_id);
CREATE INDEX webhook_deliveries_endpoint_created ON webhook_deliveries(endpoint_id, created_at, id);

-- Every event of a branch with a live, enabled endpoint is fanned out by a due-work item
-- written in the event's own transaction (id = the event's id). A cursor over `events.seq`
-- would skip events whose transaction commits after a later `seq` was read.
CREATE FUNCTION enqueue_webhook_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.branch_id = NEW.branch_id AND e.enabled AND e.deleted_at IS NULL) THEN
        INSERT INTO due_work (id, org_id, kind, due_at, payload, attempts, leased_until)
        VALUES (NEW.id, NEW.org_id, 'webhook.fanout', NEW.created_at, '{}'::jsonb, 0, NULL);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER events_enqueue_webhook_fanout AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION enqueue_webhook_fanout();
