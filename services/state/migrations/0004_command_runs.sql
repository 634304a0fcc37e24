-- Fleet command runs (POST /api/v1/runs). Env values are never stored: only their names.
CREATE TABLE command_runs (
  id text PRIMARY KEY,
  status text NOT NULL CHECK (status IN ('running', 'cancelling', 'completed', 'cancelled', 'stopped', 'interrupted')),
  selector text,
  node_ids jsonb,
  argv jsonb,
  script text,
  env_keys text[] NOT NULL DEFAULT '{}',
  timeout_s integer NOT NULL,
  batch text NOT NULL DEFAULT '',
  batch_size integer NOT NULL,
  batches integer NOT NULL,
  max_failures integer,
  maintenance_window text,
  actor_id text NOT NULL,
  actor_name text NOT NULL,
  cancelled_by text,
  created_at bigint NOT NULL,
  -- Heartbeat of the replica driving the run; a live run silent for long is interrupted by the sweeper.
  updated_at bigint NOT NULL,
  finished_at bigint
);
CREATE INDEX command_runs_by_status ON command_runs (status, id DESC);
CREATE INDEX command_runs_by_actor ON command_runs (actor_id, id DESC);
CREATE INDEX command_runs_live ON command_runs (updated_at) WHERE status IN ('running', 'cancelling');

-- One agent's part of a run; seq is the launch order (targets never launched come last, batch 0).
CREATE TABLE command_targets (
  run_id text NOT NULL REFERENCES command_runs (id) ON DELETE CASCADE,
  seq integer NOT NULL,
  node_id text NOT NULL,
  name text NOT NULL,
  batch integer NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled',
    'unreachable', 'lost', 'not_approved', 'not_found', 'not_started')),
  job_id text,
  exit_code integer,
  signal text NOT NULL DEFAULT '',
  started_at bigint,
  finished_at bigint,
  duration_ms double precision,
  stdout bytea NOT NULL DEFAULT ''::bytea,
  stderr bytea NOT NULL DEFAULT ''::bytea,
  stdout_truncated boolean NOT NULL DEFAULT false,
  stderr_truncated boolean NOT NULL DEFAULT false,
  error text NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, seq)
);
CREATE UNIQUE INDEX command_targets_by_job ON command_targets (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX command_targets_live ON command_targets (run_id) WHERE status IN ('queued', 'running');
