-- A pgbench-style transaction: move money on one account, read it back, log it.
\set aid random(1, 10000)
\set delta random(-5000, 5000)
BEGIN;
UPDATE accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM accounts WHERE aid = :aid;
INSERT INTO history (aid, delta) VALUES (:aid, :delta);
END;
