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
