-- The registry. name is NULL until approval and then never changes (unique among named agents).
-- replica + session say which agents-service process holds the link right now: a disconnect only
-- clears `connected` when it is still the same session (the agent may already be back elsewhere).
CREATE TABLE agents (
  node_id text PRIMARY KEY,
  public_key text NOT NULL UNIQUE,
  name text UNIQUE,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
  tags jsonb NOT NULL DEFAULT '{}'::jsonb,
  attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
  connected boolean NOT NULL DEFAULT false,
  replica text,
  session text,
  first_seen bigint NOT NULL,
  last_seen bigint NOT NULL,
  address text NOT NULL DEFAULT '',
  version text NOT NULL DEFAULT ''
);
CREATE INDEX agents_connected_replica ON agents (replica) WHERE connected;
CREATE INDEX agents_status ON agents (status, node_id);
CREATE INDEX agents_tags ON agents USING gin (tags jsonb_path_ops);

-- One row per sample. History reads walk (node_id, taken_at DESC); the BRIN index on taken_at keeps
-- the retention prune cheap without a second B-tree on every insert.
CREATE TABLE metrics (
  node_id text NOT NULL,
  taken_at bigint NOT NULL,
  cpu_percent double precision NOT NULL,
  load1 double precision NOT NULL,
  load5 double precision NOT NULL,
  load15 double precision NOT NULL,
  memory_total double precision NOT NULL,
  memory_used double precision NOT NULL,
  disk_total double precision NOT NULL,
  disk_used double precision NOT NULL,
  net_rx_bytes double precision NOT NULL,
  net_tx_bytes double precision NOT NULL,
  uptime_seconds double precision NOT NULL
);
CREATE UNIQUE INDEX metrics_node_taken ON metrics (node_id, taken_at DESC);
CREATE INDEX metrics_taken_brin ON metrics USING brin (taken_at);

-- Live agents-service processes. A replica that stops heartbeating is dead: its agents are marked
-- disconnected by whichever replica runs the sweep.
CREATE TABLE replicas (
  id text PRIMARY KEY,
  started_at bigint NOT NULL,
  heartbeat_at bigint NOT NULL
);
