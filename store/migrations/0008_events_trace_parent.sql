-- trace_parent is the W3C traceparent of the request that stored the event
-- when tracing is on (NULL otherwise), so that the dispatcher's workflow
-- start continues the request's trace.
ALTER TABLE events ADD COLUMN trace_parent text;
