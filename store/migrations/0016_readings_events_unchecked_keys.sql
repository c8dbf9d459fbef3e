-- The foreign keys of readings (to devices) and of events (to farms) ran a
-- trigger and a row-lock query for every row stored: about 15% of
-- PostgreSQL's CPU per reading at full speed. Furrow never deletes a farm
-- or a device, and its writes keep the references instead: a reading and
-- its event are stored only for a device the same statement has just
-- updated, under that device's row lock (store.storeReadingsSQL), and any
-- other event only under a share lock of its farm's row
-- (store.insertEventsSQL). The constraints' ON DELETE CASCADE goes with
-- them: whoever deletes a farm or a device by hand deletes its readings and
-- events too.
ALTER TABLE readings DROP CONSTRAINT IF EXISTS readings_device_fkey;
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_farm_fkey;
-- The partitions of rows from before partitioning kept their own copies.
ALTER TABLE IF EXISTS readings_p_legacy DROP CONSTRAINT IF EXISTS readings_p_legacy_device_fkey;
ALTER TABLE IF EXISTS events_p_legacy DROP CONSTRAINT IF EXISTS events_p_legacy_farm_fkey;
