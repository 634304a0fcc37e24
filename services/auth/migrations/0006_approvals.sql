-- Approval policies and change requests (docs/approvals.md). Expand only: new tables, nothing the
-- previous release reads changes.

-- Admin-managed policies: which actions on which agents need how many approvals, from whom.
CREATE TABLE approval_policies (
  name text PRIMARY KEY,
  description text NOT NULL DEFAULT '',
  actions text[] NOT NULL,
  selector text NOT NULL,
  approvals_required integer NOT NULL CHECK (approvals_required BETWEEN 1 AND 10),
  approvers text[] NOT NULL,
  requester_may_approve boolean NOT NULL DEFAULT false,
  expires_after_seconds integer NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  created_by text NOT NULL
);

-- A held action. The policy's rules are frozen into the row at submission (approvers included),
-- so editing or deleting the policy later does not change who may decide a pending request.
CREATE TABLE change_requests (
  id text PRIMARY KEY,
  action text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'cancelled', 'expired', 'executed', 'failed')),
  policy text NOT NULL,
  approvals_required integer NOT NULL,
  approvers text[] NOT NULL,
  requester_may_approve boolean NOT NULL,
  requester_id text NOT NULL,
  requester_name text NOT NULL,
  target_type text NOT NULL DEFAULT '',
  target_name text NOT NULL DEFAULT '',
  summary text NOT NULL DEFAULT '',
  reason text NOT NULL DEFAULT '',
  content jsonb NOT NULL DEFAULT '{}',
  content_hash text NOT NULL DEFAULT '',
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  decided_at bigint NULL,
  executed_at bigint NULL,
  result text NOT NULL DEFAULT '',
  error text NOT NULL DEFAULT ''
);
CREATE INDEX change_requests_pending_expiry ON change_requests (expires_at) WHERE status = 'pending';
CREATE INDEX change_requests_requester ON change_requests (requester_id, id);

-- One decision per approver and request.
CREATE TABLE change_request_decisions (
  request_id text NOT NULL REFERENCES change_requests (id) ON DELETE CASCADE,
  operator_id text NOT NULL,
  operator_name text NOT NULL,
  decision text NOT NULL CHECK (decision IN ('approve', 'deny')),
  comment text NOT NULL DEFAULT '',
  at bigint NOT NULL,
  PRIMARY KEY (request_id, operator_id)
);
