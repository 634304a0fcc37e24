-- Web console sessions. A console session is a row of `tokens` like any other (so Authenticate,
-- the revocation broadcast and operator removal cover it unchanged); `kind` and `via` only say how
-- it was opened, and `passkey_id` lets removing a passkey end the sessions it opened.
ALTER TABLE tokens
  ADD COLUMN kind text NOT NULL DEFAULT 'api' CHECK (kind IN ('api', 'console')),
  ADD COLUMN via text NOT NULL DEFAULT 'key' CHECK (via IN ('key', 'login_code', 'passkey')),
  ADD COLUMN passkey_id text NULL;

-- One-time login codes (`orchctl console`): only the SHA-256 is stored; consumed with
-- DELETE ... RETURNING so a code works once whatever the outcome.
CREATE TABLE login_codes (
  hash text PRIMARY KEY,
  operator_id text NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX login_codes_expires_at ON login_codes (expires_at);

-- WebAuthn credentials. Never secret (a public key), but removing one revokes its sessions.
CREATE TABLE passkeys (
  id text PRIMARY KEY,
  operator_id text NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
  credential_id text NOT NULL UNIQUE,
  public_key bytea NOT NULL,
  counter bigint NOT NULL DEFAULT 0,
  transports text[] NOT NULL DEFAULT '{}',
  device_type text NOT NULL,
  backed_up boolean NOT NULL DEFAULT false,
  name text NOT NULL,
  created_at bigint NOT NULL,
  last_used_at bigint NULL
);
CREATE INDEX passkeys_operator_id ON passkeys (operator_id);

-- Single-use WebAuthn challenges; operator_id is null for discoverable sign-in.
CREATE TABLE webauthn_challenges (
  challenge text PRIMARY KEY,
  operator_id text NULL REFERENCES operators (id) ON DELETE CASCADE,
  purpose text NOT NULL CHECK (purpose IN ('register', 'login')),
  expires_at bigint NOT NULL
);
CREATE INDEX webauthn_challenges_expires_at ON webauthn_challenges (expires_at);

ALTER TABLE tokens
  ADD CONSTRAINT tokens_passkey_id_fkey FOREIGN KEY (passkey_id) REFERENCES passkeys (id) ON DELETE CASCADE;
CREATE INDEX tokens_passkey_id ON tokens (passkey_id) WHERE passkey_id IS NOT NULL;
