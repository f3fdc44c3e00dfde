-- Payment links, their items and their payments in flight. Money is bigint thousandths (as everywhere in this schema).

CREATE TABLE payment_links (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid NOT NULL,
    user_id uuid NOT NULL,
    short_id text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    description text,
    currency text NOT NULL,
    status text COLLATE "C" NOT NULL,
    deactivate_message text,
    consumer_id uuid,
    contact_information_type text NOT NULL,
    max_number_of_payments bigint,
    payments_count bigint NOT NULL,
    amount_collected bigint NOT NULL,
    valid_until timestamptz,
    -- confirmation_message, trial_period_days, custom_fields and the redirect URLs.
    checkout jsonb NOT NULL,
    custom_metadata jsonb NOT NULL,
    payment_methods jsonb NOT NULL,
    recurring_interval text,
    recurring_interval_count bigint,
    coupon_ids jsonb NOT NULL,
    coupons jsonb NOT NULL,
    original_amount bigint NOT NULL,
    item_level_discounted_amount bigint NOT NULL,
    total_vat_amount bigint NOT NULL,
    total_price_excluding_vat bigint NOT NULL,
    amount bigint NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE UNIQUE INDEX payment_links_short_id_key ON payment_links(short_id);
CREATE INDEX payment_links_branch_created ON payment_links(branch_id, created_at);
CREATE INDEX payment_links_consumer ON payment_links(consumer_id) WHERE consumer_id IS NOT NULL;

CREATE TABLE payment_link_items (
    id uuid PRIMARY KEY,
    link_id uuid NOT NULL REFERENCES payment_links(id),
    position integer NOT NULL,
    product_id uuid NOT NULL,
    price_id uuid,
    quantity bigint NOT NULL,
    allow_custom_quantity boolean NOT NULL,
    min_quantity bigint,
    max_quantity bigint,
    unit_price bigint NOT NULL,
    vat_mode text NOT NULL,
    one_time boolean NOT NULL,
    coupon_ids jsonb NOT NULL,
    original_amount bigint NOT NULL,
    discounted_amount bigint NOT NULL,
    coupons jsonb NOT NULL,
    vat_amount bigint NOT NULL,
    excluding_vat bigint NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE INDEX payment_link_items_link ON payment_link_items(link_id, position);
CREATE INDEX payment_link_items_product ON payment_link_items(product_id);

-- A payment of a link in flight: from when its charge is recorded until its outcome is; one per
-- link and payer (session).
CREATE TABLE payment_link_attempts (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid NOT NULL,
    link_id uuid NOT NULL REFERENCES payment_links(id),
    session_key text NOT NULL,
    amount bigint NOT NULL,
    currency text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX payment_link_attempts_session_key ON payment_link_attempts(link_id, session_key);
