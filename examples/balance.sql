-- A read-only script: one account's balance, accounts drawn with a zipfian skew.
\set aid random_zipfian(1, 10000, 1.1)
SELECT abalance FROM accounts WHERE aid = :aid;
