-- The webhook health summary's newest delivery and newest failure were
-- found by scanning delivery_attempts_sent (webhook, time) backwards for
-- the first row of the wanted outcome: for a webhook that never failed,
-- its whole 30 days of attempts, half a second for 3 million and past a
-- request's deadline beyond. This index puts the outcome (1 for a 2xx, 0
-- otherwise) before the time, so that each is the first entry of its own
-- range, and replaces delivery_attempts_sent: as many entries per attempt
-- as before.
--
-- As in migration 0017, this creates the index on the parent only, which is
-- instant and invalid until each partition has its own. Partitions made
-- from now on get theirs when they are made; furrow migrate builds those of
-- the existing partitions concurrently, attaches them, and then drops
-- delivery_attempts_sent (store.outcomeIndex).
CREATE INDEX IF NOT EXISTS delivery_attempts_outcome ON ONLY delivery_attempts
    (webhook_id, ((status_code BETWEEN 200 AND 299)::int), at_ms) INCLUDE (status_code, duration_ms)
    WHERE error NOT LIKE 'skipped: %';
