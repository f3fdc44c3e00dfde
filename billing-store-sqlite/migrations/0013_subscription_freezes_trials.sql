-- Freeze periods of subscriptions (billing_core::subscription::freeze) and the trials of
-- subscriptions created with one (billing_core::subscription::trial). Timestamps INTEGER
-- microseconds, ids BLOB uuids.

-- (The end of a freeze re-anchors the cycles at the moved period end: `anchor_cycle`, added
-- by migration 0012.)

CREATE TABLE subscription_freezes (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL,
    branch_id BLOB NOT NULL,
    subscription_id BLOB NOT NULL REFERENCES subscriptions(id),
    starts_at INTEGER NOT NULL,
    ends_at INTEGER,
    notes TEXT,
    invoice_id BLOB,
    state TEXT NOT NULL,
    deleted_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE INDEX subscription_freezes_subscription ON subscription_freezes(subscription_id, starts_at);

CREATE TABLE subscription_trials (
    subscription_id BLOB PRIMARY KEY REFERENCES subscriptions(id),
    starts_at INTEGER NOT NULL,
    ends_at INTEGER NOT NULL
);
