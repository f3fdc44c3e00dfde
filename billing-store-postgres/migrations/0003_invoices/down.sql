DROP TABLE tokenized_cards;
DROP TABLE payments;
DROP TABLE invoice_items;
DROP TABLE invoices;
DROP TABLE invoice_counters;
