-- Reads that order by a column and then by id, for a stable order, sorted the rows they found
-- in a temporary b-tree on every call, because their index stopped before the id (SQLite's
-- plan: "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY"). A renewal makes three of them: its
-- consumer's latest card, its subscription's freezes, its invoice's payments. With the id in
-- the index, each reads its rows in order.
CREATE INDEX tokenized_cards_consumer_created_id ON tokenized_cards(consumer_id, created_at, id);
DROP INDEX tokenized_cards_consumer;
CREATE INDEX payments_invoice_number_id ON payments(invoice_id, number, id);
DROP INDEX payments_invoice;
CREATE INDEX subscription_freezes_subscription_starts_id ON subscription_freezes(subscription_id, starts_at, id);
DROP INDEX subscription_freezes_subscription;
