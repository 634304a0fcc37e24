-- Bus-bridge grants: the terminal sessions and state operations each agent may use on the bus,
-- recorded by the replica that relayed the OpenTerminal / Execute. Kept in the database so that a
-- grant outlives the link: the agent may come back through another replica and resume.
CREATE TABLE link_grants (
  node_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('terminal', 'progress')),
  ref text NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (node_id, kind, ref)
);
CREATE INDEX link_grants_expires ON link_grants (expires_at);
