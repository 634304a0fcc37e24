-- Four-eyes approval of secret writes (secret.write, docs/approvals.md). Every write bumps a secret's
-- version from one sequence, so a version is never reused, even by a secret deleted and created
-- again: a held write freezes the version it was planned against, and any write since refuses the
-- approval (plan_changed).
CREATE SEQUENCE secret_versions;
ALTER TABLE secrets ADD COLUMN version bigint NOT NULL DEFAULT nextval('secret_versions');

-- A held write waits here, its new value sealed exactly as in `secrets` (the change request carries
-- no value). Executed rows stay, value dropped, so a retried execution answers the same result;
-- rows older than the longest request lifetime are purged when a new write is held.
CREATE TABLE pending_writes (
  id text PRIMARY KEY,
  change_request_id text UNIQUE,
  op text NOT NULL CHECK (op IN ('create', 'update', 'delete')),
  name text COLLATE "C" NOT NULL,
  key_id text,
  nonce bytea CHECK (length(nonce) = 12),
  ciphertext bytea,
  auth_tag bytea CHECK (length(auth_tag) = 16),
  -- {description?, expires_at?, restriction?}: a key present = that field changes (null clears it).
  changes jsonb NOT NULL,
  base_version bigint,
  requester_id text NOT NULL,
  created_at bigint NOT NULL,
  executed_at bigint,
  result text,
  CHECK ((key_id IS NULL) = (ciphertext IS NULL))
);
CREATE INDEX pending_writes_created_at ON pending_writes (created_at);
-- Re-encryption looks for pending values sealed with anything but the active key.
CREATE INDEX pending_writes_key_id ON pending_writes (key_id) WHERE key_id IS NOT NULL;
