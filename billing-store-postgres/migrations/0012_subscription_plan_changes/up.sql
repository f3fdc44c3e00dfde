-- Plan changes of subscriptions (PUT /subscriptions/{id}): at most one SCHEDULED per
-- subscription (a partial unique index), the others kept as history. The target plan, its diff
-- and its preview are one JSON body (money in integer thousandths); the columns are what is
-- searched. (The cycle a subscription's `period_anchor` starts is kept in its `options`.)

CREATE TABLE subscription_plan_changes (
    id uuid PRIMARY KEY,
    subscription_id uuid NOT NULL REFERENCES subscriptions(id),
    status text NOT NULL,
    currency text NOT NULL,
    effective_cycle bigint NOT NULL,
    effective_at timestamptz NOT NULL,
    body jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE UNIQUE INDEX subscription_plan_changes_scheduled_key ON subscription_plan_changes(subscription_id) WHERE status = 'SCHEDULED';
CREATE INDEX subscription_plan_changes_subscription ON subscription_plan_changes(subscription_id, created_at);
