-- Times are epoch milliseconds (bigint), the unit the API speaks, taken from
-- the service's clock rather than the database's.

CREATE TABLE users (
    id            uuid PRIMARY KEY,
    email         text NOT NULL,
    token_hash    bytea NOT NULL,
    created_at_ms bigint NOT NULL,
    CONSTRAINT users_email_key UNIQUE (email),
    CONSTRAINT users_token_hash_key UNIQUE (token_hash)
);

CREATE TABLE farms (
    id            uuid PRIMARY KEY,
    name          text NOT NULL,
    created_at_ms bigint NOT NULL
);

CREATE TABLE farm_members (
    farm_id uuid NOT NULL,
    user_id uuid NOT NULL,
    role    smallint NOT NULL CHECK (role BETWEEN 1 AND 4),
    CONSTRAINT farm_members_pkey PRIMARY KEY (farm_id, user_id),
    CONSTRAINT farm_members_farm_fkey FOREIGN KEY (farm_id) REFERENCES farms (id) ON DELETE CASCADE,
    CONSTRAINT farm_members_user_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);
CREATE INDEX farm_members_user ON farm_members (user_id);

CREATE TABLE devices (
    id               uuid PRIMARY KEY,
    farm_id          uuid NOT NULL,
    name             text NOT NULL,
    key_hash         bytea NOT NULL,
    last_seen_ms     bigint,
    offline_since_ms bigint,
    created_at_ms    bigint NOT NULL,
    CONSTRAINT devices_key_hash_key UNIQUE (key_hash),
    CONSTRAINT devices_farm_fkey FOREIGN KEY (farm_id) REFERENCES farms (id) ON DELETE CASCADE
);
CREATE INDEX devices_farm_name ON devices (farm_id, name, id);
-- The offline sweep reads only devices that report and are not yet offline,
-- oldest first, so one bounded index scan finds them among millions.
CREATE INDEX devices_online_last_seen ON devices (last_seen_ms)
    WHERE offline_since_ms IS NULL AND last_seen_ms IS NOT NULL;

CREATE TABLE readings (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    device_id uuid NOT NULL,
    farm_id   uuid NOT NULL,
    metric_id integer NOT NULL,
    value     text NOT NULL,
    ts_ms     bigint NOT NULL,
    CONSTRAINT readings_device_fkey FOREIGN KEY (device_id) REFERENCES devices (id) ON DELETE CASCADE
);
-- Newest first is a backward scan of these.
CREATE INDEX readings_farm_ts ON readings (farm_id, ts_ms, seq);
CREATE INDEX readings_device_metric_ts ON readings (device_id, metric_id, ts_ms, seq);

-- events is the outbox: a row is written in the transaction that makes the
-- event true, and the dispatcher leases and marks it.
CREATE TABLE events (
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    id               uuid PRIMARY KEY,
    type             text NOT NULL,
    farm_id          uuid NOT NULL,
    occurred_at_ms   bigint NOT NULL,
    data             jsonb NOT NULL,
    dispatched_at_ms bigint,
    lease_until_ms   bigint,
    CONSTRAINT events_farm_fkey FOREIGN KEY (farm_id) REFERENCES farms (id) ON DELETE CASCADE
);
CREATE INDEX events_undispatched ON events (occurred_at_ms, seq) WHERE dispatched_at_ms IS NULL;
CREATE INDEX events_dispatched ON events (occurred_at_ms) WHERE dispatched_at_ms IS NOT NULL;
CREATE INDEX events_farm_occurred ON events (farm_id, occurred_at_ms, seq);
CREATE INDEX events_farm_type_occurred ON events (farm_id, type, occurred_at_ms, seq);

CREATE TABLE webhooks (
    seq                  bigint GENERATED ALWAYS AS IDENTITY,
    id                   uuid PRIMARY KEY,
    farm_id              uuid NOT NULL,
    url                  text NOT NULL,
    secret               text NOT NULL,
    enabled              boolean NOT NULL,
    consecutive_failures integer NOT NULL DEFAULT 0,
    event_types          text[] NOT NULL DEFAULT '{}',
    created_at_ms        bigint NOT NULL,
    CONSTRAINT webhooks_farm_fkey FOREIGN KEY (farm_id) REFERENCES farms (id) ON DELETE CASCADE
);
CREATE INDEX webhooks_farm ON webhooks (farm_id, seq);

-- The delivery log is partitioned by day of at_ms so that retention drops
-- whole partitions. It has no foreign key: attempts of a deleted webhook
-- stay until retention removes them. Partitions are created by the store.
CREATE SEQUENCE delivery_attempts_seq;
CREATE TABLE delivery_attempts (
    seq           bigint NOT NULL DEFAULT nextval('delivery_attempts_seq'),
    delivery_id   uuid NOT NULL,
    webhook_id    uuid NOT NULL,
    event_id      uuid NOT NULL,
    attempt       integer NOT NULL,
    status_code   integer NOT NULL,
    response_body text NOT NULL,
    error         text NOT NULL,
    duration_ms   bigint NOT NULL,
    at_ms         bigint NOT NULL
) PARTITION BY RANGE (at_ms);
CREATE INDEX delivery_attempts_webhook ON delivery_attempts (webhook_id, at_ms, seq);
