-- Freeze periods of subscriptions (billing_core::subscription::freeze) and the trials of
-- subscriptions created with one (billing_core::subscription::trial).

CREATE TABLE subscription_freezes (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL,
    branch_id uuid NOT NULL,
    subscription_id uuid NOT NULL REFERENCES subscriptions(id),
    starts_at timestamptz NOT NULL,
    ends_at timestamptz,
    notes text,
    invoice_id uuid,
    state text NOT NULL,
    deleted_at timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE INDEX subscription_freezes_subscription ON subscription_freezes(subscription_id, starts_at);

CREATE TABLE subscription_trials (
    subscription_id uuid PRIMARY KEY REFERENCES subscriptions(id),
    starts_at timestamptz NOT NULL,
    ends_at timestamptz NOT NULL
);
