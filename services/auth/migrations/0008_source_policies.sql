-- Approval policies a git source manages (docs/approvals.md#policies-from-git). Expand only: two
-- columns with defaults the previous release ignores.
ALTER TABLE approval_policies ADD COLUMN source text NOT NULL DEFAULT '';
ALTER TABLE approval_policies ADD COLUMN source_commit text NOT NULL DEFAULT '';
CREATE INDEX approval_policies_source ON approval_policies (source) WHERE source <> '';
