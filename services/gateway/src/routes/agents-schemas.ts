import { z } from "zod";
import {
  AGENT_NAME_RE,
  AGENT_NAME_RULE,
  DISCOVERY_TARGET_RULE,
  SELECTOR_MAX_LENGTH,
  checkAgentName,
  checkAgentRef,
  checkDiscoveryTarget,
  checkNodeId,
  checkTagKey as tagKeyRule,
  checkTags as tagsRule,
  checkTagValue as tagValueRule,
  TAG_KEY_RULE,
  TAG_VALUE_RULE,
  type Agent,
  type AgentSummary,
  type MetricsSample,
  type Violation,
} from "@orch/contracts";
import { invalid } from "@orch/kit";
import { iso, ruled } from "../schemas.js";

/**
 * The agents service's rules (from @orch/contracts), checked here too so bad input never reaches
 * the bus. They run in the handlers rather than the schemas so the codes and `field` match what
 * the service answers: a client sees one contract.
 */
export { MAX_TAGS } from "@orch/contracts";
export const NAME_RULE = `must be ${AGENT_NAME_RULE}`;
export const KEY_RULE = `must be ${TAG_KEY_RULE}`;
export const VALUE_RULE = `must be ${TAG_VALUE_RULE}`;

/** A 400 naming the field, with the same `errors` list the gateway's schema failures carry. */
export function fieldError(
  location: "body" | "path" | "query",
  field: string,
  message: string,
  reason: Violation["reason"] = "invalid_request",
) {
  return invalid(reason, `${location} field '${field}' ${message}`, { field, errors: [{ location, field, message }] });
}

const refuse = (v: Violation, location: "body" | "path" | "query", field: string) =>
  fieldError(location, field, v.message, v.reason);

export function checkName(name: string | null | undefined): string {
  const v = checkAgentName(name);
  if (v) throw refuse(v, "body", "name");
  return name!;
}

export function checkTagKey(key: string, location: "body" | "path", field: string): void {
  const v = tagKeyRule(key);
  if (v) throw refuse(v, location, field);
}

export function checkTagValue(value: string, field: string): void {
  const v = tagValueRule(value);
  if (v) throw refuse(v, "body", field);
}

export function checkTags(tags: Record<string, string>): void {
  const v = tagsRule(tags);
  if (v) throw refuse(v, "body", v.field);
}

/** Path reference to an agent: its 32-hex node id or its approved name (the service resolves both). */
export const AgentRef = ruled(checkAgentRef, AGENT_NAME_RE);
export const AgentParams = z.object({ node_id: AgentRef });

export const AgentStatus = z.enum(["pending", "approved", "rejected"]);

/** host:port with a hostname, IPv4 address or [IPv6] address and a port 1..65535. */
export const validTarget = (t: string) => !checkDiscoveryTarget(t);
export const TARGET_RULE = DISCOVERY_TARGET_RULE;

export const AgentOut = z.object({
  node_id: z.string(),
  name: z.string().nullable().describe("immutable name given at approval; null while pending"),
  status: AgentStatus,
  tags: z.record(z.string(), z.string()),
  attributes: z.record(z.string(), z.string()),
  connected: z.boolean(),
  first_seen: z.string().nullable(),
  last_seen: z.string().nullable(),
  address: z.string().nullable(),
  version: z.string().nullable(),
  outdated: z.boolean().describe("the agent runs a version older than the newest published release"),
  public_key: z.string().describe("hex Ed25519 public key; node_id is derived from it"),
  pending_reason: z
    .string()
    .nullable()
    .describe(
      "why a pending agent's join token did not approve it (join_token_invalid, join_token_expired, join_token_exhausted, join_token_revoked); null otherwise",
    ),
});

// Shape only: the grammar is checked by the agents service with the shared parser (400 invalid_selector).
export const SelectorQuery = z
  .string()
  .max(SELECTOR_MAX_LENGTH)
  .describe(
    "agent selector (assignment grammar: `k=v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, comma = and; keys are tags, `name`, `node_id`, `attr.<attribute>`; `*` globs in values), AND-ed with the caller's scope; empty = no filter",
  );

export const AgentSummaryOut = z.object({
  total: z.number().int().min(0).describe("agents the caller can see that match"),
  connected: z.number().int().min(0).describe("approved and connected now"),
  disconnected: z.number().int().min(0).describe("approved and not connected"),
  pending: z.number().int().min(0),
  approved: z.number().int().min(0),
  rejected: z.number().int().min(0),
});

export function summaryJson(s: AgentSummary): z.infer<typeof AgentSummaryOut> {
  return {
    total: s.total,
    connected: s.connected,
    disconnected: s.disconnected,
    pending: s.pending,
    approved: s.approved,
    rejected: s.rejected,
  };
}

export const SampleOut = z.object({
  taken_at: z.string(),
  cpu_percent: z.number(),
  load1: z.number(),
  load5: z.number(),
  load15: z.number(),
  memory_total: z.number(),
  memory_used: z.number(),
  disk_total: z.number(),
  disk_used: z.number(),
  net_rx_bytes: z.number(),
  net_tx_bytes: z.number(),
  uptime_seconds: z.number(),
});

const time = (ms: number) => (ms > 0 ? iso(ms) : null);

export function agentJson(a: Agent): z.infer<typeof AgentOut> {
  return {
    node_id: a.nodeId,
    name: a.name || null,
    status: AgentStatus.safeParse(a.status).data ?? "pending",
    tags: { ...a.tags },
    attributes: { ...a.attributes },
    connected: a.connected,
    first_seen: time(a.firstSeen),
    last_seen: time(a.lastSeen),
    address: a.address || null,
    version: a.version || null,
    outdated: a.outdated,
    public_key: a.publicKey,
    pending_reason: a.pendingReason || null,
  };
}

export function sampleJson(s: MetricsSample): z.infer<typeof SampleOut> {
  return {
    taken_at: iso(s.takenAt),
    cpu_percent: s.cpuPercent,
    load1: s.load1,
    load5: s.load5,
    load15: s.load15,
    memory_total: s.memoryTotal,
    memory_used: s.memoryUsed,
    disk_total: s.diskTotal,
    disk_used: s.diskUsed,
    net_rx_bytes: s.netRxBytes,
    net_tx_bytes: s.netTxBytes,
    uptime_seconds: s.uptimeSeconds,
  };
}

export const isNodeId = (ref: string) => !checkNodeId(ref);
