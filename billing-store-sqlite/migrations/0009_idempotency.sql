-- Idempotency keys (billing_core::idempotency): one row per organization, credential scope and key,
-- with the stored response once the request finished. Timestamps INTEGER microseconds: created_at in
-- the organization's time, lease_until in server time.

CREATE TABLE idempotency_keys (
    org_id BLOB NOT NULL REFERENCES organizations(id),
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    state TEXT NOT NULL,
    owner BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    lease_until INTEGER NOT NULL,
    response_status INTEGER,
    response_headers TEXT,
    response_body BLOB,
    PRIMARY KEY (org_id, scope, key)
);

-- The purge of expired keys, per organization.
CREATE INDEX idempotency_keys_org_created ON idempotency_keys (org_id, created_at);
