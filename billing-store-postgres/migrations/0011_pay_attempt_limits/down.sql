DROP TABLE pay_attempt_failures;
