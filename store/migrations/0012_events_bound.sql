-- events becomes partitioned by day of occurred_at_ms (0014), as readings
-- did (0003 to 0005). The existing table becomes the partition of
-- everything before a boundary: the start of the UTC day after tomorrow,
-- or of the day after the latest event when one lies beyond it (an event
-- may carry a time of its own). The two partial indexes of 0001 together
-- hold every row, so the latest is read from them without a scan. This
-- constraint lets 0014 attach the table without scanning it; it is added
-- NOT VALID here (a brief lock) and validated by 0013a in its own
-- transaction, which scans the table under a lock that lets events be
-- stored meanwhile. Enforced on new events at once, it would refuse them
-- from its boundary if the conversion stopped before 0014: Migrate then
-- removes it (see conversion in migrate.go).
DO $$
DECLARE
    boundary bigint := (extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC') + interval '2 days') * 1000)::bigint;
    latest bigint;
BEGIN
    SELECT greatest((SELECT max(occurred_at_ms) FROM events WHERE dispatched_at_ms IS NULL),
                    (SELECT max(occurred_at_ms) FROM events WHERE dispatched_at_ms IS NOT NULL)) INTO latest;
    IF latest >= boundary THEN
        boundary := latest - latest % 86400000 + 86400000;
    END IF;
    EXECUTE format('ALTER TABLE events ADD CONSTRAINT events_before_partitioning CHECK (occurred_at_ms < %s) NOT VALID', boundary);
END $$;
