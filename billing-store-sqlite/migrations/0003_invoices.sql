-- Invoices, their items and payments; per-organization invoice numbers; tokenized cards.
-- Money is INTEGER thousandths, timestamps INTEGER microseconds, ids BLOB uuids.

CREATE TABLE invoice_counters (
    org_id BLOB PRIMARY KEY REFERENCES organizations(id),
    last_number INTEGER NOT NULL
);

CREATE TABLE invoices (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB NOT NULL,
    user_id BLOB NOT NULL,
    consumer_id BLOB NOT NULL,
    org_invoice_number INTEGER NOT NULL,
    description TEXT,
    currency TEXT NOT NULL,
    status TEXT NOT NULL,
    payment_methods TEXT NOT NULL,
    coupon_ids TEXT NOT NULL,
    exclude_coupons_if_installments INTEGER NOT NULL,
    notify_consumer INTEGER NOT NULL,
    scheduled_on INTEGER NOT NULL,
    original_amount INTEGER NOT NULL,
    item_level_discounted_amount INTEGER NOT NULL,
    total_vat_amount INTEGER NOT NULL,
    total_price_excluding_vat INTEGER NOT NULL,
    total_amount INTEGER NOT NULL,
    paid_amount INTEGER NOT NULL,
    coupons TEXT NOT NULL,
    installments INTEGER,
    payment_link_id BLOB,
    subscription_id BLOB,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE UNIQUE INDEX invoices_org_number_key ON invoices(org_id, org_invoice_number);
CREATE INDEX invoices_branch_created ON invoices(branch_id, created_at);
CREATE INDEX invoices_consumer ON invoices(consumer_id);

CREATE TABLE invoice_items (
    id BLOB PRIMARY KEY,
    invoice_id BLOB NOT NULL REFERENCES invoices(id),
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
    created_at INTEGER NOT NULL
);
CREATE INDEX invoice_items_invoice ON invoice_items(invoice_id, position);

CREATE TABLE payments (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    branch_id BLOB NOT NULL,
    invoice_id BLOB NOT NULL REFERENCES invoices(id),
    number INTEGER NOT NULL,
    amount INTEGER NOT NULL,
    currency TEXT NOT NULL,
    payment_type TEXT NOT NULL,
    method TEXT,
    status TEXT NOT NULL,
    scheduled_on INTEGER NOT NULL,
    payed_at INTEGER,
    refunded_at INTEGER,
    refund_reason TEXT,
    refund_note TEXT,
    note TEXT,
    transaction_id BLOB,
    latest_pgw_message TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER
);
CREATE INDEX payments_invoice ON payments(invoice_id, number);
CREATE INDEX payments_branch_created ON payments(branch_id, created_at);

CREATE TABLE tokenized_cards (
    id BLOB PRIMARY KEY,
    org_id BLOB NOT NULL REFERENCES organizations(id),
    consumer_id BLOB NOT NULL,
    network TEXT NOT NULL,
    last_four TEXT NOT NULL,
    expiry_month INTEGER NOT NULL,
    expiry_year INTEGER NOT NULL,
    gateway_token TEXT NOT NULL,
    is_active INTEGER NOT NULL,
    consent INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX tokenized_cards_consumer ON tokenized_cards(consumer_id, created_at);
