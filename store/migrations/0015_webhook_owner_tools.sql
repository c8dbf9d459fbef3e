-- The owners' webhook tools.
--
-- Test deliveries: a webhook.test event is addressed to one webhook, so it
-- lives apart from the farm's events (the outbox and the events listing
-- never see it). Retention removes it with the attempts.
CREATE TABLE webhook_test_events (
    id             uuid PRIMARY KEY,
    webhook_id     uuid NOT NULL,
    farm_id        uuid NOT NULL,
    occurred_at_ms bigint NOT NULL,
    data           jsonb NOT NULL
);
CREATE INDEX webhook_test_events_occurred ON webhook_test_events (occurred_at_ms);

-- Health at a glance: the attempts that sent something (not the skipped
-- ones, whose error starts with "skipped: "), by webhook and time, with the
-- status and duration the summary reads, so that it is an index-only range
-- scan of one webhook's last day.
--
-- Migration 0018 replaces this index with delivery_attempts_outcome, built
-- without blocking writes, and drops it. So it is made on the parent only
-- (instant, and never valid): built here on every partition, in this
-- transaction, it held up every write of the delivery log while a
-- database that migrates past 0015 and 0018 in one run built an index it
-- then drops. A database that applied 0015 before 0018 existed has it
-- whole until 0018 drops it.
CREATE INDEX delivery_attempts_sent ON ONLY delivery_attempts (webhook_id, at_ms)
    INCLUDE (status_code, duration_ms) WHERE error NOT LIKE 'skipped: %';

-- The delivery rate the owner chooses: at most this many attempts a second
-- (NULL: unlimited).
ALTER TABLE webhooks ADD COLUMN max_per_second double precision;
