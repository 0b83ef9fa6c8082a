-- Server-side setup for the PostgreSQL examples: accounts and a history of
-- transfers. gloaddriver --backend postgres --spawn --spawn-init bank.sql runs it once
-- in the private database.
CREATE TABLE accounts (
    aid integer PRIMARY KEY,
    abalance integer NOT NULL DEFAULT 0
);
INSERT INTO accounts (aid) SELECT generate_series(1, 10000);
CREATE TABLE history (
    id bigserial PRIMARY KEY,
    aid integer NOT NULL,
    delta integer NOT NULL,
    at timestamptz NOT NULL DEFAULT now()
);
