-- Subscriptions, their items, and the invoice of each billed cycle. Money is INTEGER thousandths,
-- timestamps INTEGER microseconds, ids BLOB uuids (as everywhere in this schema).

CREATE TABLE subscriptions (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB NOT NULL,
    user_id BLOB NOT NULL,
    consumer_id BLOB NOT NULL,
    description TEXT,
    currency TEXT NOT NULL,
    status TEXT NOT NULL,
    recurring_interval TEXT NOT NULL,
    recurring_interval_count INTEGER NOT NULL,
    period_anchor INTEGER NOT NULL,
    current_cycle_number INTEGER NOT NULL,
    current_period_start INTEGER NOT NULL,
    current_period_end INTEGER NOT NULL,
    cancel_at_period_end INTEGER NOT NULL,
    until_cycle_number INTEGER,
    started_at INTEGER,
    ended_at INTEGER,
    latest_invoice_id BLOB,
    latest_invoice_paid INTEGER NOT NULL,
    renewal_failures INTEGER NOT NULL,
    notify_consumer INTEGER NOT NULL,
    exclude_coupons_if_installments INTEGER NOT NULL,
    payment_methods TEXT NOT NULL,
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
CREATE INDEX subscriptions_branch_created ON subscriptions(branch_id, created_at);
CREATE INDEX subscriptions_consumer ON subscriptions(consumer_id);

CREATE TABLE subscription_items (
    id BLOB PRIMARY KEY,
    subscription_id BLOB NOT NULL REFERENCES subscriptions(id),
    position INTEGER NOT NULL,
    product_id BLOB NOT NULL,
    price_id BLOB,
    quantity INTEGER NOT NULL,
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
CREATE INDEX subscription_items_subscription ON subscription_items(subscription_id, position);
CREATE INDEX subscription_items_product ON subscription_items(product_id);

-- One invoice per subscription and cycle: the unique key is what makes a renewal run twice, or
-- by two processes at once, issue one invoice.
CREATE TABLE subscription_cycles (
    subscription_id BLOB NOT NULL REFERENCES subscriptions(id),
    cycle_number INTEGER NOT NULL,
    invoice_id BLOB NOT NULL REFERENCES invoices(id)
);
CREATE UNIQUE INDEX subscription_cycles_key ON subscription_cycles(subscription_id, cycle_number);
