-- Just-in-time access (docs/approvals.md): the longest access a policy lets a request ask for, and
-- the grants approvals give. Expand only.
ALTER TABLE approval_policies ADD COLUMN max_access_seconds integer NOT NULL DEFAULT 28800;

-- Temporary access: a wider agent selector and/or the admin role, in force from granted_at until
-- expires_at or until revoked. Ended grants stay for the audit trail.
CREATE TABLE access_grants (
  id text PRIMARY KEY,
  operator_id text NOT NULL,
  operator_name text NOT NULL,
  request_id text NOT NULL UNIQUE REFERENCES change_requests (id),
  agent_selector text NOT NULL DEFAULT '',
  role text NOT NULL DEFAULT '' CHECK (role IN ('', 'admin')),
  reason text NOT NULL DEFAULT '',
  granted_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  ended_at bigint NULL,
  end_reason text NOT NULL DEFAULT '' CHECK (end_reason IN ('', 'expired', 'revoked')),
  ended_by text NOT NULL DEFAULT ''
);
CREATE INDEX access_grants_active ON access_grants (operator_id) WHERE ended_at IS NULL;
CREATE INDEX access_grants_due ON access_grants (expires_at) WHERE ended_at IS NULL;
