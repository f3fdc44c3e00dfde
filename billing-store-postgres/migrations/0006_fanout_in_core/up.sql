-- The fan-out of events to webhook deliveries is enqueued by billing-core (event::record), in
-- the event's own transaction, for the endpoints that subscribe to the event's type: the rule
-- and the work kind's name live in the core, not in a trigger.
DROP TRIGGER IF EXISTS events_enqueue_webhook_fanout ON events;
DROP FUNCTION IF EXISTS enqueue_webhook_fanout();
