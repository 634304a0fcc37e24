-- The bearer token an attach ticket was obtained with (its SHA-256, as the auth service broadcasts
-- it on logout, and its expiry), so that a WebSocket attached with the ticket alone ends with that
-- token. '' and 0 = not known (the attach is then bound to the ticket's operator only).
ALTER TABLE tickets
  ADD COLUMN token_hash text NOT NULL DEFAULT '' CHECK (token_hash ~ '^([0-9a-f]{64})?$'),
  ADD COLUMN token_expires_at bigint NOT NULL DEFAULT 0;
