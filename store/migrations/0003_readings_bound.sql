-- Readings become partitioned by day of ts_ms (0005). The existing table
-- becomes the partition of everything before a boundary: the start of the
-- UTC day after tomorrow, later than any reading a running service stores
-- before 0005 is applied. This constraint lets 0005 attach the table
-- without scanning it; it is added NOT VALID here (a brief lock) and
-- validated by 0004 in its own transaction, which scans the table under a
-- lock that lets readings be stored meanwhile. Enforced on new readings at
-- once, it would refuse them from its boundary if the conversion stopped
-- before 0005: Migrate then removes it (see conversion in migrate.go).
DO $$
DECLARE
    boundary bigint := (extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC') + interval '2 days') * 1000)::bigint;
BEGIN
    EXECUTE format('ALTER TABLE readings ADD CONSTRAINT readings_before_partitioning CHECK (ts_ms < %s) NOT VALID', boundary);
END $$;
