-- Idempotency keys of POST /api/metric-values (the Idempotency-Key header):
-- the same key from the same device within 24 h answers the original
-- reading and stores nothing. A key is written in the transaction of its
-- reading, so it holds across instances and restarts. fingerprint is the
-- SHA-256 of the request body, to refuse a key reused for another body.
-- ts_ms is the reading's timestamp; keys older than 24 h are overwritten
-- on reuse and removed as the device sends more.
CREATE TABLE idempotency_keys (
    device_id   uuid NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    key         text NOT NULL,
    fingerprint bytea NOT NULL,
    metric_id   integer NOT NULL,
    value       text NOT NULL,
    ts_ms       bigint NOT NULL,
    PRIMARY KEY (device_id, key)
);
CREATE INDEX idempotency_keys_device_ts ON idempotency_keys (device_id, ts_ms);
