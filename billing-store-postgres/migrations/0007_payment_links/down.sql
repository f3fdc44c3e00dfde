DROP TABLE payment_link_items;
DROP TABLE payment_links;
