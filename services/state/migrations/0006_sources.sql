-- Git sources: repositories whose modules/ and assignments/ are synced into the catalog.
-- Credentials and the webhook secret are sealed with state.source_keys (the source name is the
-- associated data); they are never selected into API responses.
CREATE TABLE sources (
  name text PRIMARY KEY,
  url text NOT NULL,
  branch text NOT NULL,
  path text NOT NULL DEFAULT '',
  interval_s integer NOT NULL,
  auth_kind text NOT NULL DEFAULT 'none' CHECK (auth_kind IN ('none', 'token', 'ssh_key')),
  auth_sealed bytea,
  webhook_sealed bytea NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'ok', 'error')),
  commit text NOT NULL DEFAULT '',
  synced_at bigint NOT NULL DEFAULT 0,
  attempted_at bigint NOT NULL DEFAULT 0,
  attempted_commit text NOT NULL DEFAULT '',
  next_sync_at bigint NOT NULL DEFAULT 0,
  failures integer NOT NULL DEFAULT 0,
  error text NOT NULL DEFAULT '',
  errors jsonb NOT NULL DEFAULT '[]',
  created_at bigint NOT NULL,
  created_by text NOT NULL
);
CREATE INDEX sources_due ON sources (next_sync_at);

-- Objects a source manages: changed only by its syncs (the API answers managed_by_source).
-- Deleting the source releases them (source set NULL by the delete, which also clears the commit).
ALTER TABLE modules
  ADD COLUMN source text REFERENCES sources (name) ON DELETE SET NULL,
  ADD COLUMN source_commit text NOT NULL DEFAULT '',
  ADD COLUMN removed_from_source boolean NOT NULL DEFAULT false;
ALTER TABLE assignments
  ADD COLUMN source text REFERENCES sources (name) ON DELETE SET NULL,
  ADD COLUMN source_commit text NOT NULL DEFAULT '',
  ADD COLUMN apply_on_sync boolean NOT NULL DEFAULT false,
  ADD COLUMN sync_batch text NOT NULL DEFAULT '',
  ADD COLUMN sync_max_failures integer;
CREATE INDEX modules_source ON modules (source) WHERE source IS NOT NULL;
CREATE INDEX assignments_source ON assignments (source) WHERE source IS NOT NULL;

-- A run started by a source's sync (apply_on_sync) or plan records the commit.
ALTER TABLE runs ADD COLUMN source text NOT NULL DEFAULT '', ADD COLUMN source_commit text NOT NULL DEFAULT '';
