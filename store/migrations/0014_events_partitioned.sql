-- events becomes a table range-partitioned by occurred_at_ms, one partition
-- per UTC day created ahead by the store, so that retention drops whole
-- days instead of deleting rows. A populated table is attached unchanged,
-- with its rows and indexes, as the partition of everything before the
-- boundary of 0012: its constraint, validated by 0013a, spares the scan,
-- so this transaction holds its locks for milliseconds whatever the size.
-- An empty one (a new database) is simply replaced.
--
-- Keys: a partitioned table's unique keys must include occurred_at_ms, so
-- the key of an event is (id, occurred_at_ms), a unique index on each
-- partition (events_id_occurred). The pre-partitioning partition keeps its
-- primary key on id instead: building the new key over it would lock the
-- table for the length of the build. Until retention drops that partition
-- (and then validates events_id_occurred) the parent index is marked
-- invalid, which only means that an ON CONFLICT clause must name no target
-- (ON CONFLICT DO NOTHING); each partition's unique index still decides.
--
-- Indexes: events_dispatched served the per-row retention of 0001 and is
-- gone; events_undispatched stays, one small partial index per partition,
-- and the outbox's queries name the oldest day that can hold an
-- undispatched event (outbox_floor) so that older partitions are pruned.
DO $$
DECLARE
    boundary bigint;
    identity_seq text := pg_get_serial_sequence('events', 'seq');
BEGIN
    SELECT (regexp_match(pg_get_constraintdef(oid), '< \(?''?(-?\d+)'))[1]::bigint INTO boundary
    FROM pg_constraint WHERE conname = 'events_before_partitioning' AND conrelid = 'events'::regclass;

    ALTER TABLE events RENAME TO events_p_legacy;
    ALTER INDEX events_undispatched RENAME TO events_p_legacy_undispatched;
    ALTER INDEX events_farm_occurred RENAME TO events_p_legacy_farm_occurred;
    ALTER INDEX events_farm_type_occurred RENAME TO events_p_legacy_farm_type_occurred;
    DROP INDEX events_dispatched;
    ALTER TABLE events_p_legacy RENAME CONSTRAINT events_pkey TO events_p_legacy_pkey;
    ALTER TABLE events_p_legacy RENAME CONSTRAINT events_farm_fkey TO events_p_legacy_farm_fkey;

    -- seq continues from the identity's sequence, read without a scan.
    CREATE SEQUENCE events_seq;
    EXECUTE format('SELECT setval(''events_seq'', (SELECT last_value FROM %s) + 1, false)', identity_seq);
    ALTER TABLE events_p_legacy ALTER COLUMN seq DROP IDENTITY;
    ALTER TABLE events_p_legacy ALTER COLUMN seq SET DEFAULT nextval('events_seq');

    -- LIKE keeps every column, including those added since 0001.
    CREATE TABLE events (LIKE events_p_legacy INCLUDING DEFAULTS) PARTITION BY RANGE (occurred_at_ms);
    ALTER SEQUENCE events_seq OWNED BY events.seq;
    ALTER TABLE events ADD CONSTRAINT events_farm_fkey FOREIGN KEY (farm_id) REFERENCES farms (id) ON DELETE CASCADE;

    IF NOT EXISTS (SELECT 1 FROM events_p_legacy) THEN
        DROP TABLE events_p_legacy;
        CREATE UNIQUE INDEX events_id_occurred ON events (id, occurred_at_ms);
        CREATE INDEX events_undispatched ON events (occurred_at_ms, seq) WHERE dispatched_at_ms IS NULL;
        CREATE INDEX events_farm_occurred ON events (farm_id, occurred_at_ms, seq);
        CREATE INDEX events_farm_type_occurred ON events (farm_id, type, occurred_at_ms, seq);
    ELSE
        -- Indexes created ON ONLY the parent before the attach adopt the
        -- partition's identical ones instead of building them.
        CREATE INDEX events_undispatched ON ONLY events (occurred_at_ms, seq) WHERE dispatched_at_ms IS NULL;
        CREATE INDEX events_farm_occurred ON ONLY events (farm_id, occurred_at_ms, seq);
        CREATE INDEX events_farm_type_occurred ON ONLY events (farm_id, type, occurred_at_ms, seq);
        EXECUTE format('ALTER TABLE events ATTACH PARTITION events_p_legacy FOR VALUES FROM (MINVALUE) TO (%s)', boundary);
        -- After the attach, so that it is not built over the old rows.
        CREATE UNIQUE INDEX events_id_occurred ON ONLY events (id, occurred_at_ms);
    END IF;
END $$;

-- outbox_floor holds a time at or before the occurred_at_ms of every
-- undispatched event. The outbox's queries start there, so partitions
-- wholly before it are pruned. Retention raises it (never closer to now
-- than store.floorLag); storing a pending event older than
-- store.recentEvent lowers it in the event's transaction. It starts at the
-- lowest bigint: every partition, until the first retention run.
CREATE TABLE outbox_floor (
    one      boolean PRIMARY KEY DEFAULT true CHECK (one),
    floor_ms bigint NOT NULL
);
INSERT INTO outbox_floor (floor_ms) VALUES (-9223372036854775808);
