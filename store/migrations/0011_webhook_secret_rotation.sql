-- Rotating a webhook's signing secret keeps the secret it replaces for an
-- overlap, so that receivers can move to the new one without losing
-- deliveries. secret_version numbers the current secret (1 at creation,
-- one more per rotation); previous_secret holds the replaced one, stored
-- like secret (sealed under previous_secret_key_id when a key ring is set,
-- with the same binding to the webhook), until previous_secret_until_ms.
-- The store clears it once that time has passed.
ALTER TABLE webhooks
    ADD COLUMN secret_version integer NOT NULL DEFAULT 1,
    ADD COLUMN previous_secret text,
    ADD COLUMN previous_secret_key_id text,
    ADD COLUMN previous_secret_until_ms bigint,
    ADD CONSTRAINT webhooks_previous_secret_until
        CHECK ((previous_secret IS NULL) = (previous_secret_until_ms IS NULL));

-- Each attempt records the versions of the secrets that signed it,
-- X-Service-Signature's signer first; empty when nothing was sent (and in
-- rows written before this column).
ALTER TABLE delivery_attempts ADD COLUMN signed_with integer[] NOT NULL DEFAULT '{}';
