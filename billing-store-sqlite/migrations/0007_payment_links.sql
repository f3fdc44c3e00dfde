-- Payment links, their items and their payments in flight. Money is INTEGER thousandths, timestamps INTEGER
-- microseconds, ids BLOB uuids (as everywhere in this schema).

CREATE TABLE payment_links (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB NOT NULL,
    user_id BLOB NOT NULL,
    short_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    currency TEXT NOT NULL,
    status TEXT NOT NULL,
    deactivate_message TEXT,
    consumer_id BLOB,
    contact_information_type TEXT NOT NULL,
    max_number_of_payments INTEGER,
    payments_count INTEGER NOT NULL,
    amount_collected INTEGER NOT NULL,
    valid_until INTEGER,
    -- confirmation_message, trial_period_days, custom_fields and the redirect URLs (JSON).
    checkout TEXT NOT NULL,
    custom_metadata TEXT NOT NULL,
    payment_methods TEXT NOT NULL,
    recurring_interval TEXT,
    recurring_interval_count INTEGER,
    coupon_ids TEXT NOT NULL,
    coupons TEXT NOT NULL,
    original_amount INTEGER NOT NULL,
    item_level_discounted_amount INTEGER NOT NULL,
    total_vat_amount INTEGER NOT NULL,
    total_price_excluding_vat INTEGER NOT NULL,
    amount INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE UNIQUE INDEX payment_links_short_id_key ON payment_links(short_id);
CREATE INDEX payment_links_branch_created ON payment_links(branch_id, created_at);
CREATE INDEX payment_links_consumer ON payment_links(consumer_id) WHERE consumer_id IS NOT NULL;

CREATE TABLE payment_link_items (
    id BLOB PRIMARY KEY,
    link_id BLOB NOT NULL REFERENCES payment_links(id),
    position INTEGER NOT NULL,
    product_id BLOB NOT NULL,
    price_id BLOB,
    quantity INTEGER NOT NULL,
    allow_custom_quantity INTEGER NOT NULL,
    min_quantity INTEGER,
    max_quantity INTEGER,
    unit_price INTEGER NOT NULL,
    vat_mode TEXT NOT NULL,
    one_time INTEGER NOT NULL,
    coupon_ids TEXT NOT NULL,
    original_amount INTEGER NOT NULL,
    discounted_amount INTEGER NOT NULL,
    coupons TEXT NOT NULL,
    vat_amount INTEGER NOT NULL,
    excluding_vat INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE INDEX payment_link_items_link ON payment_link_items(link_id, position);
CREATE INDEX payment_link_items_product ON payment_link_items(product_id);

-- A payment of a link in flight: from when its charge is recorded until its outcome is; one per
-- link and payer (session).
CREATE TABLE payment_link_attempts (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB NOT NULL,
    link_id BLOB NOT NULL REFERENCES payment_links(id),
    session_key TEXT NOT NULL,
    amount INTEGER NOT NULL,
    currency TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX payment_link_attempts_session_key ON payment_link_attempts(link_id, session_key);
