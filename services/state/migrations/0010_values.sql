-- Values (docs/modules.md#values): named sets layered defaults → selector-bound sets by priority →
-- an agent's own values. Each set keeps the YAML text it was read from and, per leaf key path, the
-- line in that text, so the merged result can say where every key came from without parsing again.
CREATE TABLE value_sets (
  name text PRIMARY KEY,
  -- '' only for the set named 'defaults' (enforced by the service, one rule in contracts).
  selector text NOT NULL,
  priority integer NOT NULL DEFAULT 0,
  description text NOT NULL DEFAULT '',
  "values" jsonb NOT NULL,
  -- Dotted leaf key path → line in content.
  lines jsonb NOT NULL DEFAULT '{}',
  content text NOT NULL,
  sha256 text NOT NULL,
  key_count integer NOT NULL,
  updated_at bigint NOT NULL,
  updated_by text NOT NULL,
  updated_by_name text NOT NULL,
  source text REFERENCES sources (name) ON DELETE SET NULL,
  source_commit text NOT NULL DEFAULT ''
);
CREATE INDEX value_sets_source ON value_sets (source) WHERE source IS NOT NULL;

-- An agent's own values: the highest layer. Removing an agent leaves them (the registry is another
-- service); they are read only for agents that exist.
CREATE TABLE agent_values (
  node_id text PRIMARY KEY,
  "values" jsonb NOT NULL,
  lines jsonb NOT NULL DEFAULT '{}',
  content text NOT NULL,
  updated_at bigint NOT NULL,
  updated_by text NOT NULL,
  updated_by_name text NOT NULL
);
