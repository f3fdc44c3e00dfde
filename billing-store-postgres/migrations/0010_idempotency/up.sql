-- Idempotency keys (billing_core::idempotency): one row per organization, credential scope and key,
-- with the stored response once the request finished. created_at is in the organization's time,
-- lease_until in server time.

CREATE TABLE idempotency_keys (
    org_id uuid NOT NULL REFERENCES organizations(id),
    scope text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    fingerprint text NOT NULL,
    state text NOT NULL,
    owner uuid NOT NULL,
    created_at timestamptz NOT NULL,
    lease_until timestamptz NOT NULL,
    response_status integer,
    response_headers jsonb,
    response_body bytea,
    PRIMARY KEY (org_id, scope, key)
);

-- The purge of expired keys, per organization.
CREATE INDEX idempotency_keys_org_created ON idempotency_keys (org_id, created_at);
