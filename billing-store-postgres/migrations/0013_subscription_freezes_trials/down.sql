DROP TABLE subscription_trials;
DROP TABLE subscription_freezes;
