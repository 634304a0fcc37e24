-- Join tokens: `ojt_<id>.<secret>`; only SHA-256(secret) is kept. `uses` counts agents approved
-- through the token; the row is locked while one is, so max_uses holds under concurrent joins.
CREATE TABLE join_tokens (
  id text PRIMARY KEY,
  secret_hash bytea NOT NULL,
  description text NOT NULL DEFAULT '',
  tags jsonb NOT NULL DEFAULT '{}'::jsonb,
  name_prefix text NOT NULL DEFAULT '',
  max_uses integer NOT NULL DEFAULT 0 CHECK (max_uses >= 0),
  uses integer NOT NULL DEFAULT 0 CHECK (uses >= 0),
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  revoked_at bigint,
  created_by text NOT NULL,
  created_by_name text NOT NULL DEFAULT ''
);
CREATE INDEX join_tokens_created ON join_tokens (created_at DESC, id DESC);

-- Why a pending agent was not approved by its join token (empty when it presented none).
ALTER TABLE agents ADD COLUMN pending_reason text NOT NULL DEFAULT '';
-- The join token an agent was approved through, if any.
ALTER TABLE agents ADD COLUMN join_token_id text;

-- One row per agent per requested upgrade. A requested row ends succeeded when the agent links up
-- on to_version, failed when it refuses (reason from the agent) or misses deadline_at (timeout).
CREATE TABLE agent_upgrades (
  id text PRIMARY KEY,
  node_id text NOT NULL REFERENCES agents (node_id) ON DELETE CASCADE,
  from_version text NOT NULL,
  to_version text NOT NULL,
  status text NOT NULL DEFAULT 'requested' CHECK (status IN ('requested', 'succeeded', 'failed')),
  reason text NOT NULL DEFAULT '',
  message text NOT NULL DEFAULT '',
  requested_at bigint NOT NULL,
  deadline_at bigint NOT NULL,
  finished_at bigint,
  requested_by text NOT NULL
);
CREATE INDEX agent_upgrades_open ON agent_upgrades (node_id) WHERE status = 'requested';
CREATE INDEX agent_upgrades_recent ON agent_upgrades (requested_at DESC, id DESC);
