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
CREATE INDEX delivery_attempts_sent ON delivery_attempts (webhook_id, at_ms)
    INCLUDE (status_code, duration_ms) WHERE error NOT LIKE 'skipped: %';

-- The delivery rate the owner chooses: at most this many attempts a second
-- (NULL: unlimited).
ALTER TABLE webhooks ADD COLUMN max_per_second double precision;
