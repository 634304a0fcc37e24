-- The command run a change request was approved for (docs/approvals.md, command.run): at most one run
-- per request, so an execution the auth service retries (its commit lost after the run started) finds
-- the run it began.
ALTER TABLE command_runs ADD COLUMN change_request_id text;
CREATE UNIQUE INDEX command_runs_change_request ON command_runs (change_request_id) WHERE change_request_id IS NOT NULL;
