-- Invoices, their items and payments; per-organization invoice numbers; tokenized cards.
-- Money is bigint thousandths (as everywhere in this schema).

CREATE TABLE invoice_counters (
    org_id uuid PRIMARY KEY REFERENCES organizations(id),
    last_number bigint NOT NULL
);

CREATE TABLE invoices (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid NOT NULL,
    user_id uuid NOT NULL,
    consumer_id uuid NOT NULL,
    org_invoice_number bigint NOT NULL,
    description text,
    currency text NOT NULL,
    status text COLLATE "C" NOT NULL,
    payment_methods jsonb NOT NULL,
    coupon_ids jsonb NOT NULL,
    exclude_coupons_if_installments boolean NOT NULL,
    notify_consumer boolean NOT NULL,
    scheduled_on timestamptz NOT NULL,
    original_amount bigint NOT NULL,
    item_level_discounted_amount bigint NOT NULL,
    total_vat_amount bigint NOT NULL,
    total_price_excluding_vat bigint NOT NULL,
    total_amount bigint NOT NULL,
    paid_amount bigint NOT NULL,
    coupons jsonb NOT NULL,
    installments integer,
    payment_link_id uuid,
    subscription_id uuid,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE UNIQUE INDEX invoices_org_number_key ON invoices(org_id, org_invoice_number);
CREATE INDEX invoices_branch_created ON invoices(branch_id, created_at);
CREATE INDEX invoices_consumer ON invoices(consumer_id);

CREATE TABLE invoice_items (
    id uuid PRIMARY KEY,
    invoice_id uuid NOT NULL REFERENCES invoices(id),
    position integer NOT NULL,
    product_id uuid NOT NULL,
    price_id uuid,
    quantity bigint NOT NULL,
    unit_price bigint NOT NULL,
    vat_mode text NOT NULL,
    one_time boolean NOT NULL,
    coupon_ids jsonb NOT NULL,
    original_amount bigint NOT NULL,
    discounted_amount bigint NOT NULL,
    coupons jsonb NOT NULL,
    vat_amount bigint NOT NULL,
    excluding_vat bigint NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX invoice_items_invoice ON invoice_items(invoice_id, position);

CREATE TABLE payments (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid NOT NULL,
    invoice_id uuid NOT NULL REFERENCES invoices(id),
    number integer NOT NULL,
    amount bigint NOT NULL,
    currency text NOT NULL,
    payment_type text NOT NULL,
    method text,
    status text NOT NULL,
    scheduled_on timestamptz NOT NULL,
    payed_at timestamptz,
    refunded_at timestamptz,
    refund_reason text,
    refund_note text,
    note text,
    transaction_id uuid,
    latest_pgw_message text,
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE INDEX payments_invoice ON payments(invoice_id, number);
CREATE INDEX payments_branch_created ON payments(branch_id, created_at);

CREATE TABLE tokenized_cards (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    consumer_id uuid NOT NULL,
    network text NOT NULL,
    last_four text NOT NULL,
    expiry_month integer NOT NULL,
    expiry_year integer NOT NULL,
    gateway_token text NOT NULL,
    is_active boolean NOT NULL,
    consent boolean NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX tokenized_cards_consumer ON tokenized_cards(consumer_id, created_at);
