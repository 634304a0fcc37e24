CREATE TABLE operators (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE,
  public_key text NOT NULL UNIQUE,
  role text NOT NULL CHECK (role IN ('admin', 'operator')),
  active boolean NOT NULL DEFAULT true,
  created_at bigint NOT NULL,
  created_by text NOT NULL
);

-- Single-use login nonces; consumed with DELETE ... RETURNING so a nonce can be used once only.
CREATE TABLE challenges (
  nonce text PRIMARY KEY,
  public_key text NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX challenges_expires_at ON challenges (expires_at);

-- Only the SHA-256 of a token is stored.
CREATE TABLE tokens (
  hash text PRIMARY KEY,
  operator_id text NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX tokens_operator_id ON tokens (operator_id);
CREATE INDEX tokens_expires_at ON tokens (expires_at);
