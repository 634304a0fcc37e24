-- One-time terminal passes (docs/approvals.md#terminals-terminalopen): an executed terminal.open
-- change request lets its requester open one session on the agent it names, once, before
-- expires_at. The change request id is the key, so a retried execution finds the pass it recorded.
-- Times are Unix ms.
CREATE TABLE passes (
  change_request_id text PRIMARY KEY,
  node_id text NOT NULL,
  node_name text NOT NULL DEFAULT '',
  -- The shell approved ('' = the agent's default).
  shell text NOT NULL DEFAULT '',
  -- The requester: only they may use it.
  operator_id text NOT NULL,
  approvers text[] NOT NULL DEFAULT '{}',
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  used_at bigint,
  session_id text
);
