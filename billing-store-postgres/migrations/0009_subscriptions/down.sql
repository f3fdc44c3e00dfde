DROP TABLE subscription_cycles;
DROP TABLE subscription_items;
DROP TABLE subscriptions;
