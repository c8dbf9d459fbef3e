-- See 0012. VALIDATE takes SHARE UPDATE EXCLUSIVE: events are stored while
-- it scans. In a transaction of its own, so that 0014's swap, tried again
-- while readers hold events, does not scan the table at each try. Added
-- after 0014 was released: on a database converted already, the bound is
-- on events_p_legacy or gone, and this does nothing.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_constraint
               WHERE conname = 'events_before_partitioning' AND conrelid = 'events'::regclass) THEN
        ALTER TABLE events VALIDATE CONSTRAINT events_before_partitioning;
    END IF;
END $$;
