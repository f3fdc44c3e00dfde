DROP TABLE subscription_plan_changes;
