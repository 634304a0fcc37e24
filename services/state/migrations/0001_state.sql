-- Modules: the current YAML of each name. Every content ever uploaded is kept by hash in
-- module_versions so that snapshots can re-render exactly what was applied.
CREATE TABLE modules (
  name text PRIMARY KEY,
  content text NOT NULL,
  sha256 text NOT NULL,
  description text NOT NULL DEFAULT '',
  resource_count integer NOT NULL,
  uploaded_at bigint NOT NULL,
  uploaded_by text NOT NULL,
  uploaded_by_name text NOT NULL DEFAULT ''
);

CREATE TABLE module_versions (
  sha256 text PRIMARY KEY,
  name text NOT NULL,
  content text NOT NULL,
  created_at bigint NOT NULL
);

CREATE TABLE assignments (
  name text PRIMARY KEY,
  selector text NOT NULL,
  modules text[] NOT NULL,
  description text,
  created_at bigint NOT NULL,
  created_by text NOT NULL
);
CREATE INDEX assignments_modules ON assignments USING gin (modules);

-- One fan-out of an assignment. targets: [{node_id, name, batch}] in launch order.
CREATE TABLE runs (
  id text PRIMARY KEY,
  assignment text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('apply', 'plan')),
  status text NOT NULL CHECK (status IN ('running', 'completed', 'stopped', 'interrupted')),
  selector text NOT NULL,
  modules text[] NOT NULL,
  batch_size integer NOT NULL,
  batches integer NOT NULL,
  max_failures integer,
  failures integer NOT NULL DEFAULT 0,
  targets jsonb NOT NULL,
  actor_id text NOT NULL,
  actor_name text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  finished_at bigint
);
CREATE INDEX runs_running ON runs (updated_at) WHERE status = 'running';

-- Operations. results/output are stored with secret values masked.
CREATE TABLE operations (
  id text PRIMARY KEY,
  node_id text NOT NULL,
  node_name text NOT NULL DEFAULT '',
  kind text NOT NULL CHECK (kind IN ('apply', 'plan', 'drift')),
  modules text[] NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'timed_out', 'unreachable')),
  actor_id text NOT NULL,
  actor_name text NOT NULL,
  created_at bigint NOT NULL,
  started_at bigint,
  finished_at bigint,
  deadline bigint NOT NULL,
  summary jsonb NOT NULL DEFAULT '{"ok":0,"changed":0,"failed":0,"skipped":0,"unsupported":0}',
  results jsonb NOT NULL DEFAULT '[]',
  output jsonb NOT NULL DEFAULT '[]',
  error_code text NOT NULL DEFAULT '',
  error text NOT NULL DEFAULT '',
  run_id text REFERENCES runs (id) ON DELETE SET NULL,
  assignment text NOT NULL DEFAULT ''
);
CREATE INDEX operations_node ON operations (node_id, id DESC);
CREATE INDEX operations_open ON operations (deadline) WHERE status IN ('pending', 'running');
CREATE INDEX operations_run ON operations (run_id) WHERE run_id IS NOT NULL;

-- Per agent and module: what the last successful apply rendered from (the module version and the
-- attributes/tags it read). Secrets are re-resolved at drift time, never stored.
CREATE TABLE snapshots (
  node_id text NOT NULL,
  module text NOT NULL,
  module_sha256 text NOT NULL REFERENCES module_versions (sha256),
  position integer NOT NULL,
  attributes jsonb NOT NULL,
  tags jsonb NOT NULL,
  operation_id text NOT NULL,
  applied_at bigint NOT NULL,
  PRIMARY KEY (node_id, module)
);

-- Believed state: per resource, from the latest successful apply of its module.
CREATE TABLE believed (
  node_id text NOT NULL,
  module text NOT NULL,
  resource_id text NOT NULL,
  type text NOT NULL,
  status text NOT NULL,
  observed jsonb NOT NULL,
  operation_id text NOT NULL,
  applied_at bigint NOT NULL,
  PRIMARY KEY (node_id, module, resource_id)
);

CREATE TABLE drift (
  id text PRIMARY KEY,
  node_id text NOT NULL,
  operation_id text NOT NULL,
  checked_at bigint NOT NULL,
  drifted boolean NOT NULL,
  resources jsonb NOT NULL
);
CREATE INDEX drift_node ON drift (node_id, id DESC);
