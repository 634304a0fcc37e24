/**
 * Metadata keys by which an audit event names the agent it concerns when neither its actor nor its
 * target is that agent: a terminal session on it, a secret resolved or refused for it. The agent
 * filter of the audit query (services/audit/src/db/query.ts, with a partial index per key in
 * services/audit/migrations/0004_agent_metadata.sql) and of the live tail (matchesFilter in the
 * gateway) match these keys as well as an actor or target of type agent; an event about an agent
 * records both keys, so `--agent` finds it by node id and by name.
 */
export const AUDIT_AGENT_METADATA_KEYS = ["node_id", "node_name"] as const;
