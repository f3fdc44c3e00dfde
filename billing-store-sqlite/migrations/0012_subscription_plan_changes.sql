-- Plan changes of subscriptions (PUT /subscriptions/{id}): at most one SCHEDULED per
-- subscription (a partial unique index), the others kept as history. The target plan, its diff
-- and its preview are one JSON body (money in integer thousandths); the columns are what is
-- searched. And the cycle a subscription's `period_anchor` starts (an interval change
-- re-anchors the cycles where it takes effect).

ALTER TABLE subscriptions ADD COLUMN anchor_cycle INTEGER NOT NULL DEFAULT 1;

CREATE TABLE subscription_plan_changes (
    id BLOB PRIMARY KEY,
    subscription_id BLOB NOT NULL REFERENCES subscriptions(id),
    status TEXT NOT NULL,
    currency TEXT NOT NULL,
    effective_cycle INTEGER NOT NULL,
    effective_at INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE UNIQUE INDEX subscription_plan_changes_scheduled_key ON subscription_plan_changes(subscription_id) WHERE status = 'SCHEDULED';
CREATE INDEX subscription_plan_changes_subscription ON subscription_plan_changes(subscription_id, created_at);
