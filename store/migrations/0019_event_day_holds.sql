-- Holds keep an event day partition past retention while a delivery chain
-- started for one of its events may still read it (store/eventparts.go):
-- day_ms is the start of a UTC day of events, kept until until_ms at least.
-- undispatched marks a day that retention kept for its undispatched events:
-- the first run that finds them dispatched holds it from then on. A
-- redelivery holds the days of the events it starts chains for; expired
-- holds are removed by retention, so the table holds a few rows.
CREATE TABLE event_day_holds (
    day_ms       bigint PRIMARY KEY,
    until_ms     bigint NOT NULL,
    undispatched boolean NOT NULL DEFAULT false
);
