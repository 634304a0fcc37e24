-- The agent apply a change request was approved for (docs/approvals.md): at most one operation per
-- request, so an execution the auth service retries (its commit lost after the apply started) finds
-- the operation it began.
ALTER TABLE operations ADD COLUMN change_request_id text;
CREATE UNIQUE INDEX operations_change_request ON operations (change_request_id) WHERE change_request_id IS NOT NULL;
