-- A transaction of CPU in the backend, for --find-max (docs/find-max.md).
\set n random(20000, 30000)
SELECT count(*) FROM generate_series(1, :n);
