-- Failed pay attempts per target (a payment link or an invoice) and client address: the
-- checkout's card-testing limit (billing_core::payment::limits), shared by every process.
CREATE TABLE pay_attempt_failures (
    id BLOB PRIMARY KEY,
    target TEXT NOT NULL,
    client TEXT NOT NULL,
    at INTEGER NOT NULL
);
CREATE INDEX pay_attempt_failures_key ON pay_attempt_failures(target, client, at);
