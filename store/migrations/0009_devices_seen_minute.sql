-- The offline sweep's partial index used to hold last_seen_ms, which every
-- reading moves, so a reading's device update could never be a HOT update:
-- it wrote a new entry in each of the four device indexes (a third of a
-- reading's WAL). The sweep now finds its candidates by seen_minute_ms, the
-- start of the minute of the last reading, which a device's readings move
-- at most once a minute; last_seen_ms is in no index any more. Free room in
-- each page keeps the new row versions on their page.
-- The column is added empty and its index built while it is: this
-- transaction locks devices against every reading's device update, so it
-- must stay brief whatever the number of devices. Migrate then fills the
-- column from last_seen_ms in short transactions (fillSeenMinute).
ALTER TABLE devices ADD COLUMN seen_minute_ms bigint;
DROP INDEX devices_online_last_seen;
CREATE INDEX devices_online_seen_minute ON devices (seen_minute_ms)
    WHERE offline_since_ms IS NULL AND seen_minute_ms IS NOT NULL;
ALTER TABLE devices SET (fillfactor = 85);
