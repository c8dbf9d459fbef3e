-- The offline sweep's partial index used to hold last_seen_ms, which every
-- reading moves, so a reading's device update could never be a HOT update:
-- it wrote a new entry in each of the four device indexes (a third of a
-- reading's WAL). The sweep now finds its candidates by seen_minute_ms, the
-- start of the minute of the last reading, which a device's readings move
-- at most once a minute; last_seen_ms is in no index any more. Free room in
-- each page keeps the new row versions on their page.
ALTER TABLE devices ADD COLUMN seen_minute_ms bigint;
UPDATE devices SET seen_minute_ms = last_seen_ms - last_seen_ms % 60000 WHERE last_seen_ms IS NOT NULL;
DROP INDEX devices_online_last_seen;
CREATE INDEX devices_online_seen_minute ON devices (seen_minute_ms)
    WHERE offline_since_ms IS NULL AND seen_minute_ms IS NOT NULL;
ALTER TABLE devices SET (fillfactor = 85);
