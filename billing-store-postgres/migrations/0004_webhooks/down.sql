DROP TRIGGER IF EXISTS events_enqueue_webhook_fanout ON events;
DROP FUNCTION IF EXISTS enqueue_webhook_fanout();
DROP TABLE IF EXISTS webhook_deliveries;
DROP TABLE IF EXISTS webhook_endpoints;
DROP TABLE IF EXISTS due_work;
