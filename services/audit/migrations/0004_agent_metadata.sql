-- The agent filter also matches an event that names its agent in metadata (node_id, node_name:
-- AUDIT_AGENT_METADATA_KEYS in packages/contracts): a terminal session on it, a secret refused
-- for it. Partial indexes, so only the events carrying the key pay for an entry on insert; the
-- query's branch repeats the `metadata ? key` predicate for the planner to pick them.
CREATE INDEX events_meta_node_id_id ON events ((metadata ->> 'node_id'), id) WHERE metadata ? 'node_id';
CREATE INDEX events_meta_node_name_id ON events ((metadata ->> 'node_name'), id) WHERE metadata ? 'node_name';
