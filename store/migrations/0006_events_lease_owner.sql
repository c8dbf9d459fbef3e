-- lease_owner names the dispatcher whose lease an undispatched event is
-- under, so that only that dispatcher renews or gives back the lease: once
-- it has expired and another dispatcher has claimed the event, the first
-- one's late renewal or release changes nothing.
ALTER TABLE events ADD COLUMN lease_owner uuid;
