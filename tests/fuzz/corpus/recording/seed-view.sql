CREATE VIEW meta AS WITH RECURSIVE c(key, value) AS (SELECT 'clock_anchor_monotonic_ns', '1' UNION ALL SELECT key, value FROM c LIMIT 3) SELECT key, value FROM c;
