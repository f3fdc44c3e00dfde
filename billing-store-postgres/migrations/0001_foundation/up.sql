-- Foundation schema: the same tables, columns and named unique indexes as
-- billing-store-sqlite/migrations/0001_foundation.sql, in native PostgreSQL types:
--   ids are `uuid` (v7, time-ordered);
--   timestamps are `timestamptz` (microsecond precision, what the core keeps);
--   money is BIGINT thousandths of the currency unit (billing_core::money::STORED_SCALE), beside
--   a currency column where the currency varies;
--   free-form objects are `jsonb`; id lists are `uuid[]`, enum lists `text[]`;
--   flags are `boolean`;
--   every list query has a composite index on (scope, sort key, id).
-- Text columns that lists sort by use the "C" collation: byte order, as SQLite sorts, whatever
-- the server's locale. Nullable sort keys are indexed NULLS FIRST: lists put NULL first when
-- ascending and last when descending (as SQLite does), and both directions scan the index.

CREATE TABLE organizations (
    id uuid PRIMARY KEY,
    name text NOT NULL,
    name_en text,
    sandbox boolean NOT NULL,
    settings jsonb NOT NULL,
    clock_offset_us bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL
);
CREATE INDEX organizations_created ON organizations(created_at, id);

CREATE TABLE branches (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    name text NOT NULL,
    -- lower(trim(name)), computed by the store: live branch names are unique per organization,
    -- case-insensitively.
    name_key text NOT NULL,
    created_at timestamptz NOT NULL,
    deleted_at timestamptz
);
CREATE UNIQUE INDEX branches_org_name_key ON branches(org_id, name_key) WHERE deleted_at IS NULL;
CREATE INDEX branches_org_created ON branches(org_id, created_at, id);

CREATE TABLE users (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    email text NOT NULL,
    first_name text NOT NULL,
    last_name text NOT NULL,
    en_first_name text,
    en_last_name text,
    role text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX users_org_role_created ON users(org_id, role, created_at, id);

CREATE TABLE user_branches (
    user_id uuid NOT NULL REFERENCES users(id),
    branch_id uuid NOT NULL REFERENCES branches(id),
    position integer NOT NULL,
    PRIMARY KEY (user_id, branch_id)
);
CREATE INDEX user_branches_branch ON user_branches(branch_id);

CREATE TABLE api_keys (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    user_id uuid NOT NULL REFERENCES users(id),
    name text NOT NULL,
    key text NOT NULL,
    secret_hash text NOT NULL,
    -- The key's branches, in the order given.
    branch_ids uuid[] NOT NULL,
    default_branch_id uuid NOT NULL REFERENCES branches(id),
    is_all_branches boolean NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE UNIQUE INDEX api_keys_key_key ON api_keys(key);
CREATE INDEX api_keys_default_branch ON api_keys(default_branch_id) WHERE revoked_at IS NULL;

CREATE TABLE invitations (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    email text NOT NULL,
    role text NOT NULL,
    branch_ids uuid[] NOT NULL,
    created_by uuid NOT NULL,
    language text NOT NULL,
    expire_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX invitations_org_created ON invitations(org_id, created_at, id);

CREATE TABLE notifications (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid,
    channel text NOT NULL,
    recipient text NOT NULL,
    template text NOT NULL,
    language text NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    sent_at timestamptz
);
CREATE INDEX notifications_org_created ON notifications(org_id, created_at, id);
CREATE INDEX notifications_unsent ON notifications(created_at, id) WHERE sent_at IS NULL;

CREATE TABLE consumers (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid NOT NULL REFERENCES branches(id),
    name text COLLATE "C" NOT NULL,
    phone_number text COLLATE "C",
    email text COLLATE "C",
    email_lower text,
    external_id text COLLATE "C",
    iban text,
    alias text,
    comment text,
    preferred_language text NOT NULL,
    communication_methods text[] NOT NULL,
    consumer_type text NOT NULL,
    address jsonb,
    vat_number text,
    commercial_registration text,
    external_metadata jsonb NOT NULL,
    is_deleted boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE UNIQUE INDEX consumers_branch_phone_key ON consumers(branch_id, phone_number) WHERE NOT is_deleted AND phone_number IS NOT NULL;
CREATE UNIQUE INDEX consumers_branch_email_key ON consumers(branch_id, email_lower) WHERE NOT is_deleted AND email_lower IS NOT NULL;
CREATE INDEX consumers_branch_created ON consumers(branch_id, created_at, id) WHERE NOT is_deleted;
CREATE INDEX consumers_branch_name ON consumers(branch_id, name, id) WHERE NOT is_deleted;
CREATE INDEX consumers_branch_email ON consumers(branch_id, email NULLS FIRST, id) WHERE NOT is_deleted;
CREATE INDEX consumers_branch_phone ON consumers(branch_id, phone_number NULLS FIRST, id) WHERE NOT is_deleted;
CREATE INDEX consumers_branch_external_id ON consumers(branch_id, external_id NULLS FIRST, id) WHERE NOT is_deleted;

CREATE TABLE products (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid NOT NULL REFERENCES branches(id),
    name text COLLATE "C" NOT NULL,
    description text,
    product_type text NOT NULL,
    recurring_interval text,
    recurring_interval_count integer NOT NULL,
    is_active boolean NOT NULL,
    external_metadata jsonb NOT NULL,
    -- The primary price (default currency, else first active) for sorting by price.
    sort_price bigint,
    used_in_finalized_invoice boolean NOT NULL DEFAULT false,
    is_deleted boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE INDEX products_branch_created ON products(branch_id, created_at, id) WHERE NOT is_deleted;
CREATE INDEX products_branch_name ON products(branch_id, name, id) WHERE NOT is_deleted;
CREATE INDEX products_branch_price ON products(branch_id, sort_price NULLS FIRST, id) WHERE NOT is_deleted;

CREATE TABLE product_prices (
    id uuid PRIMARY KEY,
    product_id uuid NOT NULL REFERENCES products(id),
    currency text NOT NULL,
    amount bigint NOT NULL,
    -- INCLUSIVE, EXCLUSIVE or EXEMPT
    vat_mode text NOT NULL,
    is_active boolean NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE INDEX product_prices_product ON product_prices(product_id, created_at, id);
CREATE UNIQUE INDEX product_prices_active_currency_key ON product_prices(product_id, currency) WHERE is_active;

CREATE TABLE coupons (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid NOT NULL REFERENCES branches(id),
    name text COLLATE "C" NOT NULL,
    is_percentage boolean NOT NULL,
    -- A percentage or an amount, in thousandths.
    discount_value bigint NOT NULL,
    currency text,
    is_active boolean NOT NULL,
    used_in_finalized_invoice boolean NOT NULL DEFAULT false,
    redemptions bigint NOT NULL DEFAULT 0,
    is_deleted boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE INDEX coupons_branch_created ON coupons(branch_id, created_at, id) WHERE NOT is_deleted;
CREATE INDEX coupons_branch_updated ON coupons(branch_id, updated_at NULLS FIRST, id) WHERE NOT is_deleted;
CREATE INDEX coupons_branch_name ON coupons(branch_id, name, id) WHERE NOT is_deleted;
CREATE INDEX coupons_branch_value ON coupons(branch_id, discount_value, id) WHERE NOT is_deleted;

-- The outbox: `seq` orders events as written.
CREATE TABLE events (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id uuid NOT NULL UNIQUE,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid NOT NULL,
    event_type text NOT NULL,
    entity_type text NOT NULL,
    entity_id uuid NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX events_org_seq ON events(org_id, seq);
