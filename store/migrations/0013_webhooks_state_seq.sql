-- The webhook's workflow announces each change of a webhook's enabled state
-- as a lifecycle event (webhook.disabled, webhook.enabled), exactly once.
-- state_seq numbers those changes: the workflow writes change n only while
-- state_seq < n, in the transaction that stores the event, whose id derives
-- from (webhook id, n); so a retried write stores nothing twice.
-- state_changed_at_ms and state_cause say when and why the last change was
-- made (cause: failed_chains, api or signal); NULL before the first.
-- A constant default adds the columns without rewriting the table.
ALTER TABLE webhooks
	ADD COLUMN state_seq bigint NOT NULL DEFAULT 0,
	ADD COLUMN state_changed_at_ms bigint,
	ADD COLUMN state_cause text;
