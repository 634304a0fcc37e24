-- One row per secret. The value exists only as AES-256-GCM ciphertext: key_id names the keyring
-- entry that sealed it, nonce is random per write, and the secret's name is the additional data,
-- so a ciphertext copied into another row does not decrypt. "C" collation keeps keyset paging by
-- name byte-ordered and independent of the server's locale.
CREATE TABLE secrets (
  name text COLLATE "C" PRIMARY KEY,
  description text,
  expires_at bigint,
  restriction jsonb,
  key_id text NOT NULL,
  nonce bytea NOT NULL CHECK (length(nonce) = 12),
  ciphertext bytea NOT NULL,
  auth_tag bytea NOT NULL CHECK (length(auth_tag) = 16),
  created_at bigint NOT NULL,
  created_by text NOT NULL,
  updated_at bigint NOT NULL,
  updated_by text NOT NULL
);
-- Re-encryption looks for rows sealed with anything but the active key.
CREATE INDEX secrets_key_id ON secrets (key_id);
