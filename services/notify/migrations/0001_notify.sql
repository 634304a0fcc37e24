-- Channels: public config as jsonb; credentials sealed (AES-256-GCM when notify.credentials_key is set).
CREATE TABLE channels (
  id text PRIMARY KEY,
  name text NOT NULL UNIQUE,
  channel_type text NOT NULL CHECK (channel_type IN ('webhook', 'discord', 'slack', 'ntfy')),
  config jsonb NOT NULL,
  credentials bytea NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text NOT NULL DEFAULT '',
  created_at bigint NOT NULL,
  created_by text NOT NULL,
  updated_at bigint NOT NULL
);

-- One row per (channel, event). Workers claim due rows with FOR UPDATE SKIP LOCKED and hold them
-- with a lease; success is recorded before anything else, so a delivered row is never sent again.
CREATE TABLE deliveries (
  id text PRIMARY KEY,
  channel_id text NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  event_id text NOT NULL,
  event_type text NOT NULL,
  severity text NOT NULL,
  event jsonb NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'in_flight', 'delivered', 'failed', 'suppressed', 'cancelled')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL,
  lease_until bigint NOT NULL DEFAULT 0,
  last_status_code integer NOT NULL DEFAULT 0,
  last_error text NOT NULL DEFAULT '',
  created_at bigint NOT NULL,
  delivered_at bigint NOT NULL DEFAULT 0,
  UNIQUE (channel_id, event_id)
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_leased ON deliveries (lease_until) WHERE status = 'in_flight';
CREATE INDEX deliveries_channel ON deliveries (channel_id, id);

-- Per-operator notifications; read state is per row, so operators never see each other's.
CREATE TABLE notifications (
  id text PRIMARY KEY,
  operator_id text NOT NULL,
  event_id text NOT NULL,
  event_type text NOT NULL,
  severity text NOT NULL,
  summary text NOT NULL,
  timestamp_ms bigint NOT NULL,
  read_at bigint,
  UNIQUE (operator_id, event_id)
);
CREATE INDEX notifications_operator ON notifications (operator_id, id);
CREATE INDEX notifications_unread ON notifications (operator_id, id) WHERE read_at IS NULL;

-- Idempotency for the AUDIT consumer: the broker's duplicate window is minutes, this is durable.
CREATE TABLE processed_events (
  event_id text PRIMARY KEY,
  processed_at bigint NOT NULL
);
CREATE INDEX processed_events_at ON processed_events (processed_at);

CREATE TABLE maintenance_windows (
  id text PRIMARY KEY,
  starts_at bigint NOT NULL,
  ends_at bigint NOT NULL,
  reason text NOT NULL,
  created_by text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  CHECK (starts_at < ends_at)
);
CREATE INDEX maintenance_windows_span ON maintenance_windows (starts_at, ends_at);
