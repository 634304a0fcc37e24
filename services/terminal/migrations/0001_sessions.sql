-- Times are Unix ms (the API shows seconds).
CREATE TABLE sessions (
  id text PRIMARY KEY,
  node_id text NOT NULL,
  node_name text NOT NULL DEFAULT '',
  operator_id text NOT NULL,
  operator_name text NOT NULL,
  status text NOT NULL CHECK (status IN ('opening', 'open', 'closed', 'failed')),
  shell text NOT NULL DEFAULT '',
  cols integer NOT NULL,
  rows integer NOT NULL,
  opened_at bigint NOT NULL,
  closed_at bigint,
  exit_code integer,
  close_reason text,
  -- Who asked for the close (DELETE), so the recording replica can name them in the event.
  closed_by_id text,
  closed_by_name text,
  -- File name under terminal.transcript_dir.
  transcript_file text NOT NULL,
  sha256 text,
  -- The replica recording the session and until when its claim holds; an expired lease means the
  -- recorder is gone and another replica takes the session over.
  owner text,
  lease_expires_at bigint NOT NULL DEFAULT 0
);
CREATE INDEX sessions_live ON sessions (lease_expires_at) WHERE status IN ('opening', 'open');
CREATE INDEX sessions_operator ON sessions (operator_id, id);
CREATE INDEX sessions_status ON sessions (status, id);

-- Attach tickets: only the SHA-256 is stored; consumed with DELETE ... RETURNING (single use).
CREATE TABLE tickets (
  hash text PRIMARY KEY,
  session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  operator_id text NOT NULL,
  operator_name text NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX tickets_expires_at ON tickets (expires_at);
