-- readings becomes a table range-partitioned by ts_ms, one partition per
-- UTC day created ahead by the store (as for delivery_attempts), so that a
-- readings retention drops whole days. The former table, its rows, indexes
-- and foreign key are attached unchanged as the partition of everything
-- before the boundary of 0003; its validated constraint spares the scan, so
-- this transaction holds its locks for milliseconds whatever the size.
-- A partitioned table's unique keys must include ts_ms, so seq (unique by
-- its sequence) is no longer a primary key; readings are read by the
-- (ts_ms, seq) indexes.
DO $$
DECLARE
    boundary bigint;
BEGIN
    SELECT (regexp_match(pg_get_constraintdef(oid), '< \(?''?(-?\d+)'))[1]::bigint INTO boundary
    FROM pg_constraint WHERE conname = 'readings_before_partitioning' AND conrelid = 'readings'::regclass;

    ALTER TABLE readings RENAME TO readings_p_legacy;
    ALTER INDEX readings_farm_ts RENAME TO readings_p_legacy_farm_ts;
    ALTER INDEX readings_device_metric_ts RENAME TO readings_p_legacy_device_metric_ts;
    ALTER TABLE readings_p_legacy RENAME CONSTRAINT readings_device_fkey TO readings_p_legacy_device_fkey;

    CREATE SEQUENCE readings_seq;
    PERFORM setval('readings_seq', (SELECT COALESCE(max(seq), 0) + 1 FROM readings_p_legacy), false);
    ALTER TABLE readings_p_legacy ALTER COLUMN seq DROP IDENTITY;
    ALTER TABLE readings_p_legacy ALTER COLUMN seq SET DEFAULT nextval('readings_seq');

    CREATE TABLE readings (
        seq       bigint NOT NULL DEFAULT nextval('readings_seq'),
        device_id uuid NOT NULL,
        farm_id   uuid NOT NULL,
        metric_id integer NOT NULL,
        value     text NOT NULL,
        ts_ms     bigint NOT NULL,
        CONSTRAINT readings_device_fkey FOREIGN KEY (device_id) REFERENCES devices (id) ON DELETE CASCADE
    ) PARTITION BY RANGE (ts_ms);
    ALTER SEQUENCE readings_seq OWNED BY readings.seq;
    -- Newest first is a backward scan of these, partition by partition.
    CREATE INDEX readings_farm_ts ON ONLY readings (farm_id, ts_ms, seq);
    CREATE INDEX readings_device_metric_ts ON ONLY readings (device_id, metric_id, ts_ms, seq);

    EXECUTE format('ALTER TABLE readings ATTACH PARTITION readings_p_legacy FOR VALUES FROM (MINVALUE) TO (%s)', boundary);
    ALTER INDEX readings_farm_ts ATTACH PARTITION readings_p_legacy_farm_ts;
    ALTER INDEX readings_device_metric_ts ATTACH PARTITION readings_p_legacy_device_metric_ts;
END $$;
