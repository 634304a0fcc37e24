-- Single sign-on (docs/sso.md). Expand only: the previous release's code keeps working on this
-- schema (it never reads the new tables, and its operators all still have a key).

-- An operator provisioned by single sign-on has no Ed25519 key.
ALTER TABLE operators ALTER COLUMN public_key DROP NOT NULL;

-- OIDC providers. The client secret is sealed with the `auth.sso_keys` keyring (AES-256-GCM, the
-- provider id as associated data); `rules` is the ordered mapping list (SsoMappingRule as JSON).
CREATE TABLE identity_providers (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE,
  display_name text NOT NULL,
  issuer text NOT NULL,
  client_id text NOT NULL,
  client_secret bytea NULL,
  scopes text[] NOT NULL,
  groups_claim text NOT NULL,
  allowed_domains text[] NOT NULL DEFAULT '{}',
  rules jsonb NOT NULL DEFAULT '[]',
  refresh_interval_seconds integer NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  device_flow boolean NOT NULL DEFAULT false,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  created_by text NOT NULL
);

-- Where an SSO operator came from: one row per operator, unique per (provider, subject). The
-- refresh token (sealed like the client secret, the operator id as associated data) lets the
-- refresher ask the provider whether the user may still sign in.
CREATE TABLE sso_identities (
  operator_id text PRIMARY KEY REFERENCES operators (id) ON DELETE CASCADE,
  provider_id text NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
  subject text NOT NULL,
  email text NULL,
  groups text[] NOT NULL DEFAULT '{}',
  rule_index integer NOT NULL,
  rule_name text NOT NULL,
  refresh_token bytea NULL,
  -- The provider's session id from the last ID token: a back-channel logout may name only it.
  sid text NULL,
  provisioned_at bigint NOT NULL,
  last_login_at bigint NOT NULL,
  -- Last time the provider confirmed the user (sign-in or refresh); the refresher's clock.
  checked_at bigint NOT NULL,
  -- Set when the refresher cannot reach the provider; cleared on the next answer.
  unreachable_since bigint NULL,
  -- The refresher's last attempt, answered or not: paces retries against a provider that is down.
  attempted_at bigint NULL,
  UNIQUE (provider_id, subject)
);
CREATE INDEX sso_identities_checked_at ON sso_identities (checked_at);

-- Pending authorization code flows: single-use (DELETE ... RETURNING), keyed by the SHA-256 of
-- `state`; the PKCE verifier and nonce never leave the service.
CREATE TABLE sso_logins (
  state_hash text PRIMARY KEY,
  provider_id text NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
  nonce text NOT NULL,
  code_verifier text NOT NULL,
  redirect_uri text NOT NULL,
  client text NOT NULL CHECK (client IN ('console', 'cli')),
  return_to text NOT NULL DEFAULT '',
  expires_at bigint NOT NULL
);
CREATE INDEX sso_logins_expires_at ON sso_logins (expires_at);

-- Pending device authorization grants (RFC 8628); the provider's device code stays here.
CREATE TABLE sso_devices (
  id text PRIMARY KEY,
  provider_id text NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
  device_code text NOT NULL,
  interval_seconds integer NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX sso_devices_expires_at ON sso_devices (expires_at);

-- Sessions opened by single sign-on (console cookie or CLI token).
ALTER TABLE tokens DROP CONSTRAINT tokens_via_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_via_check CHECK (via IN ('key', 'login_code', 'passkey', 'sso'));
