-- Webhook signing secrets may be sealed at rest under a key ring. A sealed
-- secret is stored in the same column as the standard base64 of
-- nonce||ciphertext||tag, and secret_key_id names the ring key that sealed
-- it; NULL means the secret is stored unsealed, as every row was before.
-- Rows are sealed and re-sealed online by `furrow admin seal-secrets` and
-- `furrow admin reseal`, so nothing is rewritten here.
ALTER TABLE webhooks ADD COLUMN secret_key_id text;
