-- Catalog writes an approval policy holds (catalog.write, docs/approvals.md): the validated write,
-- kept here until its change request is approved. `base_hash` is the SHA-256 of the object as it was
-- when the write was held (null for a create): the executor refuses with plan_changed when the
-- object changed since. `executed_at`/`result` are set in the write's own transaction, so a retried
-- execution answers what it did instead of writing twice.
CREATE TABLE pending_catalog_writes (
  id text PRIMARY KEY,
  change_request_id text UNIQUE,
  kind text NOT NULL CHECK (kind IN ('assignment', 'module')),
  op text NOT NULL CHECK (op IN ('create', 'update', 'delete')),
  name text NOT NULL,
  body jsonb NOT NULL,
  base_hash text,
  created_at bigint NOT NULL,
  executed_at bigint,
  result text
);
