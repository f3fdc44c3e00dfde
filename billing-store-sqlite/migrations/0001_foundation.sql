-- Foundation schema. Conventions (shared with billing-store-postgres):
--   ids are UUIDs (v7, time-ordered) stored as 16-byte BLOBs;
--   timestamps are INTEGER microseconds since the UNIX epoch, UTC;
--   money is INTEGER thousandths of the currency unit (billing_core::money::STORED_SCALE), beside
--   a currency column where the currency varies;
--   free-form objects are JSON text;
--   every list query has a composite index on (scope, sort key, id).

CREATE TABLE organizations (
    id BLOB PRIMARY KEY,
    name TEXT NOT NULL,
    name_en TEXT,
    sandbox INTEGER NOT NULL,
    settings TEXT NOT NULL,
    clock_offset_us INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);

CREATE TABLE branches (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    name TEXT NOT NULL,
    -- lower(trim(name)): live branch names are unique per organization, case-insensitively.
    name_key TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    deleted_at INTEGER
);
CREATE UNIQUE INDEX branches_org_name_key ON branches(org_id, name_key) WHERE deleted_at IS NULL;
CREATE INDEX branches_org_created ON branches(org_id, created_at, id);

CREATE TABLE users (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    email TEXT NOT NULL,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    en_first_name TEXT,
    en_last_name TEXT,
    role TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX users_org_role_created ON users(org_id, role, created_at, id);

CREATE TABLE user_branches (
    user_id BLOB NOT NULL REFERENCES users(id),
    branch_id BLOB NOT NULL REFERENCES branches(id),
    position INTEGER NOT NULL,
    PRIMARY KEY (user_id, branch_id)
) WITHOUT ROWID;
CREATE INDEX user_branches_branch ON user_branches(branch_id);

CREATE TABLE api_keys (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    user_id BLOB NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    -- JSON array of branch ids (strings), in the order given.
    branch_ids TEXT NOT NULL,
    default_branch_id BLOB NOT NULL REFERENCES branches(id),
    is_all_branches INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE UNIQUE INDEX api_keys_key_key ON api_keys(key);
CREATE INDEX api_keys_default_branch ON api_keys(default_branch_id) WHERE revoked_at IS NULL;

CREATE TABLE invitations (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    email TEXT NOT NULL,
    role TEXT NOT NULL,
    branch_ids TEXT NOT NULL,
    created_by BLOB NOT NULL,
    language TEXT NOT NULL,
    expire_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX invitations_org_created ON invitations(org_id, created_at, id);

CREATE TABLE notifications (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB,
    channel TEXT NOT NULL,
    recipient TEXT NOT NULL,
    template TEXT NOT NULL,
    language TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    sent_at INTEGER
);
CREATE INDEX notifications_org_created ON notifications(org_id, created_at, id);
CREATE INDEX notifications_unsent ON notifications(created_at, id) WHERE sent_at IS NULL;

CREATE TABLE consumers (
    -- A stable integer key for the search index (VACUUM keeps INTEGER PRIMARY KEY values, not
    -- implicit rowids); the public id is `id`.
    seq INTEGER PRIMARY KEY,
    id BLOB NOT NULL UNIQUE,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB NOT NULL REFERENCES branches(id),
    name TEXT NOT NULL,
    phone_number TEXT,
    email TEXT,
    email_lower TEXT,
    external_id TEXT,
    iban TEXT,
    alias TEXT,
    comment TEXT,
    preferred_language TEXT NOT NULL,
    communication_methods TEXT NOT NULL,
    consumer_type TEXT NOT NULL,
    address TEXT,
    vat_number TEXT,
    commercial_registration TEXT,
    external_metadata TEXT NOT NULL,
    is_deleted INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE UNIQUE INDEX consumers_branch_phone_key ON consumers(branch_id, phone_number) WHERE is_deleted = 0 AND phone_number IS NOT NULL;
CREATE UNIQUE INDEX consumers_branch_email_key ON consumers(branch_id, email_lower) WHERE is_deleted = 0 AND email_lower IS NOT NULL;
CREATE INDEX consumers_branch_created ON consumers(branch_id, created_at, id) WHERE is_deleted = 0;
CREATE INDEX consumers_branch_name ON consumers(branch_id, name, id) WHERE is_deleted = 0;
CREATE INDEX consumers_branch_email ON consumers(branch_id, email, id) WHERE is_deleted = 0;
CREATE INDEX consumers_branch_phone ON consumers(branch_id, phone_number, id) WHERE is_deleted = 0;
CREATE INDEX consumers_branch_external_id ON consumers(branch_id, external_id, id) WHERE is_deleted = 0;

CREATE TABLE products (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB NOT NULL REFERENCES branches(id),
    name TEXT NOT NULL,
    description TEXT,
    product_type TEXT NOT NULL,
    recurring_interval TEXT,
    recurring_interval_count INTEGER NOT NULL,
    is_active INTEGER NOT NULL,
    external_metadata TEXT NOT NULL,
    -- The primary price (default currency, else first active) for sorting by price.
    sort_price INTEGER,
    used_in_finalized_invoice INTEGER NOT NULL DEFAULT 0,
    is_deleted INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE INDEX products_branch_created ON products(branch_id, created_at, id) WHERE is_deleted = 0;
CREATE INDEX products_branch_name ON products(branch_id, name, id) WHERE is_deleted = 0;
CREATE INDEX products_branch_price ON products(branch_id, sort_price, id) WHERE is_deleted = 0;

CREATE TABLE product_prices (
    id BLOB PRIMARY KEY,
    product_id BLOB NOT NULL REFERENCES products(id),
    currency TEXT NOT NULL,
    amount INTEGER NOT NULL,
    -- INCLUSIVE, EXCLUSIVE or EXEMPT
    vat_mode TEXT NOT NULL,
    is_active INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE INDEX product_prices_product ON product_prices(product_id, created_at, id);
CREATE UNIQUE INDEX product_prices_active_currency_key ON product_prices(product_id, currency) WHERE is_active = 1;

CREATE TABLE coupons (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB NOT NULL REFERENCES branches(id),
    name TEXT NOT NULL,
    is_percentage INTEGER NOT NULL,
    -- A percentage or an amount, in thousandths.
    discount_value INTEGER NOT NULL,
    currency TEXT,
    is_active INTEGER NOT NULL,
    used_in_finalized_invoice INTEGER NOT NULL DEFAULT 0,
    redemptions INTEGER NOT NULL DEFAULT 0,
    is_deleted INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE INDEX coupons_branch_created ON coupons(branch_id, created_at, id) WHERE is_deleted = 0;
CREATE INDEX coupons_branch_updated ON coupons(branch_id, updated_at, id) WHERE is_deleted = 0;
CREATE INDEX coupons_branch_name ON coupons(branch_id, name, id) WHERE is_deleted = 0;
CREATE INDEX coupons_branch_value ON coupons(branch_id, discount_value, id) WHERE is_deleted = 0;

-- The outbox: `seq` orders events as written.
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id BLOB NOT NULL UNIQUE,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB NOT NULL,
    event_type TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    entity_id BLOB NOT NULL,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX events_org_seq ON events(org_id, seq);
