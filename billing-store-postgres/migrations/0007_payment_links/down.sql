DROP TABLE payment_link_attempts;
DROP TABLE payment_link_items;
DROP TABLE payment_links;
