-- Enforcement: an enforced assignment's drifted resources are re-applied after a scheduled drift check.
ALTER TABLE assignments ADD COLUMN enforce boolean NOT NULL DEFAULT false;

-- The drift record an enforcement apply corrects (actor system:enforce); null for every other operation.
ALTER TABLE operations ADD COLUMN remediates text;

-- The rate limit: when enforcement last re-applied an assignment on an agent.
CREATE TABLE remediations (
  assignment text NOT NULL,
  node_id text NOT NULL,
  last_at bigint NOT NULL,
  PRIMARY KEY (assignment, node_id)
);
