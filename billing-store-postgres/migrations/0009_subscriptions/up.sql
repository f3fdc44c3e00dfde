-- Subscriptions, their items, and the invoice of each billed cycle. Money is bigint thousandths (as
-- everywhere in this schema).

CREATE TABLE subscriptions (
    id uuid PRIMARY KEY,
    org_id uuid NOT NULL REFERENCES organizations(id),
    branch_id uuid NOT NULL,
    user_id uuid NOT NULL,
    consumer_id uuid NOT NULL,
    description text,
    currency text NOT NULL,
    status text COLLATE "C" NOT NULL,
    recurring_interval text NOT NULL,
    recurring_interval_count bigint NOT NULL,
    period_anchor timestamptz NOT NULL,
    current_cycle_number bigint NOT NULL,
    current_period_start timestamptz NOT NULL,
    current_period_end timestamptz NOT NULL,
    cancel_at_period_end boolean NOT NULL,
    until_cycle_number bigint,
    started_at timestamptz,
    ended_at timestamptz,
    latest_invoice_id uuid,
    latest_invoice_paid boolean NOT NULL,
    renewal_failures bigint NOT NULL,
    -- notify_consumer and exclude_coupons_if_installments (one column: diesel takes 32 a table).
    options jsonb NOT NULL,
    payment_methods jsonb NOT NULL,
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
CREATE INDEX subscriptions_branch_created ON subscriptions(branch_id, created_at);
CREATE INDEX subscriptions_consumer ON subscriptions(consumer_id);

CREATE TABLE subscription_items (
    id uuid PRIMARY KEY,
    subscription_id uuid NOT NULL REFERENCES subscriptions(id),
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
    created_at timestamptz NOT NULL,
    updated_at timestamptz
);
CREATE INDEX subscription_items_subscription ON subscription_items(subscription_id, position);
CREATE INDEX subscription_items_product ON subscription_items(product_id);

-- One invoice per subscription and cycle: the unique key is what makes a renewal run twice, or
-- by two processes at once, issue one invoice.
CREATE TABLE subscription_cycles (
    subscription_id uuid NOT NULL REFERENCES subscriptions(id),
    cycle_number bigint NOT NULL,
    invoice_id uuid NOT NULL REFERENCES invoices(id)
);
CREATE UNIQUE INDEX subscription_cycles_key ON subscription_cycles(subscription_id, cycle_number);
